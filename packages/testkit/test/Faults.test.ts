import { describe, expect, it } from "@effect/vitest"
import { Headers, Msgpack } from "@mcore-effect/protocol"
import { Effect } from "effect"
import { Faults, Generation, TestCluster, Vocabulary } from "../src/index.ts"
import * as RawClient from "./support/RawClient.ts"

const H = Headers.values
const tokens = Vocabulary.tokenize("the quick fox")

const setup = (options?: TestCluster.Options) =>
  Effect.gen(function*() {
    const cluster = yield* TestCluster.make({ engines: 1, ...options })
    const client = yield* RawClient.make(cluster.address)
    yield* client.connect
    return { cluster, client, coordinator: cluster.coordinator, engine: cluster.engines[0]! }
  })

const short = { params: { num_tokens_to_generate: 1 } }

describe("Faults on the coordinator (what clients see)", () => {
  it.effect("DropReplies: the next final reply is lost, later ones arrive", () =>
    Effect.gen(function*() {
      const { client, coordinator } = yield* setup()
      yield* coordinator.injectFault(Faults.dropReplies(1))
      yield* client.submit(0, tokens, short)
      yield* coordinator.waitFor("the first reply", (s) => s.inFlight === 0)
      yield* client.submit(1, tokens, short)
      const reply = yield* client.nextReply()
      expect(reply.requestId).toBe(1)
      expect(client.buffered()).toBe(0)
      const snapshot = yield* coordinator.snapshot
      expect(snapshot.faultsApplied.DropReplies).toBe(1)
      expect(snapshot.faults).toEqual([])
    }).pipe(Effect.scoped))

  it.effect("DuplicateReplies: the next final reply arrives twice", () =>
    Effect.gen(function*() {
      const { client, coordinator } = yield* setup()
      yield* coordinator.injectFault(Faults.duplicateReplies(1))
      yield* client.submit(0, tokens, short)
      yield* client.submit(1, tokens, short)
      const replies = yield* client.untilReplies(3)
      expect(replies.map((r) => r.requestId)).toEqual([0, 0, 1])
      expect(Buffer.compare(replies[0]!.frames[1]!, replies[1]!.frames[1]!)).toBe(0)
    }).pipe(Effect.scoped))

  it.effect("DelayReplies: a delayed reply is overtaken by one sent after the delay is cleared", () =>
    Effect.gen(function*() {
      const { client, coordinator } = yield* setup()
      yield* coordinator.injectFault(Faults.delayReplies(1_000))
      yield* client.submit(0, tokens, short)
      yield* coordinator.waitFor("the delayed reply", (s) => s.faultsApplied.DelayReplies === 1)
      yield* coordinator.clearFaults("DelayReplies")
      yield* client.submit(1, tokens, short)
      const replies = yield* client.untilReplies(2)
      expect(replies.map((r) => r.requestId)).toEqual([1, 0])
    }).pipe(Effect.scoped))

  it.effect("ReorderPartials: partials leave in reverse order, two at a time; held ones go before the final reply", () =>
    Effect.gen(function*() {
      const { client, coordinator } = yield* setup()
      yield* coordinator.injectFault(Faults.reorderPartials(2))
      yield* client.submit(0, tokens, { params: { num_tokens_to_generate: 4, streaming: true } })
      const messages = yield* client.untilReplies(1)
      const expected = Generation.tokens(tokens, 4)
      expect(messages.map((m) => m.header === H.ENGINE_REPLY ? "final" : m.body?.new_tokens)).toEqual([
        [expected[1]],
        [expected[0]],
        [expected[2]],
        "final"
      ])
    }).pipe(Effect.scoped))

  it.effect("SendGarbage: a malformed message arrives before the next reply, which still arrives", () =>
    Effect.gen(function*() {
      const { client, coordinator } = yield* setup()
      yield* coordinator.injectFault(Faults.sendGarbage(2))
      yield* client.submit(0, tokens, short)
      yield* client.submit(1, tokens, short)
      const received = [yield* client.next(), yield* client.next(), yield* client.next(), yield* client.next()]
      expect(received[0]).toEqual(Faults.garbageMessages[0]!.map((f) => Buffer.from(f)))
      expect(RawClient.decodeReply(received[1]!).requestId).toBe(0)
      expect(received[2]).toEqual(Faults.garbageMessages[1]!.map((f) => Buffer.from(f)))
      expect(RawClient.decodeReply(received[3]!).requestId).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("SendMessages: the test's messages, in order, up to perReply ahead of each reply, then off", () =>
    Effect.gen(function*() {
      const { client, coordinator } = yield* setup()
      const mine = [0, 1, 2].map((i) => [Uint8Array.of(0xc1, i), Uint8Array.of(i)])
      yield* coordinator.injectFault(Faults.sendMessages(mine, 2))
      yield* client.submit(0, tokens, short)
      yield* client.submit(1, tokens, short)
      yield* client.submit(2, tokens, short)
      const received = [yield* client.next(), yield* client.next(), yield* client.next(), yield* client.next()]
      expect(received[0]).toEqual(mine[0]!.map((f) => Buffer.from(f)))
      expect(received[1]).toEqual(mine[1]!.map((f) => Buffer.from(f)))
      expect(RawClient.decodeReply(received[2]!).requestId).toBe(0)
      expect(received[3]).toEqual(mine[2]!.map((f) => Buffer.from(f)))
      expect(RawClient.decodeReply(yield* client.next()).requestId).toBe(1)
      expect(RawClient.decodeReply(yield* client.next()).requestId).toBe(2)
      const snapshot = yield* coordinator.snapshot
      expect(snapshot.faultsApplied.SendMessages).toBe(3)
      expect(snapshot.faults).toEqual([])
    }).pipe(Effect.scoped))

  it.effect("SendWrongArity: the next reply arrives without its body", () =>
    Effect.gen(function*() {
      const { client, coordinator } = yield* setup()
      yield* coordinator.injectFault(Faults.sendWrongArity(1))
      yield* client.submit(0, tokens, short)
      yield* client.submit(1, tokens, short)
      const first = yield* client.next()
      expect(first.length).toBe(1)
      expect(Msgpack.decode(first[0]!)).toEqual([H.ENGINE_REPLY, 0])
      expect((yield* client.next()).length).toBe(2)
    }).pipe(Effect.scoped))

  it.effect("Hang: nothing is answered until the hang is cleared; then what was sent is handled", () =>
    Effect.gen(function*() {
      const { client, coordinator } = yield* setup()
      yield* coordinator.injectFault(Faults.hang)
      const late = yield* RawClient.make(coordinator.address)
      yield* late.send([Msgpack.encode([H.CONNECT])])
      yield* client.submit(0, tokens, short)
      // Proving an absence needs a quiet window; a working coordinator answers in well under it.
      expect(yield* late.quietFor(300)).toBe(true)
      expect(yield* client.quietFor(0)).toBe(true)
      yield* coordinator.clearFaults()
      expect(Msgpack.decode((yield* late.next())[0]!)).toEqual([H.CONNECT_ACK])
      expect((yield* client.nextReply()).requestId).toBe(0)
    }).pipe(Effect.scoped))

  it.effect("crash and restart: same address, state lost; engines re-register, clients must CONNECT again", () =>
    Effect.gen(function*() {
      const { client, coordinator, engine } = yield* setup()
      yield* client.submit(0, tokens, short)
      yield* client.nextReply()
      yield* coordinator.crash
      expect((yield* coordinator.snapshot).running).toBe(false)
      yield* coordinator.restart
      yield* coordinator.awaitEngines(1)
      expect((yield* engine.snapshot).registrations).toBe(2)
      // The new coordinator has never seen this client.
      yield* client.submit(1, tokens, short)
      yield* coordinator.waitFor("the ignored submission", (s) => s.counters.neverConnected === 1)
      yield* client.connect
      yield* client.submit(2, tokens, short)
      expect((yield* client.nextReply()).requestId).toBe(2)
      const snapshot = yield* coordinator.snapshot
      expect(snapshot.restarts).toBe(1)
      // Ids go on from where the crashed coordinator stopped (one routed before, one after).
      expect(snapshot.nextRequestId).toBe(2)
    }).pipe(Effect.scoped))

  it.effect("restart: an engine's late reply to the old coordinator's request never reaches a new request", () =>
    Effect.gen(function*() {
      // Slow steps: the first request is still generating well after the restart.
      const { client, coordinator, engine } = yield* setup({ engine: { stepMs: 20 } })
      yield* client.submit(0, "the cat", { params: { num_tokens_to_generate: 50 } })
      yield* engine.waitFor("the first request to start", (s) => s.active.length === 1)
      yield* coordinator.restart
      yield* coordinator.awaitEngines(1)
      yield* client.connect
      yield* client.submit(1, "the dog", short)
      const reply = yield* client.nextReply()
      expect(reply.requestId).toBe(1)
      expect(reply.body?.prompt).toBe("the dog")
      // The engine took the new request as a request of its own, not as a duplicate of the old one,
      // and the old one was still running when the new one was answered.
      const engineSnapshot = yield* engine.snapshot
      expect(engineSnapshot.counters.duplicateRequest).toBe(0)
      expect(engineSnapshot.active).toHaveLength(1)
      // The old request's reply is dropped and counted, never forwarded.
      const snapshot = yield* coordinator.waitFor("the stale reply", (s) => s.counters.unknownRequest === 1)
      expect(snapshot.inFlight).toBe(0)
      expect(yield* client.quietFor(100)).toBe(true)
    }).pipe(Effect.scoped))
})

describe("Faults on an engine (what the coordinator sees)", () => {
  it.effect("DropReplies: a finished request is left out of its batch and stays in flight", () =>
    Effect.gen(function*() {
      const { client, coordinator, engine } = yield* setup()
      yield* engine.injectFault(Faults.dropReplies(1))
      yield* client.submit(0, tokens, short)
      yield* engine.waitFor("the first request to finish", (s) => s.completed === 1)
      yield* client.submit(1, tokens, short)
      expect((yield* client.nextReply()).requestId).toBe(1)
      expect((yield* coordinator.snapshot).inFlight).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("DuplicateReplies: the coordinator forwards the first copy and counts the second as unknown", () =>
    Effect.gen(function*() {
      const { client, coordinator, engine } = yield* setup()
      yield* engine.injectFault(Faults.duplicateReplies(1))
      yield* client.submit(0, tokens, short)
      expect((yield* client.nextReply()).requestId).toBe(0)
      const snapshot = yield* coordinator.waitFor("the duplicate", (s) => s.counters.unknownRequest === 1)
      expect(snapshot.inFlight).toBe(0)
      yield* client.submit(1, tokens, short)
      expect((yield* client.nextReply()).requestId).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("SendGarbage and SendWrongArity: the coordinator counts them and keeps serving", () =>
    Effect.gen(function*() {
      const { client, coordinator, engine } = yield* setup()
      yield* engine.injectFault(Faults.sendGarbage(Faults.garbageMessages.length))
      for (let id = 0; id < Faults.garbageMessages.length; id++) {
        yield* client.submit(id, [id], short)
        expect((yield* client.nextReply()).requestId).toBe(id)
      }
      yield* engine.injectFault(Faults.sendWrongArity(1))
      yield* client.submit(100, tokens, short)
      const snapshot = yield* coordinator.waitFor("the short batch", (s) => s.counters.badArity === 1)
      const c = snapshot.counters
      // One of the garbage messages is an empty frame: from an engine, that is a (repeated) registration.
      expect(c.malformed + c.unknownHeader).toBe(Faults.garbageMessages.length - 1)
      expect(snapshot.inFlight).toBe(1)
      yield* client.submit(101, tokens, short)
      expect((yield* client.nextReply()).requestId).toBe(101)
    }).pipe(Effect.scoped))

  it.effect("ReorderPartials: partial batches leave reversed", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* setup()
      yield* engine.injectFault(Faults.reorderPartials(2))
      yield* client.submit(0, tokens, { params: { num_tokens_to_generate: 3, streaming: true } })
      const messages = yield* client.untilReplies(1)
      const expected = Generation.tokens(tokens, 3)
      expect(messages.map((m) => m.header === H.ENGINE_REPLY ? "final" : m.body?.new_tokens)).toEqual([
        [expected[1]],
        [expected[0]],
        "final"
      ])
    }).pipe(Effect.scoped))

  it.effect("DelayReplies: a delayed engine is overtaken by a prompt one", () =>
    Effect.gen(function*() {
      const { client, cluster } = yield* setup({ engines: 2 })
      const [slow] = cluster.engines
      yield* slow!.injectFault(Faults.delayReplies(1_000))
      yield* client.submit(0, tokens, short) // mp-coord-0, delayed
      yield* slow!.waitFor("the delayed batch", (s) => s.faultsApplied.DelayReplies === 1)
      yield* client.submit(1, tokens, short) // mp-coord-1 (mp-coord-0 still holds request 0)
      const replies = yield* client.untilReplies(2)
      expect(replies.map((r) => r.requestId)).toEqual([1, 0])
    }).pipe(Effect.scoped))

  it.effect("Hang: the engine neither reads nor steps; the other engine keeps answering; clearing resumes it", () =>
    Effect.gen(function*() {
      const { client, cluster } = yield* setup({ engines: 2 })
      const [hung, other] = cluster.engines
      yield* hung!.injectFault(Faults.hang)
      yield* client.submit(0, tokens, short) // to the hung engine
      // Fifty round trips through the other engine: a working engine would have answered long before.
      for (let id = 1; id <= 50; id++) {
        yield* client.submit(id, tokens, short)
        expect((yield* client.nextReply()).requestId).toBe(id)
      }
      expect((yield* hung!.snapshot).receivedTotal).toBe(0)
      expect((yield* other!.snapshot).completed).toBe(50)
      yield* hung!.clearFaults("Hang")
      expect((yield* client.nextReply()).requestId).toBe(0)
    }).pipe(Effect.scoped))
})
