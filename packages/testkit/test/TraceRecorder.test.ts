import { describe, expect, it } from "@effect/vitest"
import { Headers, Messages, Msgpack } from "@mcore-effect/protocol"
import { Effect, Result } from "effect"
import * as Path from "node:path"
import { TestCluster, TestCoordinator, TestEngine, TestSupport, Trace, TraceRecorder } from "../src/index.ts"
import * as RawClient from "./support/RawClient.ts"

const H = Headers.values

const bytes = (frames: ReadonlyArray<Uint8Array>) => frames.map((f) => Buffer.from(f).toString("hex"))

const tempDir = TestSupport.tempDirectory("trace-recorder-test-")

describe("TraceRecorder", () => {
  it.effect("forwards every message both ways unchanged, keeps clients with colliding ids apart, and records each one", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const recorder = yield* TraceRecorder.make({ upstream: cluster.address })
      const alice = yield* RawClient.make(recorder.address)
      const bob = yield* RawClient.make(recorder.address)
      yield* alice.connect
      yield* bob.connect
      // Both use request id 0: only distinct connections upstream keep the answers apart.
      const aliceSubmit = RawClient.submitFrames(0, "the red fox", { params: { num_tokens_to_generate: 2 } })
      const bobSubmit = RawClient.submitFrames(0, "a blue bird sings", { params: { num_tokens_to_generate: 5 } })
      yield* alice.send(aliceSubmit)
      yield* bob.send(bobSubmit)
      const aliceReply = yield* alice.next()
      const bobReply = yield* bob.next()
      expect(RawClient.decodeReply(aliceReply).body?.generated_tokens).toHaveLength(2)
      expect(RawClient.decodeReply(bobReply).body?.generated_tokens).toHaveLength(5)

      const snapshot = yield* cluster.coordinator.snapshot
      expect(snapshot.clients).toBe(2)
      expect(snapshot.nextRequestId).toBe(2)

      const { entries, header } = yield* recorder.trace
      expect(header).toMatchObject({ format: "mcore-effect-trace", version: 1 })
      const connect = bytes([Msgpack.encode([H.CONNECT])])
      const ack = bytes([Msgpack.encode([H.CONNECT_ACK])])
      const of = (peer: string) => entries.filter((e) => e.peer === peer).map((e) => [e.dir, bytes(e.frames)])
      // Peers are named in order of first message: alice connected first.
      expect(of("client-0")).toEqual([
        ["client->coordinator", connect],
        ["coordinator->client", ack],
        ["client->coordinator", bytes(aliceSubmit)],
        ["coordinator->client", bytes(aliceReply)]
      ])
      expect(of("client-1")).toEqual([
        ["client->coordinator", connect],
        ["coordinator->client", ack],
        ["client->coordinator", bytes(bobSubmit)],
        ["coordinator->client", bytes(bobReply)]
      ])
      expect(entries).toHaveLength(8)
      // Times are from a monotonic clock, in recording order.
      for (let i = 1; i < entries.length; i++) expect(entries[i]!.t).toBeGreaterThanOrEqual(entries[i - 1]!.t)
    }).pipe(Effect.scoped))

  it.effect("records engines that register through it with the engine directions, keeping their identity upstream", () =>
    Effect.gen(function*() {
      const coordinator = yield* TestCoordinator.make()
      const recorder = yield* TraceRecorder.make({ upstream: coordinator.address })
      yield* TestEngine.make({ coordinatorAddress: recorder.address, rank: 0 })
      const registered = yield* coordinator.awaitEngines(1)
      // The coordinator knows engines by identity: the recorder's DEALER took the engine's.
      expect(registered.engines.map((e) => e.identity)).toEqual(["mp-coord-0"])

      const client = yield* RawClient.make(coordinator.address)
      yield* client.connect
      yield* client.submit(0, "the cat", { params: { num_tokens_to_generate: 3 } })
      const reply = yield* client.nextReply()
      expect(reply.body?.generated_tokens).toHaveLength(3)

      const entries = yield* recorder.waitFor("the engine's reply", (es) => es.some((e) => e.dir === "engine->coordinator" && e.frames.length > 1))
      expect(new Set(entries.map((e) => e.peer))).toEqual(new Set(["engine-0"]))
      // Registration: one empty frame.
      expect([entries[0]!.dir, bytes(entries[0]!.frames)]).toEqual(["engine->coordinator", [""]])
      const submission = entries.find((e) => e.dir === "coordinator->engine")!
      const decoded = Result.getOrThrow(Messages.Client.decode(submission.frames))
      expect(decoded).toMatchObject({ _tag: "SubmitRequest", requestId: 0, prompt: "the cat" })
      const batch = entries.find((e) => e.dir === "engine->coordinator" && e.frames.length > 1)!
      expect(Result.getOrThrow(Messages.Engine.decode(batch.frames))).toMatchObject({ _tag: "EngineReplyBatch", entries: [[0, true]] })
    }).pipe(Effect.scoped))

  it.effect("writes the trace file as it goes; closing the scope writes the rest, and it reads back as recorded", () =>
    Effect.gen(function*() {
      const path = Path.join(yield* tempDir, "session.trace.jsonl")
      const recorded = yield* Effect.gen(function*() {
        const cluster = yield* TestCluster.make({ engines: 1 })
        const recorder = yield* TraceRecorder.make({ upstream: cluster.address, path, meta: { test: "file" } })
        const client = yield* RawClient.make(recorder.address)
        yield* client.connect
        yield* client.submit(0, "one two three", { params: { num_tokens_to_generate: 2 } })
        yield* client.nextReply()
        // Written while recording: flush waits for the writes, it does not close anything.
        yield* recorder.flush
        expect((yield* Trace.read(path)).entries).toHaveLength(4)
        return yield* recorder.trace
      }).pipe(Effect.scoped)
      expect(recorded.entries).toHaveLength(4)
      const read = yield* Trace.read(path)
      expect(read.header).toEqual(recorded.header)
      expect(read.header.meta).toEqual({ test: "file" })
      expect(read.entries.map((e) => [e.dir, e.peer, e.t, bytes(e.frames)]))
        .toEqual(recorded.entries.map((e) => [e.dir, e.peer, e.t, bytes(e.frames)]))
    }).pipe(Effect.scoped))

  it.effect("binds on loopback only", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(TraceRecorder.make({ upstream: "tcp://127.0.0.1:5555", address: "tcp://192.0.2.1:0" }))
      expect(error.reason._tag).toBe("NotLoopback")
    }).pipe(Effect.scoped))

  it.effect("refuses a malformed upstream address up front", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(TraceRecorder.make({ upstream: "not an address" }))
      expect(error.reason._tag).toBe("ConnectFailed")
    }).pipe(Effect.scoped))
})
