/**
 * Limits on what the client reads: a reply whose frame is longer than `maxFrameBytes`, or whose
 * decoded form would take more than `maxDecodedBytes`, fails its own request with
 * `ReplyTooLarge` (the body is measured, never decoded); the other requests go on. A frame far
 * beyond the limit is refused by ZeroMQ itself, so nothing the coordinator sends makes the client
 * allocate without bound.
 */
import { describe, expect, it } from "@effect/vitest"
import { Headers, Msgpack } from "@mcore-effect/protocol"
import { Faults, Generation, TestCluster } from "@mcore-effect/testkit"
import { Effect, Schedule } from "effect"
import { InferenceClient } from "../../src/index.ts"
import * as Harness from "./support/Harness.ts"

const H = Headers.values
const small = (i: number) => [i + 1, 2]
/** A prompt whose reply (the engine echoes `prompt_tokens`) is about `tokens` bytes, decoding to ~16 times that. */
const big = (tokens: number) => Array.from({ length: tokens }, (_, i) => 1 + (i % 100))

describe("limits on replies", () => {
  it.live("a reply frame over maxFrameBytes fails only its own request, with ReplyTooLarge", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 2 })
      const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol, maxFrameBytes: 32 * 1024 })
      const results = yield* Effect.forEach(
        [small(0), big(40_000), small(1), big(40_000), small(2)],
        (prompt) => Effect.result(client.submit(prompt, { num_tokens_to_generate: 2, return_prompt_tokens: true })),
        { concurrency: "unbounded" }
      )
      expect(results.map((r) => r._tag)).toEqual(["Success", "Failure", "Success", "Failure", "Success"])
      for (const r of results) {
        if (r._tag === "Failure") expect(r.failure.reason).toMatchObject({ _tag: "ReplyTooLarge", measure: "frame", limit: 32 * 1024 })
      }
      expect(yield* client.pendingCount).toBe(0)
      expect((yield* Harness.counters).failed).toBe(2)
    }).pipe(Harness.isolated))

  it.live("a reply that would decode to more than maxDecodedBytes fails only its own request", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol, maxDecodedBytes: 64 * 1024 })
      const results = yield* Effect.forEach(
        [small(0), big(8_000), small(1)],
        (prompt) => Effect.result(client.submit(prompt, { num_tokens_to_generate: 2, return_prompt_tokens: true })),
        { concurrency: "unbounded" }
      )
      expect(results.map((r) => r._tag)).toEqual(["Success", "Failure", "Success"])
      const failure = results[1]!
      if (failure._tag === "Failure") {
        expect(failure.failure.reason).toMatchObject({ _tag: "ReplyTooLarge", measure: "decoded", limit: 64 * 1024 })
      }
      const ok = results[0]!
      if (ok._tag === "Success") expect(ok.success.generated_tokens).toEqual(Generation.tokens(small(0), 2))
    }).pipe(Harness.isolated))

  it.live("an oversized partial or reply from the coordinator's own hand: counted, the right request fails, nothing decoded", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol, maxFrameBytes: 64 * 1024 })
      // Ahead of the first real reply: a 100 kB reply for request 0 (pending; over the limit, under
      // the transport's hard cap of twice it), and a map declaring billions of entries for an id
      // never issued.
      const huge = new Uint8Array(100_000).fill(0xc0)
      yield* cluster.coordinator.injectFault(Faults.sendMessages([
        [Msgpack.encode([H.ENGINE_REPLY, 0]), huge],
        [Msgpack.encode([H.ENGINE_REPLY, 9_999_999]), Uint8Array.of(0xdf, 0xff, 0xff, 0xff, 0xff)]
      ], 2))
      const first = yield* client.submitWithId(small(0), { num_tokens_to_generate: 4 })
      const second = yield* client.submit(small(1), { num_tokens_to_generate: 4 })
      expect(second.generated_tokens).toEqual(Generation.tokens(small(1), 4))
      const error = yield* Effect.flip(first.reply)
      expect(error.reason).toMatchObject({ _tag: "ReplyTooLarge", requestId: 0, measure: "frame", size: 100_000 })
      const counters = yield* Harness.counters
      // The never-issued id and request 0's real reply, arriving after its failure.
      expect(counters.unknownRequest).toBe(2)
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(Harness.isolated))

  it.live("a frame far over the limit is refused by ZeroMQ: the connection drops, requests fail with CoordinatorLost, the client comes back", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const client = yield* InferenceClient.make({
        address: cluster.address,
        protocol: cluster.protocol,
        maxFrameBytes: 16 * 1024,
        heartbeatInterval: 50,
        heartbeatTimeout: 500
      })
      yield* cluster.coordinator.injectFault(Faults.sendMessages([[Msgpack.encode([H.ENGINE_REPLY, 5]), new Uint8Array(8 << 20)]], 1))
      const error = yield* Effect.flip(client.submit(small(0), { num_tokens_to_generate: 2 }))
        .pipe(Harness.bounded("the dropped connection", "10 seconds"))
      expect(error.reason._tag).toBe("CoordinatorLost")
      const reply = yield* client.submit(small(1), { num_tokens_to_generate: 2 }).pipe(
        Effect.retry({ while: (e) => e.reason._tag === "CoordinatorLost", times: 200, schedule: Schedule.spaced("20 millis") })
      )
      expect(reply.generated_tokens).toEqual(Generation.tokens(small(1), 2))
    }).pipe(Harness.isolated))
})
