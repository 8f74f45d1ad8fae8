/**
 * What routing is tested against: engines with a bounded LRU prefix cache and a prefill time per
 * uncached block, coordinators with Megatron's start-up registration, and several clusters
 * stalled, killed and restarted on command (`TestFleet`). A raw client speaks by hand, on an
 * in-memory network.
 */
import { describe, expect, it } from "@effect/vitest"
import { Headers, MemorySocket, Msgpack } from "@mcore-effect/protocol"
import { Effect } from "effect"
import { TestCluster, TestFleet } from "../src/index.ts"
import * as RawClient from "./support/RawClient.ts"

/** `blocks` blocks of 4 tokens, each block's tokens `base + block`. */
const prompt = (base: number, blocks: number): Array<number> =>
  Array.from({ length: blocks * 4 }, (_, i) => base + Math.floor(i / 4))

describe("the prefix-cache model", () => {
  it.effect("hits are a prompt's leading cached blocks, the least recently used blocks go first, misses are counted", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const cluster = yield* TestCluster.make({ engines: 1, network, engine: { blockSizeTokens: 4, prefixCacheBlocks: 6 } })
      const engine = cluster.engines[0]!
      const client = yield* RawClient.make(cluster.address, network)
      yield* client.connect
      const send = (id: number, tokens: ReadonlyArray<number>) =>
        Effect.andThen(client.submit(id, tokens, { params: { num_tokens_to_generate: 1 } }), client.untilReplies(1))
      yield* send(0, prompt(100, 4)) // 4 misses; cache: A0..A3
      yield* send(1, prompt(100, 4)) // 4 hits
      yield* send(2, prompt(200, 3)) // 3 misses; A0 evicted (7 > 6): cache A1 A2 A3 B0 B1 B2
      yield* send(3, prompt(100, 2)) // A0 gone: 0 hits, 2 misses (A0 back, A1 fresh); A2 evicted
      const snapshot = yield* engine.snapshot
      expect(snapshot.prefixCache).toEqual({ blocks: 6, hits: 4, misses: 9 })
    }).pipe(Effect.scoped))

  it.effect("a request waits for its uncached blocks' prefill: with the prefix cached, the same prompt finishes first", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const cluster = yield* TestCluster.make({
        engines: 1,
        network,
        engine: { blockSizeTokens: 4, prefillMsPerBlock: 20, stepMs: 1 }
      })
      const client = yield* RawClient.make(cluster.address, network)
      yield* client.connect
      yield* client.submit(0, prompt(1, 3), { params: { num_tokens_to_generate: 1 } })
      yield* client.untilReplies(1)
      // 10 uncached blocks (200 ms of prefill) submitted before 3 cached ones (none): the cached one ends first.
      yield* client.submit(1, prompt(500, 10), { params: { num_tokens_to_generate: 1 } })
      yield* client.submit(2, prompt(1, 3), { params: { num_tokens_to_generate: 1 } })
      const replies = yield* client.untilReplies(2)
      expect(replies.map((r) => r.requestId)).toEqual([2, 1])
    }).pipe(Effect.scoped))
})

describe("Megatron's start-up registration", () => {
  it.effect("the first messages after a start register their senders as engines, whatever they hold; a restart numbers from 0", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const cluster = yield* TestCluster.make({ engines: 1, network, coordinator: { startupRegistrations: 2 } })
      const early = yield* RawClient.make(cluster.address, network)
      // The CONNECT is the second message the coordinator reads: an engine's registration.
      yield* early.send([Msgpack.encode([Headers.values.CONNECT])])
      const snapshot = yield* cluster.coordinator.waitFor("two engines", (s) => s.engines.length === 2)
      expect(snapshot.rejected).toEqual([])
      const late = yield* RawClient.make(cluster.address, network)
      yield* late.connect
      yield* late.submit(0, [1, 2, 3], { params: { num_tokens_to_generate: 1 } })
      expect((yield* cluster.coordinator.snapshot).nextRequestId).toBeGreaterThan(0)
      yield* cluster.coordinator.restart
      expect((yield* cluster.coordinator.snapshot).nextRequestId).toBe(0)
    }).pipe(Effect.scoped))
})

describe("TestFleet", () => {
  it.effect("several coordinators, each stalled, killed and restarted on command", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const fleet = yield* TestFleet.make({ coordinators: 3, engines: 1, network })
      expect(new Set(fleet.addresses).size).toBe(3)
      yield* fleet.stall(0)
      expect((yield* fleet.clusters[0]!.coordinator.snapshot).faults.map((f) => f._tag)).toEqual(["Hang"])
      yield* fleet.unstall(0)
      expect((yield* fleet.clusters[0]!.coordinator.snapshot).faults).toEqual([])
      yield* fleet.kill(2)
      expect((yield* fleet.clusters[2]!.coordinator.snapshot).running).toBe(false)
      yield* fleet.restart(2)
      const back = yield* fleet.clusters[2]!.coordinator.snapshot
      expect(back).toMatchObject({ running: true, restarts: 1 })
      expect(back.engines).toHaveLength(1)
    }).pipe(Effect.scoped))
})
