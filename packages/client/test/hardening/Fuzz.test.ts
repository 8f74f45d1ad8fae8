/**
 * Hostile input from the coordinator: random messages of every kind (see `support/Hostile.ts`),
 * put on the wire by the test coordinator's `SendMessages` fault between the replies of real
 * requests in flight. Every real request either completes exactly once with its own reply (its
 * content checked), or fails with `MalformedReply` because a reply naming its exact id had a
 * malformed body; the listener survives, and every hostile message is counted as dropped.
 */
import { describe, expect, it } from "@effect/vitest"
import { Faults, Generation, TestCluster } from "@mcore-effect/testkit"
import { Effect, Stream } from "effect"
import { type ClientError, InferenceClient } from "../../src/index.ts"
import * as Harness from "./support/Harness.ts"
import * as Hostile from "./support/Hostile.ts"

const REAL = 1_000
/** ~8 s on a quiet 2-core machine; `MCORE_FUZZ_MESSAGES` changes the count. */
const HOSTILE = Number(process.env.MCORE_FUZZ_MESSAGES ?? 100_000)

describe("fuzz: hostile messages from the coordinator", () => {
  it.live(`${HOSTILE.toLocaleString("en")} hostile messages among ${REAL.toLocaleString("en")} real requests: each real one completes once with its own reply or fails for its own malformed reply, each hostile one is counted`, () =>
    Effect.gen(function*() {
      // Printed with every failed expectation; `MCORE_FUZZ_SEED` replays a run.
      const seed = Harness.seedFrom("MCORE_FUZZ_SEED")
      const hostile = Hostile.sample(HOSTILE, REAL, seed)
      // The real ids named by a reply with a malformed body: the only requests that may fail.
      const malformedFor = Hostile.malformedReplyIds(hostile, REAL)
      expect(malformedFor.size, `seed ${seed}`).toBeGreaterThan(0)
      const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 1 } })
      const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol })
      // Spread over the first thousand replies and partials, while the requests are in flight.
      yield* cluster.coordinator.injectFault(Faults.sendMessages(hostile, Math.ceil(HOSTILE / REAL)))

      const prompt = (i: number) => [1 + (i % 97), 2 + (i % 89), 3 + i]
      const length = (i: number) => 4 + (i % 8)
      const completions = new Uint16Array(REAL)
      const wrong: Array<number> = []
      /** Requests that failed, with the error's reason. */
      const failures: Array<{ readonly i: number; readonly reason: ClientError.ClientError["reason"] }> = []
      const check = (i: number, reply: Record<string, unknown>) => {
        completions[i]!++
        // Its own reply: the engine's tokens for its prompt, in a reply the engine made.
        const expected = Generation.tokens(prompt(i), length(i))
        if (JSON.stringify(reply.generated_tokens) !== JSON.stringify(expected)) wrong.push(i)
        if (reply.status !== "COMPLETED" || JSON.stringify(reply.prompt_tokens) !== JSON.stringify(["tensor", prompt(i)])) wrong.push(i)
      }
      yield* Effect.forEach(
        Array.from({ length: REAL }, (_, i) => i),
        (i) =>
          (i % 2 === 0
            ? Effect.map(client.submit(prompt(i), { num_tokens_to_generate: length(i), return_prompt_tokens: true }), (r) => check(i, r))
            : Effect.map(
              Stream.runCollect(client.stream(prompt(i), { num_tokens_to_generate: length(i), return_prompt_tokens: true })),
              (events) => {
                const finals = events.filter((e) => e._tag === "Final")
                if (finals.length !== 1 || events[events.length - 1]!._tag !== "Final") wrong.push(i)
                for (const e of finals) if (e._tag === "Final") check(i, e.reply)
              }
            )).pipe(Effect.catch((error) => Effect.sync(() => failures.push({ i, reason: error.reason })))),
        { concurrency: "unbounded", discard: true }
      ).pipe(Harness.bounded("the real requests", "40 seconds"))

      const snapshot = yield* cluster.coordinator.snapshot
      expect(snapshot.faultsApplied.SendMessages, `seed ${seed}`).toBe(HOSTILE)
      // A failure is a MalformedReply for the request's own id, named by a malformed reply.
      for (const { i, reason } of failures) {
        expect(completions[i], `seed ${seed}: request ${i} failed after completing`).toBe(0)
        expect(reason._tag, `seed ${seed}: request ${i}`).toBe("MalformedReply")
        if (reason._tag === "MalformedReply") expect(malformedFor.has(reason.requestId), `seed ${seed}: id ${reason.requestId}`).toBe(true)
      }
      expect(new Set(failures.map((f) => f.i)).size, `seed ${seed}`).toBe(failures.length)
      const failed = new Set(failures.map((f) => f.i))
      expect(completions.every((n, i) => n === (failed.has(i) ? 0 : 1)), `seed ${seed}`).toBe(true)
      expect(wrong, `seed ${seed}`).toEqual([])
      const counters = yield* Harness.counters
      // Every hostile message went out ahead of some real reply, on the same connection, so all
      // of them have been read by now; a failed request's own reply (and a failed stream's
      // partials), as they arrive, are counted as messages for an id no longer pending.
      const late = failures.reduce((n, { i }) => n + 1 + (i % 2 === 1 ? length(i) : 0), 0)
      expect(counters.malformed + counters.unknownRequest, `seed ${seed}`).toBeGreaterThanOrEqual(HOSTILE)
      expect(counters.malformed + counters.unknownRequest, `seed ${seed}`).toBeLessThanOrEqual(HOSTILE + late)
      expect(counters.completed).toBe(REAL - failures.length)
      expect(counters.failed).toBe(failures.length)
      expect(counters.aborted).toBe(0)
      expect(yield* client.pendingCount).toBe(0)
      // The listener is alive.
      const after = yield* client.submit(prompt(0), { num_tokens_to_generate: 2 })
      expect(after.generated_tokens).toEqual(Generation.tokens(prompt(0), 2))
    }).pipe(Harness.isolated), { timeout: 60_000 })
})
