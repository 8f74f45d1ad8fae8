/**
 * Engines that stop answering (the test engine's `Hang` fault): every request fails with
 * `RequestTimeout` at its deadline, its ABORT goes through the coordinator to the engine holding
 * it (and only that one), the client's registry is empty, and once the engines answer again the
 * aborts reach them, their late replies are dropped, and new requests complete.
 */
import { describe, expect, it } from "@effect/vitest"
import { Faults, Generation, TestCluster, type TestCoordinator } from "@mcore-effect/testkit"
import { Effect, Stream } from "effect"
import { InferenceClient } from "../../src/index.ts"
import * as Harness from "./support/Harness.ts"

const COUNT = 200

const byName = (snapshot: TestCoordinator.Snapshot, identity: string, name: string) =>
  snapshot.engines.find((e) => e.identity === identity)!.received.filter((d) => d.name === name)

const sorted = (ids: ReadonlyArray<number | undefined>) => [...ids].sort((a, b) => a! - b!)

describe("engine stalls", () => {
  it.live("deadlines fire, aborts reach the engines holding the requests, the registry drains", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 1 } })
      const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol, requestTimeout: "300 millis" })
      yield* Effect.forEach(cluster.engines, (engine) => engine.injectFault(Faults.hang))

      const prompt = (i: number) => [i + 1, 3]
      const params = { num_tokens_to_generate: 30 }
      const errors = yield* Effect.forEach(
        Array.from({ length: COUNT }, (_, i) => i),
        (i) =>
          Effect.flip(i % 2 === 0 ? client.submit(prompt(i), params) : Stream.runDrain(client.stream(prompt(i), params))),
        { concurrency: "unbounded" }
      ).pipe(Harness.bounded("the requests", "20 seconds"))
      expect(errors.map((e) => e.reason._tag)).toEqual(new Array(COUNT).fill("RequestTimeout"))
      // Nothing waits for the stalled engines any more.
      expect(yield* client.pendingCount).toBe(0)

      // Each request was aborted on the engine that holds it, once.
      const snapshot = yield* cluster.coordinator.waitFor("every abort forwarded", (s) =>
        cluster.engines.every((e) =>
          byName(s, e.identity, "ABORT_REQUEST").length === byName(s, e.identity, "SUBMIT_REQUEST").length
        ))
      let submitted = 0
      for (const engine of cluster.engines) {
        const submits = byName(snapshot, engine.identity, "SUBMIT_REQUEST")
        const aborts = byName(snapshot, engine.identity, "ABORT_REQUEST")
        submitted += submits.length
        expect(sorted(aborts.map((d) => d.clientRequestId))).toEqual(sorted(submits.map((d) => d.clientRequestId)))
        expect(sorted(aborts.map((d) => d.requestId))).toEqual(sorted(submits.map((d) => d.requestId)))
      }
      expect(submitted).toBe(COUNT)

      // Once they answer again the engines read the aborts.
      yield* Effect.forEach(cluster.engines, (engine) => engine.clearFaults())
      for (const engine of cluster.engines) {
        const submits = byName(snapshot, engine.identity, "SUBMIT_REQUEST")
        const seen = yield* engine.waitFor("the aborts", (s) =>
          s.received.filter((r) => r.name === "ABORT_REQUEST").length === submits.length)
        expect(sorted(seen.received.filter((r) => r.name === "ABORT_REQUEST").map((r) => r.requestId)))
          .toEqual(sorted(submits.map((d) => d.requestId)))
      }
      // Their late replies (an aborted request finishes with what it has) are dropped.
      yield* cluster.coordinator.waitFor("the engines' backlog", (s) => s.inFlight === 0)
      const fresh = yield* client.submit(prompt(0), { num_tokens_to_generate: 2 })
      expect(fresh.generated_tokens).toEqual(Generation.tokens(prompt(0), 2))
      const counters = yield* Harness.counters
      expect(counters.failed).toBe(COUNT)
      // A reply for each, and for the streamed ones maybe a last partial too.
      expect(counters.unknownRequest).toBeGreaterThanOrEqual(COUNT)
      expect(counters.completed).toBe(1)
      expect(counters.inFlight).toBe(0)
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(Harness.isolated), { timeout: 30_000 })
})
