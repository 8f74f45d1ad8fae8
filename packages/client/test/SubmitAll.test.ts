/**
 * `submitAll`: many requests, one stream of replies, no fiber per request. Against the testkit's
 * coordinator and engines over real ZeroMQ sockets on loopback.
 */
import { describe, expect, it } from "@effect/vitest"
import { Generation, Vocabulary } from "@mcore-effect/testkit"
import { Cause, Effect, Exit, Fiber, Metric, Stream } from "effect"
import { ClientMetrics, InferenceClient } from "../src/index.ts"
import { setup, withRegistry } from "./support/Cluster.ts"

/** A different prompt for each index, so each reply shows which request it answers. */
const promptOf = (i: number): ReadonlyArray<number> => Vocabulary.tokenize(`request number ${i} of the batch`)

describe("InferenceClient.submitAll", () => {
  it.live("every request's own reply exactly once, with its index", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      const n = 300
      const requests = Array.from({ length: n }, (_, i) => ({ prompt: promptOf(i), samplingParams: { num_tokens_to_generate: 1 + (i % 4) } }))
      const replies = yield* Stream.runCollect(client.submitAll(requests))
      expect(replies).toHaveLength(n)
      expect(new Set(replies.map((r) => r.index)).size).toBe(n)
      expect(new Set(replies.map((r) => r.requestId)).size).toBe(n)
      for (const { index, reply } of replies) {
        expect(reply.generated_tokens).toEqual(Generation.tokens(promptOf(index), 1 + (index % 4)))
        expect(reply.latency).toBeGreaterThan(0)
      }
      expect(yield* client.pendingCount).toBe(0)
      expect((yield* Metric.value(ClientMetrics.completed)).count).toBe(n)
    }).pipe(withRegistry))

  it.live("never more than `concurrency` in flight; the next goes out as a reply frees a place", () =>
    Effect.gen(function*() {
      const { client } = yield* setup({ engine: { stepMs: 1 } })
      const requests = Array.from({ length: 40 }, (_, i) => ({ prompt: promptOf(i), samplingParams: { num_tokens_to_generate: 3 } }))
      let most = 0
      const replies = yield* client.submitAll(requests, { concurrency: 3 }).pipe(
        Stream.tap(() => Effect.map(client.pendingCount, (n) => (most = Math.max(most, n)))),
        Stream.runCount
      )
      expect(replies).toBe(40)
      expect(most).toBeGreaterThan(0)
      expect(most).toBeLessThanOrEqual(3)
    }).pipe(withRegistry))

  it.live("a lazy input is read only as places free up", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      let pulled = 0
      function* requests() {
        for (let i = 0; i < 20; i++) {
          pulled++
          yield { prompt: promptOf(i), samplingParams: { num_tokens_to_generate: 1 } }
        }
      }
      const first = yield* client.submitAll(requests(), { concurrency: 2 }).pipe(Stream.take(1), Stream.runCollect)
      expect(first).toHaveLength(1)
      expect(pulled).toBeLessThanOrEqual(4)
    }).pipe(withRegistry))

  it.live("an invalid request fails the stream; what was in flight is aborted, nothing after it is sent", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup({ engines: 1, engine: { stepMs: 20 } })
      const requests = [
        { prompt: promptOf(0), samplingParams: { num_tokens_to_generate: 1000 } },
        { prompt: promptOf(1), samplingParams: { num_tokens_to_generate: 1000 } },
        { prompt: [1, -2, 3] },
        { prompt: promptOf(3), samplingParams: { num_tokens_to_generate: 1 } }
      ]
      const error = yield* Effect.flip(Stream.runDrain(client.submitAll(requests)))
      expect(error.reason._tag).toBe("InvalidRequest")
      expect(yield* client.pendingCount).toBe(0)
      const engine = yield* cluster.engines[0]!.waitFor("the aborts", (s) => s.aborted.length === 2)
      expect(engine.received.filter((m) => m.name === "SUBMIT_REQUEST")).toHaveLength(2)
    }).pipe(withRegistry))

  it.live("ending consumption early aborts the requests still in flight", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup({ engines: 1, engine: { stepMs: 5 } })
      const requests = Array.from({ length: 6 }, (_, i) => ({
        prompt: promptOf(i),
        samplingParams: { num_tokens_to_generate: i === 0 ? 1 : 2000 }
      }))
      const first = yield* client.submitAll(requests).pipe(Stream.take(1), Stream.runCollect)
      expect(first.map((r) => r.index)).toEqual([0])
      expect(yield* client.pendingCount).toBe(0)
      yield* cluster.engines[0]!.waitFor("the aborts", (s) => s.aborted.length === 5)
      expect((yield* Metric.value(ClientMetrics.aborted)).count).toBe(5)
    }).pipe(withRegistry))

  it.live("an empty input is an empty stream; a concurrency under 1 is refused before anything is sent", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      expect(yield* Stream.runCount(client.submitAll([]))).toBe(0)
      const error = yield* Effect.flip(Stream.runDrain(client.submitAll([{ prompt: promptOf(0) }], { concurrency: 0 })))
      expect(error.reason._tag).toBe("InvalidArgument")
      expect((yield* Metric.value(ClientMetrics.submitted)).count).toBe(0)
    }).pipe(withRegistry))
})

describe("InferenceClient.submitAllSettled", () => {
  it.live("every request's Exit, in completion order: a refused request and a deadline fail alone, the rest go on", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup({ engines: 1, engine: { stepMs: 2 } })
      const requests = [
        { prompt: promptOf(0), samplingParams: { num_tokens_to_generate: 2 } },
        { prompt: [1, -2, 3] },
        { prompt: promptOf(2), samplingParams: { num_tokens_to_generate: 100_000 }, timeout: 50 },
        ...Array.from({ length: 20 }, (_, i) => ({ prompt: promptOf(3 + i), samplingParams: { num_tokens_to_generate: 1 } }))
      ]
      const settled = yield* Stream.runCollect(client.submitAllSettled(requests, { concurrency: 4 }))
      expect(settled).toHaveLength(requests.length)
      expect(new Set(settled.map((s) => s.index)).size).toBe(requests.length)
      const byIndex = new Map(settled.map((s) => [s.index, s]))
      const refused = byIndex.get(1)!
      expect(refused.requestId).toBeUndefined()
      expect(Exit.isFailure(refused.exit) && Cause.squash(refused.exit.cause)).toMatchObject({ reason: { _tag: "InvalidRequest" } })
      const late = byIndex.get(2)!
      expect(Exit.isFailure(late.exit) && Cause.squash(late.exit.cause)).toMatchObject({ reason: { _tag: "RequestTimeout" } })
      for (const s of settled) {
        if (s.index === 1 || s.index === 2) continue
        expect(Exit.isSuccess(s.exit) && s.exit.value.generated_tokens).toEqual(
          Generation.tokens(promptOf(s.index), s.index === 0 ? 2 : 1)
        )
      }
      expect(yield* client.pendingCount).toBe(0)
      yield* cluster.engines[0]!.waitFor("the deadline's abort", (e) => e.aborted.length === 1)
    }).pipe(withRegistry))

  it.live("the coordinator lost: what is in flight and what follows each settle with CoordinatorLost", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup({ engines: 1, engine: { stepMs: 5 }, client: { heartbeatInterval: 50, heartbeatTimeout: 300 } })
      const requests = Array.from({ length: 10 }, (_, i) => ({ prompt: promptOf(i), samplingParams: { num_tokens_to_generate: 100_000 } }))
      const settled = yield* client.submitAllSettled(requests, { concurrency: 3 }).pipe(
        Stream.runCollect,
        Effect.forkChild
      )
      yield* cluster.engines[0]!.waitFor("the first requests", (e) => e.active.length === 3)
      yield* cluster.coordinator.crash
      const all = yield* Fiber.join(settled)
      expect(all).toHaveLength(10)
      for (const s of all) {
        expect(Exit.isFailure(s.exit) && Cause.squash(s.exit.cause)).toMatchObject({ reason: { _tag: "CoordinatorLost" } })
      }
    }).pipe(withRegistry), { timeout: 20_000 })
})
