/**
 * The test coordinator on a ROUTER of our own (`transport: "zmtp"`): libzmq's DEALERs (the test
 * engines and a raw client, zeromq.js) register and are answered; a restart binds the same port
 * again; closed, nothing of it is left in the process; CurveZMQ with it is refused by name.
 */
import { describe, expect, it } from "@effect/vitest"
import { Headers } from "@mcore-effect/protocol"
import { Effect } from "effect"
import { Generation, TestCluster, TestCoordinator, Vocabulary } from "../src/index.ts"
import * as RawClient from "./support/RawClient.ts"

const H = Headers.values

/** The process's TCP handles now (listeners and connections). */
const tcpHandles = (): number => process.getActiveResourcesInfo().filter((r) => r.startsWith("TCP")).length

describe("TestCoordinator, transport: zmtp", () => {
  it.live("libzmq's engines and client are served; a restart binds the same port; closed, it leaves nothing open", () =>
    Effect.gen(function*() {
      const before = tcpHandles()
      yield* Effect.scoped(Effect.gen(function*() {
        const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 0 }, coordinator: { transport: "zmtp" } })
        const prompt = Vocabulary.tokenize("the cat runs")
        const client = yield* RawClient.make(cluster.address)
        yield* client.connect
        yield* client.submit(0, prompt, { params: { num_tokens_to_generate: 3 } })
        const reply = yield* client.nextReply()
        expect(reply.header).toBe(H.ENGINE_REPLY)
        expect(reply.body?.["generated_tokens"]).toEqual(Generation.tokens(prompt, 3))
        // Our listener and its connections are handles of this process (libzmq's are not).
        expect(tcpHandles()).toBeGreaterThan(before)

        yield* cluster.coordinator.restart
        expect((yield* cluster.coordinator.snapshot).restarts).toBe(1)
        yield* cluster.coordinator.awaitEngines(2)
        yield* client.connect
        yield* client.submit(1, prompt, { params: { num_tokens_to_generate: 2 } })
        const again = yield* client.nextReply()
        expect(again.body?.["generated_tokens"]).toEqual(Generation.tokens(prompt, 2))
      }))
      // The release settles once the listener and every connection are released.
      expect(tcpHandles()).toBe(before)
    }))

  it.live("CurveZMQ with the zmtp transport, or a transport it does not know, is refused before anything is bound", () =>
    Effect.gen(function*() {
      const curve = { publicKey: "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7", secretKey: "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6" }
      const refused = yield* Effect.flip(TestCoordinator.make({ transport: "zmtp", curve }))
      expect(refused.reason).toMatchObject({ _tag: "InvalidOption", option: "curve" })
      const unknown = yield* Effect.flip(TestCoordinator.make({ transport: "nng" as never }))
      expect(unknown.reason).toMatchObject({ _tag: "InvalidOption", option: "transport" })
    }).pipe(Effect.scoped))
})
