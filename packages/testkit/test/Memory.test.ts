/**
 * The test coordinator and its engines on an in-memory network (`MemorySocket`) instead of
 * ZeroMQ: the same loop, reached without sockets. A raw client speaks to it by hand.
 */
import { describe, expect, it } from "@effect/vitest"
import { Headers, MemorySocket } from "@mcore-effect/protocol"
import { Effect } from "effect"
import { Generation, TestCluster, TestCoordinator, TestEngine } from "../src/index.ts"
import * as RawClient from "./support/RawClient.ts"

const H = Headers.values

describe("the test coordinator on an in-memory network", () => {
  it.effect("engines register, a client's submissions are routed and answered, and the client is counted until it leaves", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const cluster = yield* TestCluster.make({ engines: 2, network })
      expect(cluster.address).toMatch(/^inproc:\/\/coordinator-\d+$/)
      expect((yield* cluster.coordinator.snapshot).engines.map((e) => e.identity)).toEqual(["mp-coord-0", "mp-coord-1"])
      yield* Effect.gen(function*() {
        const client = yield* RawClient.make(cluster.address, network)
        yield* client.connect
        yield* cluster.coordinator.waitFor("the client", (s) => s.clients === 1)
        for (let id = 0; id < 4; id++) yield* client.submit(id, [1, 2, 3], { params: { num_tokens_to_generate: 3 } })
        const replies = yield* client.untilReplies(4)
        expect(replies.map((r) => r.requestId).sort()).toEqual([0, 1, 2, 3])
        for (const reply of replies) expect(reply.body?.generated_tokens).toEqual(Generation.tokens([1, 2, 3], 3))
        const snapshot = yield* cluster.coordinator.snapshot
        expect(snapshot.engines.map((e) => e.load)).toEqual([0, 0])
        expect(snapshot.engines.map((e) => e.received.length)).toEqual([2, 2])
      }).pipe(Effect.scoped)
      const after = yield* cluster.coordinator.waitFor("the client to leave", (s) => s.clients === 0)
      expect(after.rejected).toEqual([])
    }).pipe(Effect.scoped))

  it.effect("a restart on the same address takes the engines and the client back", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const cluster = yield* TestCluster.make({ engines: 1, network })
      const client = yield* RawClient.make(cluster.address, network)
      yield* client.connect
      yield* cluster.coordinator.restart
      yield* cluster.coordinator.awaitEngines(1)
      expect((yield* cluster.engines[0]!.snapshot).registrations).toBe(2)
      // A restarted coordinator knows no client: the client says CONNECT again, as the real one does.
      yield* client.connect
      yield* client.submit(0, [4, 5], { params: { num_tokens_to_generate: 2 } })
      const reply = yield* client.nextReply()
      expect([reply.header, reply.requestId]).toEqual([H.ENGINE_REPLY, 0])
      expect((yield* cluster.coordinator.snapshot).restarts).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("any address name is taken in memory (the loopback check is ZeroMQ's), CurveZMQ is not", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      // Not a loopback address, so ZeroMQ would refuse it (TestCoordinator.test.ts): in memory nothing is bound.
      const coordinator = yield* TestCoordinator.make({ network, address: "memory://coordinator-a" })
      expect(coordinator.address).toBe("memory://coordinator-a")
      const curve = { publicKey: "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7", secretKey: "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6" }
      const refused = yield* Effect.flip(TestCoordinator.make({ network, curve }))
      expect(refused.reason).toMatchObject({ _tag: "InvalidOption", option: "curve" })
      const engine = yield* Effect.flip(
        TestEngine.make({ coordinatorAddress: coordinator.address, network, curve: { serverKey: curve.publicKey, ...curve } })
      )
      expect(engine.reason).toMatchObject({ _tag: "InvalidOption", option: "curve" })
    }).pipe(Effect.scoped))
})
