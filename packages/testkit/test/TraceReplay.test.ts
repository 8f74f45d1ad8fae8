import { describe, expect, it } from "@effect/vitest"
import { Messages } from "@mcore-effect/protocol"
import { Effect, Result } from "effect"
import { fileURLToPath } from "node:url"
import * as Zmq from "zeromq"
import { Generation, TestCluster, TestCoordinator, TestSupport, Trace, TraceMatch, TraceRecorder, TraceReplay, Vocabulary } from "../src/index.ts"
import * as DialectPeer from "./support/DialectPeer.ts"
import * as RawClient from "./support/RawClient.ts"
import * as TraceSession from "./support/TraceSession.ts"

const fixture = fileURLToPath(new URL("./fixtures/session.trace.jsonl", import.meta.url))

const count = (trace: Trace.Trace, dir: Trace.Direction) => trace.entries.filter((e) => e.dir === dir).length

/** A DEALER that sends the given client messages in order, encoded by the protocol codec. */
const dealer = (address: string) =>
  Effect.gen(function*() {
    const socket = yield* Effect.acquireRelease(
      Effect.sync(() => new Zmq.Dealer({ linger: 0 })),
      (s) => Effect.sync(() => s.close())
    )
    socket.connect(address)
    const peer = yield* TestSupport.peer(socket, "dealer")
    return {
      send: (message: Messages.ClientMessage) => peer.send(Result.getOrThrow(Messages.Client.encode(message))),
      receive: peer.next().pipe(
        Effect.orDie,
        Effect.map((frames) => Result.getOrThrow(Messages.Coordinator.decode(frames)))
      )
    }
  })

describe("TraceReplay: the recorded fixture", () => {
  it.effect("as a scripted coordinator: the session sends the recorded messages, ids included, and ends the same", () =>
    Effect.gen(function*() {
      const trace = yield* Trace.read(fixture)
      const coordinator = yield* TraceReplay.asCoordinator(trace)
      const outcome = yield* TraceSession.run(coordinator.address)
      const report = yield* coordinator.done
      expect(report).toEqual({
        sent: count(trace, "coordinator->client"),
        matched: count(trace, "client->coordinator")
      })
      // The outcome is the test engines' deterministic output for each prompt.
      const { prompts } = TraceSession
      const streamed = Generation.tokens(prompts.streamed, 6)
      expect(outcome.tokens).toEqual(
        new Map<number, ReadonlyArray<number>>([
          [0, Generation.tokens(Vocabulary.tokenize(prompts.plain), 4)],
          [1, streamed],
          [2, Generation.tokens(Vocabulary.tokenize(prompts.logProbs), 3)],
          [3, []] // aborted before its first step
        ])
      )
      const partials = outcome.partials.get(1)!.flat()
      expect(partials.length).toBeGreaterThan(0)
      expect(partials).toEqual(streamed.slice(0, partials.length))
    }).pipe(Effect.scoped))

  it.effect("as scripted clients: a fresh coordinator and engines with the recorded settings give the recorded replies", () =>
    Effect.gen(function*() {
      const trace = yield* Trace.read(fixture)
      expect(trace.header.meta.cluster).toMatchObject(TraceSession.cluster)
      const cluster = yield* TestCluster.make(TraceSession.cluster)
      const report = yield* TraceReplay.asClients(trace, { address: cluster.address })
      expect(report).toEqual({
        sent: count(trace, "client->coordinator"),
        matched: count(trace, "coordinator->client")
      })
    }).pipe(Effect.scoped))
})

describe("TraceReplay: against a coordinator that has served requests before", () => {
  it.effect("the clients' part replays twice in a row against one coordinator: its ids are renamed, not compared", () =>
    Effect.gen(function*() {
      const trace = yield* Trace.read(fixture)
      const cluster = yield* TestCluster.make(TraceSession.cluster)
      const expected = { sent: count(trace, "client->coordinator"), matched: count(trace, "coordinator->client") }
      expect(yield* TraceReplay.asClients(trace, { address: cluster.address })).toEqual(expected)
      // The coordinator's counter has moved past every recorded id: the second replay sees new ones.
      expect(yield* TraceReplay.asClients(trace, { address: cluster.address })).toEqual(expected)
      // Literal comparison, as before ids were renamed, fails at the first reply that carries one.
      const error = yield* Effect.flip(TraceReplay.asClients(trace, { address: cluster.address, coordinatorIds: [] }))
      expect(error.reason).toMatchObject({ _tag: "ReplayMismatch", peer: "client-0" })
      expect((error.reason as { path: string }).path).toMatch(/^(reply|partial)\.request_id$/)
    }).pipe(Effect.scoped))
})

describe("TraceReplay: several clients", () => {
  /** Two clients with colliding request ids; the first finishes its handshake before the second starts. */
  const session = (address: string) =>
    Effect.gen(function*() {
      const alice = yield* RawClient.make(address)
      const bob = yield* RawClient.make(address)
      yield* alice.connect
      yield* bob.connect
      yield* alice.submit(0, "the red fox", { params: { num_tokens_to_generate: 2 } })
      yield* bob.submit(0, "a blue bird sings", { params: { num_tokens_to_generate: 5 } })
      const a = yield* alice.nextReply()
      const b = yield* bob.nextReply()
      return [a.body?.generated_tokens, b.body?.generated_tokens]
    })

  it.effect("a live recording of two clients replays both ways, each connection paired with its own recorded peer", () =>
    Effect.gen(function*() {
      const { trace, live } = yield* Effect.gen(function*() {
        const cluster = yield* TestCluster.make({ engines: 1 })
        const recorder = yield* TraceRecorder.make({ upstream: cluster.address })
        const live = yield* session(recorder.address)
        return { trace: yield* recorder.trace, live }
      }).pipe(Effect.scoped)
      expect(new Set(trace.entries.map((e) => e.peer))).toEqual(new Set(["client-0", "client-1"]))

      const coordinator = yield* TraceReplay.asCoordinator(trace)
      expect(yield* session(coordinator.address)).toEqual(live)
      expect(yield* coordinator.done).toEqual({ sent: 4, matched: 4 })

      // Which client's submission the coordinator numbers first is a race between connections:
      // the reply map's request_id is the coordinator's number, matched as an id, not a literal.
      const cluster = yield* TestCluster.make({ engines: 1 })
      const report = yield* TraceReplay.asClients(trace, { address: cluster.address })
      expect(report).toEqual({ sent: 4, matched: 4 })
    }).pipe(Effect.scoped))
})

describe("TraceReplay: a client that strays", () => {
  it.effect("a different message fails with ReplayMismatch: the trace index, where it differs, expected and actual", () =>
    Effect.gen(function*() {
      const trace = yield* Trace.read(fixture)
      const coordinator = yield* TraceReplay.asCoordinator(trace)
      const client = yield* dealer(coordinator.address)
      yield* client.send({ _tag: "Connect" })
      expect(yield* client.receive).toEqual({ _tag: "ConnectAck" })
      yield* client.send({ _tag: "SetGenerationEpoch", generationEpoch: 4 })
      const error = yield* Effect.flip(coordinator.done)
      expect(error.reason).toMatchObject({
        _tag: "ReplayMismatch",
        index: 2,
        peer: "client-0",
        path: "generationEpoch",
        expected: { _tag: "SetGenerationEpoch", generationEpoch: 3 },
        actual: { _tag: "SetGenerationEpoch", generationEpoch: 4 }
      })
    }).pipe(Effect.scoped))

  it.effect("a connection the trace does not have fails with ReplayMismatch at no index", () =>
    Effect.gen(function*() {
      const trace = yield* Trace.read(fixture)
      const coordinator = yield* TraceReplay.asCoordinator(trace)
      const first = yield* dealer(coordinator.address)
      yield* first.send({ _tag: "Connect" })
      yield* first.receive
      // The script now waits for `first`'s next message; a second connection is not in the trace.
      const second = yield* dealer(coordinator.address)
      yield* second.send({ _tag: "Connect" })
      const error = yield* Effect.flip(coordinator.done)
      expect(error.reason).toMatchObject({ _tag: "ReplayMismatch", index: null, actual: { _tag: "Connect" } })
    }).pipe(Effect.scoped))

  it.effect("a client that goes quiet fails with ReplayTimedOut naming the entry it waited for", () =>
    Effect.gen(function*() {
      const trace = yield* Trace.read(fixture)
      const coordinator = yield* TraceReplay.asCoordinator(trace, { timeoutMillis: 200 })
      const client = yield* dealer(coordinator.address)
      yield* client.send({ _tag: "Connect" })
      yield* client.receive
      const error = yield* Effect.flip(coordinator.done)
      expect(error.reason).toMatchObject({ _tag: "ReplayTimedOut", index: 2, peer: "client-0", millis: 200 })
    }).pipe(Effect.scoped))
})

describe("TraceReplay: a coordinator that strays", () => {
  it.effect("a different reply fails with ReplayMismatch at that reply's index", () =>
    Effect.gen(function*() {
      const recorded = yield* Trace.read(fixture)
      // Edit the recording: request 0's first generated token becomes another one.
      const index = recorded.entries.findIndex((e) => {
        if (e.dir !== "coordinator->client") return false
        const m = Result.getOrThrow(Messages.Coordinator.decode(e.frames))
        return m._tag === "EngineReply" && m.requestId === 0
      })
      const entry = recorded.entries[index]!
      const reply = Result.getOrThrow(Messages.Coordinator.decode(entry.frames))
      if (reply._tag !== "EngineReply") throw new Error("not a reply")
      const tokens = reply.reply.generated_tokens as ReadonlyArray<number>
      const edited = { ...reply, reply: { ...reply.reply, generated_tokens: [tokens[0]! + 1, ...tokens.slice(1)] } }
      const entries = recorded.entries.slice()
      entries[index] = { ...entry, frames: Result.getOrThrow(Messages.Coordinator.encode(edited)) }

      const cluster = yield* TestCluster.make(TraceSession.cluster)
      const error = yield* Effect.flip(TraceReplay.asClients({ header: recorded.header, entries }, { address: cluster.address }))
      expect(error.reason).toMatchObject({
        _tag: "ReplayMismatch",
        index,
        peer: "client-0",
        path: "reply.generated_tokens[0]",
        expected: { _tag: "EngineReply", requestId: 0, reply: { generated_tokens: [tokens[0]! + 1, ...tokens.slice(1)] } },
        actual: { _tag: "EngineReply", requestId: 0, reply: { generated_tokens: tokens } }
      })
    }).pipe(Effect.scoped))

  it.effect("a malformed coordinator address is a ConnectFailed", () =>
    Effect.gen(function*() {
      const trace = yield* Trace.read(fixture)
      const error = yield* Effect.flip(TraceReplay.asClients(trace, { address: "not an address" }))
      expect(error.reason._tag).toBe("ConnectFailed")
    }))

  it.effect("a coordinator that never answers fails with ReplayTimedOut at the first reply it owes", () =>
    Effect.gen(function*() {
      const trace = yield* Trace.read(fixture)
      // No engines: the handshake is answered, the submissions never are.
      const coordinator = yield* TestCoordinator.make()
      const error = yield* Effect.flip(TraceReplay.asClients(trace, { address: coordinator.address, timeoutMillis: 200 }))
      const firstReply = trace.entries.findIndex((e, i) => i > 1 && e.dir === "coordinator->client")
      expect(error.reason).toMatchObject({ _tag: "ReplayTimedOut", index: firstReply, peer: "client-0" })
    }).pipe(Effect.scoped))
})

describe("TraceReplay: a trace recorded in a Megatron-LM dialect", () => {
  /** A main client's session: a text submission and a streamed one from token ids. */
  const session = (address: string) =>
    Effect.gen(function*() {
      const client = yield* DialectPeer.client(address, "main")
      yield* client.connect
      yield* client.submit(0, "the red fox", { num_tokens_to_generate: 3 })
      yield* client.submit(1, [4, 9, 22, 41], { num_tokens_to_generate: 3, streaming: true })
      const messages = yield* client.untilReplies(2)
      return messages.filter((m) => m.message._tag === "EngineReply").map((m) => [m.message.requestId, m.message.reply.generated_tokens])
    })

  it.effect("records its dialect, and replays in it both ways: as the coordinator, and as clients against a main cluster", () =>
    Effect.gen(function*() {
      const { trace, live } = yield* Effect.gen(function*() {
        const cluster = yield* TestCluster.make({ engines: 1, protocol: "main" })
        const recorder = yield* TraceRecorder.make({ upstream: cluster.address, protocol: "main" })
        const live = yield* session(recorder.address)
        return { trace: yield* recorder.trace, live }
      }).pipe(Effect.scoped)
      // Through the file format and back: version 2, `protocol` in the header.
      const read = Result.getOrThrow(Trace.parse(Trace.stringify(trace)))
      expect([read.header.version, Trace.protocolOf(read)]).toEqual([2, "main"])
      const submit = read.entries.find((e) => e.dir === "client->coordinator" && e.frames[0]![1] === 20)!
      expect(submit.frames).toHaveLength(1)
      // Read as the reference protocol, main's one-frame SUBMIT does not decode; in main it does.
      expect(TraceMatch.decode(submit.dir, submit.frames)._tag).toBe("Undecodable")
      expect(TraceMatch.decode(submit.dir, submit.frames, { protocol: "main" })._tag).toBe("Message")

      const coordinator = yield* TraceReplay.asCoordinator(read)
      expect(yield* session(coordinator.address)).toEqual(live)
      const played = yield* coordinator.done
      expect(played.matched).toBe(count(read, "client->coordinator"))

      const cluster = yield* TestCluster.make({ engines: 1, protocol: "main" })
      const report = yield* TraceReplay.asClients(read, { address: cluster.address })
      expect(report).toEqual({ sent: count(read, "client->coordinator"), matched: count(read, "coordinator->client") })
    }).pipe(Effect.scoped))

  it.effect("replayed against a coordinator of another dialect, the clients get no answer: nothing is read as the wrong protocol", () =>
    Effect.gen(function*() {
      const trace = yield* Effect.gen(function*() {
        const cluster = yield* TestCluster.make({ engines: 1, protocol: "main" })
        const recorder = yield* TraceRecorder.make({ upstream: cluster.address, protocol: "main" })
        yield* session(recorder.address)
        return yield* recorder.trace
      }).pipe(Effect.scoped)
      const reference = yield* TestCluster.make({ engines: 1 })
      const error = yield* Effect.flip(TraceReplay.asClients(trace, { address: reference.address, timeoutMillis: 300 }))
      expect(error.reason._tag).toBe("ReplayTimedOut")
      // The reference coordinator took main's one-frame SUBMITs for five-frame ones cut short.
      const after = yield* reference.coordinator.waitFor("both SUBMITs refused", (s) => s.counters.badArity === 2)
      expect(after.engines[0]!.receivedTotal).toBe(0)
    }).pipe(Effect.scoped, TestSupport.quiet))
})
