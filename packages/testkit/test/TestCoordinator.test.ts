import { describe, expect, it } from "@effect/vitest"
import { BlockHashes, Headers, Msgpack } from "@mcore-effect/protocol"
import { Effect } from "effect"
import { CoordinatorTokenizer, TestCluster, TestCoordinator, TestEngine, TestSupport } from "../src/index.ts"
import * as RawClient from "./support/RawClient.ts"
import * as RawEngine from "./support/RawEngine.ts"

const H = Headers.values
const NIL = Uint8Array.of(0xc0)

/** Where each client request id was routed, by engine identity. */
const routes = (snapshot: TestCoordinator.Snapshot) =>
  Object.fromEntries(
    snapshot.engines.map((e) => [
      e.identity,
      e.received.filter((d) => d.name === "SUBMIT_REQUEST").map((d) => d.clientRequestId)
    ])
  )

describe("TestCoordinator: connections", () => {
  it.effect("counts clients connected now: one that goes away leaves the count", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const stays = yield* RawClient.make(cluster.address)
      yield* stays.connect
      yield* Effect.gen(function*() {
        const leaves = yield* RawClient.make(cluster.address)
        yield* leaves.connect
        yield* cluster.coordinator.waitFor("two clients", (s) => s.clients === 2)
      }).pipe(Effect.scoped)
      yield* cluster.coordinator.waitFor("one client left", (s) => s.clients === 1)
    }).pipe(Effect.scoped))

  it.effect("logs a request's start and completion, and an abort, at debug", () =>
    TestSupport.withLogs((lines) =>
      Effect.gen(function*() {
        const cluster = yield* TestCluster.make({ engines: 1, engine: { stepMs: 5 } })
        const client = yield* RawClient.make(cluster.address)
        yield* client.connect
        yield* client.submit(0, "the cat", { params: { num_tokens_to_generate: 1 } })
        yield* client.nextReply()
        yield* client.submit(1, "the dog", { params: { num_tokens_to_generate: 100_000 } })
        yield* cluster.engines[0]!.waitFor("the second request", (s) => s.active.length === 1)
        yield* client.signal(H.ABORT_REQUEST, 1)
        yield* cluster.engines[0]!.waitFor("the abort", (s) => s.aborted.length === 1)
        const debug = lines.filter((line) => line.startsWith("Debug coordinator: request"))
        expect(debug.some((line) => /request 0 \(client .*'s 0\) started on engine mp-coord-0/.test(line))).toBe(true)
        expect(debug.some((line) => /request 0 \(client .*'s 0\) completed on engine mp-coord-0/.test(line))).toBe(true)
        expect(debug.some((line) => /request 1 \(client .*'s 1\) aborted/.test(line))).toBe(true)
      }).pipe(Effect.scoped)
    ))

  it.effect("replies to a client that went away: one warning per peer, with the count", () =>
    TestSupport.withLogs((lines) =>
      Effect.gen(function*() {
        const cluster = yield* TestCluster.make({ engines: 1, engine: { stepMs: 30 } })
        yield* Effect.gen(function*() {
          const client = yield* RawClient.make(cluster.address)
          yield* client.connect
          for (let i = 0; i < 20; i++) yield* client.submit(i, "the cat", { params: { num_tokens_to_generate: 2 } })
          yield* cluster.engines[0]!.waitFor("the requests", (s) => s.active.length === 20)
        }).pipe(Effect.scoped)
        const snapshot = yield* cluster.coordinator.waitFor("the undeliverable replies", (s) => s.counters.unreachable === 20, {
          timeoutMillis: 10_000
        })
        expect(snapshot.inFlight).toBe(0)
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1_200)))
        const warnings = lines.filter((line) => line.includes("could not deliver"))
        expect(warnings).toHaveLength(1)
        expect(warnings[0]).toContain("could not deliver 20 message(s) to ")
      }).pipe(Effect.scoped), "Warn"
    ))

  it.effect("answers CONNECT with CONNECT_ACK and ignores (counts) a second CONNECT", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const client = yield* RawClient.make(cluster.address)
      yield* client.connect
      yield* client.send([Msgpack.encode([H.CONNECT])])
      yield* client.submit(0, "the cat", { params: { num_tokens_to_generate: 1 } })
      // Had the second CONNECT been answered, its ACK would arrive before the reply.
      const reply = yield* client.nextReply()
      expect(reply.header).toBe(H.ENGINE_REPLY)
      const snapshot = yield* cluster.coordinator.snapshot
      expect(snapshot.counters.duplicateConnect).toBe(1)
      expect(snapshot.clients).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("ignores and counts messages from clients that never connected; nothing reaches an engine", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const stranger = yield* RawClient.make(cluster.address)
      yield* stranger.submit(0, "the cat")
      yield* stranger.signal(H.ABORT_REQUEST, 0)
      yield* stranger.signal(H.PAUSE)
      yield* stranger.signal(H.SHUTDOWN)
      const snapshot = yield* cluster.coordinator.waitFor("4 ignored messages", (s) => s.counters.neverConnected === 4)
      expect(snapshot.engines[0]!.receivedTotal).toBe(0)
      expect(snapshot.state).toBe("RUNNING")
      expect(snapshot.running).toBe(true)
      expect(snapshot.nextRequestId).toBe(0)
    }).pipe(Effect.scoped))
})

describe("TestCoordinator: engine registration", () => {
  it.effect("an engine registers with one empty frame; a connected client cannot register that way", () =>
    Effect.gen(function*() {
      const coordinator = yield* TestCoordinator.make()
      const client = yield* RawClient.make(coordinator.address)
      yield* client.connect
      yield* client.send([new Uint8Array(0)])
      yield* coordinator.waitFor("the refused registration", (s) => s.counters.malformed === 1)
      yield* RawEngine.make(coordinator.address, "mp-coord-7")
      const snapshot = yield* coordinator.awaitEngines(1)
      expect(snapshot.engines.map((e) => e.identity)).toEqual(["mp-coord-7"])
    }).pipe(Effect.scoped))
})

describe("TestCoordinator: malformed input", () => {
  it.effect("rejects a SUBMIT that is not five frames and a KV handoff that is not three, forwarding nothing", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const client = yield* RawClient.make(cluster.address)
      yield* client.connect
      const five = RawClient.submitFrames(0, "the cat")
      yield* client.send(five.slice(0, 4))
      yield* client.send([...five, NIL])
      yield* client.send([
        Msgpack.encode([H.SUBMIT_REQUEST_WITH_KV, 1, RawClient.params(), { agent: "x" }]),
        Msgpack.encode("the cat")
      ])
      yield* client.send([Msgpack.encode([H.ABORT_REQUEST, 0]), NIL])
      const snapshot = yield* cluster.coordinator.waitFor("4 arity rejections", (s) => s.counters.badArity === 4)
      expect(snapshot.engines[0]!.receivedTotal).toBe(0)
      expect(snapshot.nextRequestId).toBe(0)
      // The loop is still up.
      yield* client.submit(2, "the cat", { params: { num_tokens_to_generate: 1 } })
      expect((yield* client.nextReply()).requestId).toBe(2)
    }).pipe(Effect.scoped))

  it.effect("counts undecodable frames, bad metadata and unknown headers, and keeps going", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const client = yield* RawClient.make(cluster.address)
      yield* client.connect
      yield* client.send([Uint8Array.of(0xc1)]) // not msgpack
      yield* client.send([Msgpack.encode("not an array")])
      yield* client.send([Msgpack.encode([H.SUBMIT_REQUEST, "zero", RawClient.params(), null]), NIL, NIL, NIL, NIL])
      yield* client.send([Msgpack.encode([H.SUBMIT_REQUEST, 0, "params", null]), NIL, NIL, NIL, NIL])
      yield* client.send([Msgpack.encode([99])])
      yield* client.send([Msgpack.encode([H.CONNECT_ACK])]) // a header clients do not send
      const snapshot = yield* cluster.coordinator.waitFor(
        "4 malformed and 2 unknown-header rejections",
        (s) => s.counters.malformed === 4 && s.counters.unknownHeader === 2
      )
      expect(snapshot.engines[0]!.receivedTotal).toBe(0)
      yield* client.submit(1, "the cat", { params: { num_tokens_to_generate: 1 } })
      expect((yield* client.nextReply()).requestId).toBe(1)
    }).pipe(Effect.scoped))
})

describe("TestCoordinator: re-numbering", () => {
  it.effect("re-numbers a metadata frame laid out unlike Python's (array16), and refuses one it cannot re-encode", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const client = yield* RawClient.make(cluster.address)
      yield* client.connect
      const [, ...bodies] = RawClient.submitFrames(0, "the cat", { params: { num_tokens_to_generate: 1 } })
      const params = Msgpack.encode(RawClient.params({ num_tokens_to_generate: 1 }))
      const array16 = Uint8Array.from([0xdc, 0x00, 0x04, H.SUBMIT_REQUEST, 0x07, ...params, 0xc0])
      yield* client.send([array16, ...bodies])
      const reply = yield* client.nextReply()
      expect(reply.requestId).toBe(7)
      const delivered = (yield* cluster.coordinator.snapshot).engines[0]!.received[0]!
      expect(Msgpack.decode(delivered.frames[0]!)).toEqual([H.SUBMIT_REQUEST, 0, RawClient.params({ num_tokens_to_generate: 1 }), null])
      // A timestamp extension decodes to a Date, which has no msgpack form to re-encode.
      const withExtension = Uint8Array.from([0xdc, 0x00, 0x04, H.SUBMIT_REQUEST, 0x08, 0x81, 0xa1, 0x61, 0xd6, 0xff, 0, 0, 0, 1, 0xc0])
      yield* client.send([withExtension, ...bodies])
      const snapshot = yield* cluster.coordinator.waitFor("the refusal", (s) => s.counters.malformed === 1)
      expect(snapshot.inFlight).toBe(0)
      expect(snapshot.nextRequestId).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("two clients using the same request ids each get their own replies", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 2 })
      const a = yield* RawClient.make(cluster.address)
      const b = yield* RawClient.make(cluster.address)
      yield* a.connect
      yield* b.connect
      for (const id of [0, 1]) {
        yield* a.submit(id, `the cat ${id}`, { params: { num_tokens_to_generate: 2 } })
        yield* b.submit(id, `the dog ${id}`, { params: { num_tokens_to_generate: 2 } })
      }
      const fromA = yield* a.untilReplies(2)
      const fromB = yield* b.untilReplies(2)
      expect(fromA.map((r) => [r.requestId, r.body?.prompt]).sort()).toEqual([[0, "the cat 0"], [1, "the cat 1"]])
      expect(fromB.map((r) => [r.requestId, r.body?.prompt]).sort()).toEqual([[0, "the dog 0"], [1, "the dog 1"]])
      const snapshot = yield* cluster.coordinator.snapshot
      const engineIds = snapshot.engines.flatMap((e) => e.received.map((d) => d.requestId))
      expect(new Set(engineIds).size).toBe(4)
      expect(snapshot.inFlight).toBe(0)
    }).pipe(Effect.scoped))
})

describe("TestCoordinator: engine replies", () => {
  it.effect("splits a batch into one message per client; flagged entries get generated_text, others stay byte for byte", () =>
    Effect.gen(function*() {
      const coordinator = yield* TestCoordinator.make()
      const engine = yield* RawEngine.make(coordinator.address, "mp-coord-0")
      yield* coordinator.awaitEngines(1)
      const a = yield* RawClient.make(coordinator.address)
      const b = yield* RawClient.make(coordinator.address)
      yield* a.connect
      yield* b.connect
      yield* a.submit(0, [1, 16, 24])
      const forA = (yield* engine.nextMetadata())[1] as number
      yield* b.submit(0, [1, 16, 24])
      const forB = (yield* engine.nextMetadata())[1] as number
      expect(forA).not.toBe(forB)
      const body = (id: number) =>
        Msgpack.encode({ request_id: id, generated_tokens: [1, 16, 24, 0], generated_text: null, sampling_params: {} })
      const bodyA = body(forA)
      yield* engine.send([Msgpack.encode([H.ENGINE_REPLY, [[forB, true], [forA, false]]]), body(forB), bodyA])
      const replyA = yield* a.nextReply()
      const replyB = yield* b.nextReply()
      expect(replyA.requestId).toBe(0)
      expect(Buffer.compare(replyA.frames[1]!, Buffer.from(bodyA))).toBe(0)
      expect(replyB.requestId).toBe(0)
      // End-of-document is left out unless detokenize_stop_sequence is set.
      expect(replyB.body).toEqual({ request_id: forB, generated_tokens: [1, 16, 24, 0], generated_text: "the quick fox", sampling_params: {} })
      expect((yield* coordinator.snapshot).inFlight).toBe(0)
    }).pipe(Effect.scoped))

  it.effect("with a tokenizer of its own: generated_text is that tokenizer's, and a text prompt is hashed with it", () =>
    Effect.gen(function*() {
      // One token per code point, as Megatron's own test harness tokenizes: not the test vocabulary.
      const codepoints: CoordinatorTokenizer.CoordinatorTokenizer = {
        tokenize: (text) => Array.from(text, (c) => c.codePointAt(0)!),
        detokenize: (ids, options) => String.fromCodePoint(...ids.filter((id) => !(options?.removeEod === true && id === 0)))
      }
      const coordinator = yield* TestCoordinator.make({ policy: "longest_prefix", blockSizeTokens: 4, tokenizer: codepoints })
      const engine = yield* RawEngine.make(coordinator.address, "mp-coord-0")
      yield* coordinator.awaitEngines(1)
      const client = yield* RawClient.make(coordinator.address)
      yield* client.connect
      yield* client.submit(0, "abcdefgh")
      const id = (yield* engine.nextMetadata())[1] as number
      const [first, second] = BlockHashes.blockHashes([97, 98, 99, 100, 101, 102, 103, 104], 4)
      expect(yield* coordinator.holders(first!)).toEqual(["mp-coord-0"])
      expect(yield* coordinator.holders(second!)).toEqual(["mp-coord-0"])
      const body = Msgpack.encode({ request_id: id, generated_tokens: [104, 105, 0], generated_text: null, sampling_params: {} })
      yield* engine.send([Msgpack.encode([H.ENGINE_REPLY, [[id, true]]]), body])
      expect((yield* client.nextReply()).body).toMatchObject({ generated_tokens: [104, 105, 0], generated_text: "hi" })
    }).pipe(Effect.scoped))

  it.effect("forwards partials untouched and keeps the request in flight", () =>
    Effect.gen(function*() {
      const coordinator = yield* TestCoordinator.make()
      const engine = yield* RawEngine.make(coordinator.address, "mp-coord-0")
      yield* coordinator.awaitEngines(1)
      const client = yield* RawClient.make(coordinator.address)
      yield* client.connect
      yield* client.submit(5, "the cat", { params: { streaming: true } })
      const id = (yield* engine.nextMetadata())[1] as number
      const partial = Msgpack.encode({ request_id: id, new_tokens: [3, 4] })
      yield* engine.send([Msgpack.encode([H.ENGINE_REPLY_PARTIAL, [id]]), partial])
      const got = yield* client.nextReply()
      expect(got.header).toBe(H.ENGINE_REPLY_PARTIAL)
      expect(got.requestId).toBe(5)
      expect(Buffer.compare(got.frames[1]!, Buffer.from(partial))).toBe(0)
      expect((yield* coordinator.snapshot).inFlight).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("counts replies for unknown ids, batches with the wrong body count, and replies from non-engines", () =>
    Effect.gen(function*() {
      const coordinator = yield* TestCoordinator.make()
      const engine = yield* RawEngine.make(coordinator.address, "mp-coord-0")
      yield* coordinator.awaitEngines(1)
      const client = yield* RawClient.make(coordinator.address)
      yield* client.connect
      yield* client.submit(0, "the cat")
      const id = (yield* engine.nextMetadata())[1] as number
      const body = Msgpack.encode({ request_id: id, generated_tokens: [] })
      yield* engine.send([Msgpack.encode([H.ENGINE_REPLY, [[999, false]]]), body])
      yield* engine.send([Msgpack.encode([H.ENGINE_REPLY, [[id, false]]])])
      yield* engine.send([Msgpack.encode([H.ENGINE_REPLY_PARTIAL, [id, 998]]), body])
      yield* client.send([Msgpack.encode([H.ENGINE_REPLY, [[id, false]]]), body])
      const snapshot = yield* coordinator.waitFor(
        "the four rejections",
        (s) => s.counters.unknownRequest === 1 && s.counters.badArity === 2 && s.counters.notFromEngine === 1
      )
      expect(snapshot.inFlight).toBe(1)
      // The request is still answerable.
      yield* engine.send([Msgpack.encode([H.ENGINE_REPLY, [[id, false]]]), body])
      expect((yield* client.nextReply()).requestId).toBe(0)
    }).pipe(Effect.scoped))
})

describe("TestCoordinator: routing", () => {
  /** Two engines, paused so that requests stay in flight and loads only grow. */
  const pausedCluster = (coordinator: TestCoordinator.Options) =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 2, coordinator })
      const client = yield* RawClient.make(cluster.address)
      yield* client.connect
      yield* client.signal(H.PAUSE)
      return { cluster, client }
    })

  const submitted = (cluster: TestCluster.Handle, count: number) =>
    cluster.coordinator.waitFor(`${count} routed submissions`, (s) => s.nextRequestId === count)

  it.effect("load_balanced: the engine with the fewest requests in flight, ties to the lowest identity", () =>
    Effect.gen(function*() {
      const { client, cluster } = yield* pausedCluster({ policy: "load_balanced" })
      for (let id = 0; id < 5; id++) yield* client.submit(id, [1, 2, 3, 4, 5, 6, 7, 8], { hashes: [11, 12] })
      const snapshot = yield* submitted(cluster, 5)
      expect(routes(snapshot)).toEqual({ "mp-coord-0": [0, 2, 4], "mp-coord-1": [1, 3] })
      expect(snapshot.engines.map((e) => e.load)).toEqual([3, 2])
      // load_balanced never reads the hashes
      expect(snapshot.heldHashes).toBe(0)
    }).pipe(Effect.scoped))

  it.effect("longest_prefix: the client's hashes route a request to the engine holding its longest prefix", () =>
    Effect.gen(function*() {
      const { client, cluster } = yield* pausedCluster({ policy: "longest_prefix" })
      yield* client.submit(0, [0], { hashes: [1, 2, 3] }) // tie: mp-coord-0
      yield* client.submit(1, [0], { hashes: [9] }) // no match: least loaded, mp-coord-1
      yield* client.submit(2, [0], { hashes: [1, 2, 3, 4] }) // 3 of 4 held by mp-coord-0, loads even
      yield* client.submit(3, [0], { hashes: [1, 2, 7] }) // 2 of 3 on mp-coord-0, which is busier: 0.5 vs 0.17
      yield* client.submit(4, [0], { hashes: [5, 2] }) // nobody holds the first hash: least loaded
      const snapshot = yield* submitted(cluster, 5)
      expect(routes(snapshot)).toEqual({ "mp-coord-0": [0, 2, 3], "mp-coord-1": [1, 4] })
      expect(yield* cluster.coordinator.holders(1n)).toEqual(["mp-coord-0"])
      expect(yield* cluster.coordinator.holders(2n)).toEqual(["mp-coord-0", "mp-coord-1"])
      // Frame 2 is for routing only: engines get nil in its place, and still five frames.
      const delivered = snapshot.engines[0]!.received.find((d) => d.name === "SUBMIT_REQUEST")!
      expect(delivered.frames.length).toBe(5)
      expect(Array.from(delivered.frames[2]!)).toEqual([0xc0])
    }).pipe(Effect.scoped))

  it.effect("longest_prefix trades affinity against load by beta", () =>
    Effect.gen(function*() {
      for (
        const [beta, expected] of [
          // holder at 1 vs 0 still wins (0.75 vs 0.25); at 2 vs 0 the scores tie (0.5) and the
          // less-loaded engine takes it; from then on both hold the prefix and load decides
          [0.5, { "mp-coord-0": [0, 1, 4], "mp-coord-1": [2, 3] }],
          [0, { "mp-coord-0": [0, 1, 2, 3, 4], "mp-coord-1": [] }],
          [2, { "mp-coord-0": [0, 2, 4], "mp-coord-1": [1, 3] }]
        ] as const
      ) {
        yield* Effect.gen(function*() {
          const { client, cluster } = yield* pausedCluster({ policy: "longest_prefix", beta })
          for (let id = 0; id < 5; id++) yield* client.submit(id, [0], { hashes: [42] })
          expect(routes(yield* submitted(cluster, 5))).toEqual(expected)
        }).pipe(Effect.scoped)
      }
    }))

  it.effect("longest_prefix hashes the prompt itself when frame 2 is nil (token ids, or text through the vocabulary)", () =>
    Effect.gen(function*() {
      const { client, cluster } = yield* pausedCluster({ policy: "longest_prefix", blockSizeTokens: 4 })
      yield* client.submit(0, [1, 16, 24, 41, 49, 1, 23, 64]) // "the quick fox runs over the dog ."
      yield* client.submit(1, [5, 5, 5, 5]) // unrelated: least loaded
      yield* client.submit(2, "the quick fox runs over the cat") // shares the first block only
      yield* client.submit(3, [1, 16, 24], { hashes: [] }) // hashed by the client, shorter than a block: load
      const snapshot = yield* submitted(cluster, 4)
      expect(routes(snapshot)).toEqual({ "mp-coord-0": [0, 2], "mp-coord-1": [1, 3] })
      expect(snapshot.heldHashes).toBe(3)
    }).pipe(Effect.scoped))

  it.effect("first_prefix_block: only the first hash counts", () =>
    Effect.gen(function*() {
      const { client, cluster } = yield* pausedCluster({ policy: "first_prefix_block" })
      yield* client.submit(0, [0], { hashes: [1, 2] })
      yield* client.submit(1, [0], { hashes: [1, 5] }) // first block held by mp-coord-0
      yield* client.submit(2, [0], { hashes: [7, 2] }) // first block held by nobody: least loaded
      const snapshot = yield* submitted(cluster, 3)
      expect(routes(snapshot)).toEqual({ "mp-coord-0": [0, 1], "mp-coord-1": [2] })
      expect(yield* cluster.coordinator.holders(2n)).toEqual([])
    }).pipe(Effect.scoped))

  it.effect("releases hash ownership when a request completes", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 2, coordinator: { policy: "longest_prefix" } })
      const client = yield* RawClient.make(cluster.address)
      yield* client.connect
      yield* client.submit(0, [0], { hashes: [1, 2], params: { num_tokens_to_generate: 1 } })
      yield* client.nextReply()
      expect((yield* cluster.coordinator.snapshot).heldHashes).toBe(0)
      yield* client.signal(H.PAUSE)
      yield* client.submit(1, [0]) // mp-coord-0 (tie)
      yield* client.submit(2, [0], { hashes: [1, 2] }) // nobody holds them any more: least loaded
      expect(routes(yield* submitted(cluster, 3))).toEqual({ "mp-coord-0": [0, 1], "mp-coord-1": [2] })
    }).pipe(Effect.scoped))

  it.effect("holds submissions until a first engine registers", () =>
    Effect.gen(function*() {
      const coordinator = yield* TestCoordinator.make()
      const client = yield* RawClient.make(coordinator.address)
      yield* client.connect
      yield* client.submit(0, "the cat", { params: { num_tokens_to_generate: 1 } })
      yield* coordinator.waitFor("a held submission", (s) => s.backlog === 1)
      yield* TestEngine.make({ coordinatorAddress: coordinator.address, rank: 0 })
      expect((yield* client.nextReply()).requestId).toBe(0)
    }).pipe(Effect.scoped))
})

describe("TestCoordinator: broadcasts, abort, shutdown", () => {
  it.effect("ABORT goes only to the engine holding the request, with its coordinator id; unknown ids are dropped", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 2 })
      const client = yield* RawClient.make(cluster.address)
      yield* client.connect
      yield* client.signal(H.PAUSE)
      yield* client.submit(0, "the cat")
      yield* client.submit(1, "the dog")
      yield* client.signal(H.ABORT_REQUEST, 1)
      yield* client.signal(H.ABORT_REQUEST, 77)
      const snapshot = yield* cluster.coordinator.waitFor("the unknown abort", (s) => s.counters.abortsDropped === 1)
      const aborts = snapshot.engines.map((e) => e.received.filter((d) => d.name === "ABORT_REQUEST"))
      expect(aborts[0]).toEqual([])
      expect(aborts[1]!.map((d) => [d.requestId, d.clientRequestId])).toEqual([[1, 1]])
      const engine1 = yield* cluster.engines[1]!.waitFor("the abort", (s) => s.aborted.length === 1)
      expect(engine1.aborted).toEqual([1])
      // Megatron finishes an aborted request at the next step with what it has.
      yield* client.signal(H.UNPAUSE)
      const replies = yield* client.untilReplies(2)
      const aborted = replies.find((r) => r.requestId === 1)!
      expect(aborted.body?.generated_length).toBe(0)
    }).pipe(Effect.scoped))

  it.effect("RELEASE_KV and profiler signals are broadcast verbatim to every engine, in any state", () =>
    Effect.gen(function*() {
      const coordinator = yield* TestCoordinator.make()
      const e0 = yield* RawEngine.make(coordinator.address, "mp-coord-0")
      const e1 = yield* RawEngine.make(coordinator.address, "mp-coord-1")
      yield* coordinator.awaitEngines(2)
      const client = yield* RawClient.make(coordinator.address)
      yield* client.connect
      yield* client.signal(H.RELEASE_KV, 7)
      yield* client.signal(H.PAUSE)
      yield* client.signal(H.SUSPEND)
      yield* client.signal(H.START_CUDA_PROFILER)
      yield* client.signal(H.STOP_CUDA_PROFILER)
      for (const engine of [e0, e1]) {
        const seen: Array<ReadonlyArray<any>> = []
        for (let i = 0; i < 5; i++) seen.push(yield* engine.nextMetadata())
        expect(seen).toEqual([[H.RELEASE_KV, 7], [H.PAUSE], [H.SUSPEND], [H.START_CUDA_PROFILER], [H.STOP_CUDA_PROFILER]])
      }
    }).pipe(Effect.scoped))

  it.effect("SHUTDOWN ends the coordinator and does not touch the engines", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 2 })
      const client = yield* RawClient.make(cluster.address)
      yield* client.connect
      yield* client.signal(H.SHUTDOWN)
      yield* cluster.coordinator.awaitStopped
      const snapshot = yield* cluster.coordinator.snapshot
      expect(snapshot.running).toBe(false)
      expect(snapshot.shutdownReceived).toBe(true)
      expect(snapshot.engines.map((e) => e.receivedTotal)).toEqual([0, 0])
      for (const engine of cluster.engines) expect((yield* engine.snapshot).state).toBe("RUNNING")
    }).pipe(Effect.scoped))

  it.effect("refuses to bind anything but loopback", () =>
    Effect.gen(function*() {
      const error = yield* TestCoordinator.make({ address: "tcp://192.0.2.1:0" }).pipe(Effect.scoped, Effect.flip)
      expect(error.reason._tag).toBe("NotLoopback")
    }))
})
