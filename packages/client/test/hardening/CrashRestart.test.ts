/**
 * The coordinator crashes in the middle of a burst and comes back on the same address: every
 * request in flight ends exactly once (completed, or failed with `CoordinatorLost`), none hangs;
 * then the client reconnects, says CONNECT again, and new requests complete.
 */
import { describe, expect, it } from "@effect/vitest"
import { Generation, TestCluster } from "@mcore-effect/testkit"
import { Deferred, Effect, Exit, Fiber, Schedule, Stream } from "effect"
import { InferenceClient } from "../../src/index.ts"
import * as Harness from "./support/Harness.ts"

const BURST = 2_000
const CRASH_AFTER = 200

describe("coordinator crash and restart", () => {
  it.live(`a crash after ${CRASH_AFTER} of ${BURST.toLocaleString("en")} requests: each ends once, completed or CoordinatorLost; after the restart new requests complete`, () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 1 } })
      const client = yield* InferenceClient.make({
        address: cluster.address,
        protocol: cluster.protocol,
        heartbeatInterval: 50,
        heartbeatTimeout: 500
      })
      const prompt = (i: number) => [i + 1, 7]
      const length = (i: number) => 5 + (i % 20)
      const ends = new Uint8Array(BURST)
      const outcomes = { completed: 0, lost: 0, other: [] as Array<string> }
      const enough = yield* Deferred.make<void>()
      const task = (i: number) =>
        (i % 2 === 0
          ? Effect.map(client.submit(prompt(i), { num_tokens_to_generate: length(i) }), (r) => r.generated_tokens)
          : Effect.map(Stream.runCollect(client.stream(prompt(i), { num_tokens_to_generate: length(i) })), (events) => {
            const last = events[events.length - 1]!
            return last._tag === "Final" ? last.reply.generated_tokens : undefined
          })).pipe(
            Effect.onExit((exit) =>
              Effect.sync(() => {
                ends[i]!++
                if (Exit.isSuccess(exit)) {
                  if (JSON.stringify(exit.value) === JSON.stringify(Generation.tokens(prompt(i), length(i)))) outcomes.completed++
                  else outcomes.other.push(`${i}: wrong tokens`)
                  if (outcomes.completed === CRASH_AFTER) Deferred.doneUnsafe(enough, Exit.void)
                } else {
                  const error = exit.cause.reasons.find((r) => r._tag === "Fail")
                  if (error?._tag === "Fail" && error.error.reason._tag === "CoordinatorLost") outcomes.lost++
                  else outcomes.other.push(`${i}: ${String(exit.cause)}`)
                }
              })
            ),
            Effect.ignore
          )
      const burst = yield* Effect.forkChild(
        Effect.forEach(Array.from({ length: BURST }, (_, i) => i), task, { concurrency: "unbounded", discard: true })
      )
      yield* Deferred.await(enough)
      yield* cluster.coordinator.crash
      // None hangs: the heartbeat timeout bounds the wait.
      yield* Fiber.join(burst).pipe(Harness.bounded("the burst after the crash", "20 seconds"))

      expect(outcomes.other.slice(0, 5)).toEqual([])
      expect(ends.every((n) => n === 1)).toBe(true)
      expect(outcomes.completed + outcomes.lost).toBe(BURST)
      expect(outcomes.completed).toBeGreaterThanOrEqual(CRASH_AFTER)
      expect(outcomes.lost).toBeGreaterThan(0)
      expect(yield* client.pendingCount).toBe(0)
      const atCrash = yield* Harness.counters
      // Each submitted request was counted once: completed, or failed.
      expect(atCrash.completed + atCrash.failed + atCrash.aborted).toBe(atCrash.submitted)
      expect(atCrash.inFlight).toBe(0)

      // Same address, fresh state: engines register again, the client says CONNECT again.
      yield* cluster.coordinator.restart
      yield* cluster.coordinator.awaitEngines(2)
      const back = yield* cluster.coordinator.waitFor("the client's new CONNECT", (s) => s.clients === 1)
      expect(back.restarts).toBe(1)
      const first = yield* client.submit(prompt(0), { num_tokens_to_generate: 3 }).pipe(
        Effect.retry({ while: (e) => e.reason._tag === "CoordinatorLost", schedule: Schedule.spaced("20 millis"), times: 250 })
      )
      expect(first.generated_tokens).toEqual(Generation.tokens(prompt(0), 3))
      const after = yield* Effect.forEach(
        Array.from({ length: 100 }, (_, i) => i),
        (i) => client.submit(prompt(i), { num_tokens_to_generate: length(i) }),
        { concurrency: "unbounded" }
      )
      expect(after.map((r) => r.generated_tokens)).toEqual(
        Array.from({ length: 100 }, (_, i) => Generation.tokens(prompt(i), length(i)))
      )
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(Harness.isolated), { timeout: 45_000 })
})
