/**
 * Hostile input from the coordinator: random messages of every kind (see `support/Hostile.ts`),
 * put on the wire by the test coordinator's `SendMessages` fault between the replies of real
 * requests in flight. Every real request completes exactly once with its own reply, the listener
 * survives, and every hostile message is counted as dropped.
 */
import { describe, expect, it } from "@effect/vitest"
import { Faults, Generation, TestCluster } from "@mcore-effect/testkit"
import { Effect, Stream } from "effect"
import { InferenceClient } from "../../src/index.ts"
import * as Harness from "./support/Harness.ts"
import * as Hostile from "./support/Hostile.ts"

const REAL = 1_000
/** ~8 s on a quiet 2-core machine; `MCORE_FUZZ_MESSAGES` changes the count. */
const HOSTILE = Number(process.env.MCORE_FUZZ_MESSAGES ?? 100_000)

describe("fuzz: hostile messages from the coordinator", () => {
  it.live(`${HOSTILE.toLocaleString("en")} hostile messages among ${REAL.toLocaleString("en")} real requests: each real one completes once, each hostile one is counted`, () =>
    Effect.gen(function*() {
      // Printed with every failed expectation; `MCORE_FUZZ_SEED` replays a run.
      const seed = Harness.seedFrom("MCORE_FUZZ_SEED")
      const hostile = Hostile.sample(HOSTILE, REAL, seed)
      const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 1 } })
      const client = yield* InferenceClient.make({ address: cluster.address })
      // Spread over the first thousand replies and partials, while the requests are in flight.
      yield* cluster.coordinator.injectFault(Faults.sendMessages(hostile, Math.ceil(HOSTILE / REAL)))

      const prompt = (i: number) => [1 + (i % 97), 2 + (i % 89), 3 + i]
      const length = (i: number) => 4 + (i % 8)
      const completions = new Uint16Array(REAL)
      const wrong: Array<number> = []
      const check = (i: number, tokens: unknown) => {
        completions[i]!++
        const expected = Generation.tokens(prompt(i), length(i))
        if (JSON.stringify(tokens) !== JSON.stringify(expected)) wrong.push(i)
      }
      yield* Effect.forEach(
        Array.from({ length: REAL }, (_, i) => i),
        (i) =>
          i % 2 === 0
            ? Effect.map(client.submit(prompt(i), { num_tokens_to_generate: length(i) }), (r) => check(i, r.generated_tokens))
            : Effect.map(Stream.runCollect(client.stream(prompt(i), { num_tokens_to_generate: length(i) })), (events) => {
              const finals = events.filter((e) => e._tag === "Final")
              if (finals.length !== 1 || events[events.length - 1]!._tag !== "Final") wrong.push(i)
              for (const e of finals) if (e._tag === "Final") check(i, e.reply.generated_tokens)
            }),
        { concurrency: "unbounded", discard: true }
      ).pipe(Harness.bounded("the real requests", "40 seconds"))

      const snapshot = yield* cluster.coordinator.snapshot
      expect(snapshot.faultsApplied.SendMessages, `seed ${seed}`).toBe(HOSTILE)
      expect(completions.every((n) => n === 1), `seed ${seed}`).toBe(true)
      expect(wrong, `seed ${seed}`).toEqual([])
      const counters = yield* Harness.counters
      // Every hostile message went out ahead of some real reply, on the same connection, so all
      // of them have been read by now.
      expect(counters.malformed + counters.unknownRequest, `seed ${seed}`).toBe(HOSTILE)
      expect(counters.completed).toBe(REAL)
      expect(counters.failed + counters.aborted).toBe(0)
      expect(yield* client.pendingCount).toBe(0)
      // The listener is alive.
      const after = yield* client.submit(prompt(0), { num_tokens_to_generate: 2 })
      expect(after.generated_tokens).toEqual(Generation.tokens(prompt(0), 2))
    }).pipe(Harness.isolated), { timeout: 60_000 })
})
