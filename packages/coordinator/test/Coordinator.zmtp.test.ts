/**
 * The coordinator on a ROUTER of our own (`transport: "zmtp"`, the protocol's `ZmtpRouter`):
 * Megatron-style engines (the testkit's, zeromq.js DEALERs, libzmq underneath) dial it and
 * register, and a client over its own DEALER (`Transport.zmtp`) is served, so the coordinator and
 * the client speak ZMTP without libzmq between them. CurveZMQ with it is refused by name.
 */
import { describe, expect, it } from "@effect/vitest"
import { InferenceClient, Transport } from "@mcore-effect/client"
import { CoordinatorTokenizer, Generation, TestEngine, TestSupport, Vocabulary } from "@mcore-effect/testkit"
import { Effect, Stream } from "effect"
import * as Net from "node:net"
import * as Zmq from "zeromq"
import { Coordinator } from "../src/index.ts"

const tokens = Vocabulary.tokenize("the quick fox runs over the dog")

describe("Coordinator on its own ROUTER (transport: zmtp)", () => {
  it.live("libzmq's engines register; a client over its own DEALER is answered, plain and streamed", () =>
    Effect.gen(function*() {
      const coordinator = yield* Coordinator.make({
        address: "tcp://127.0.0.1:0",
        protocol: "main",
        tokenizer: CoordinatorTokenizer.vocabulary,
        transport: "zmtp"
      })
      expect(coordinator.address).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/)
      for (const rank of [0, 1]) {
        yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", rank, stepMs: 0 })
      }
      const registered = yield* coordinator.awaitEngines(2)
      expect(registered.engines.map((e) => e.identity)).toEqual(["mp-coord-0", "mp-coord-1"])
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" }).pipe(
        Effect.provide(Transport.layerZmtp)
      )
      const replies = yield* Effect.forEach([2, 3, 4, 5], (n) => client.submit(tokens, { num_tokens_to_generate: n }), {
        concurrency: "unbounded"
      })
      expect(replies.map((r) => r.generated_tokens)).toEqual([2, 3, 4, 5].map((n) => Generation.tokens(tokens, n)))
      const events = yield* Stream.runCollect(client.stream(tokens, { num_tokens_to_generate: 6 }))
      const last = events.at(-1)
      expect(last?._tag).toBe("Final")
      expect(last?._tag === "Final" ? last.reply.generated_tokens : undefined).toEqual(Generation.tokens(tokens, 6))
      const after = yield* coordinator.snapshot
      expect(after).toMatchObject({ inFlight: 0, backlog: 0, clients: 1, rejected: [] })
      expect(after.engines.map((e) => e.receivedTotal).reduce((a, b) => a + b, 0)).toBe(5)
    }).pipe(Effect.scoped, TestSupport.withRegistry))

  it.live("a peer that is not ZMTP and a PUB socket are closed, counted by reason and logged once each; a client is served meanwhile", () =>
    TestSupport.withLogs((logs) =>
      Effect.gen(function*() {
        const coordinator = yield* Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main", tokenizer: CoordinatorTokenizer.vocabulary })
        yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", stepMs: 0 })
        yield* coordinator.awaitEngines(1)
        const port = Number(/:(\d+)$/.exec(coordinator.address)![1])
        // Not ZMTP: an HTTP request.
        const http = Net.connect(port, "127.0.0.1", () => http.write("GET / HTTP/1.1\r\n\r\n"))
        http.on("error", () => {})
        yield* Effect.addFinalizer(() => Effect.sync(() => http.destroy()))
        // A socket type a ROUTER may not talk to (RFC 28): libzmq's PUB.
        const publisher = new Zmq.Publisher({ linger: 0 })
        yield* Effect.addFinalizer(() => Effect.sync(() => publisher.close()))
        publisher.connect(coordinator.address)
        const refused = yield* coordinator.waitFor((s) => (s.connectionsRefused["signature"] ?? 0) >= 1 && (s.connectionsRefused["peer-type"] ?? 0) >= 1)
        expect(refused.connectionsRefused["signature"]).toBe(1)
        const client = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" })
        const reply = yield* client.submit(tokens, { num_tokens_to_generate: 3 })
        expect(reply.generated_tokens).toEqual(Generation.tokens(tokens, 3))
        expect(logs.filter((line) => line.includes("a connection was closed: ZMTP: signature"))).toHaveLength(1)
        expect(logs.some((line) => line.includes("a connection was closed: a PUB cannot talk to a ROUTER"))).toBe(true)
      }).pipe(Effect.scoped), "Warn"
    ))

  it.live("CurveZMQ with the zmtp transport, or a transport it does not know, is refused before anything is bound", () =>
    Effect.gen(function*() {
      const pair = Zmq.curveKeyPair()
      const curve = yield* Effect.flip(Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main", transport: "zmtp", curve: pair }))
      expect(curve.reason).toMatchObject({ _tag: "InvalidOption", option: "curve" })
      const unknown = yield* Effect.flip(
        Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main", transport: "nng" as never })
      )
      expect(unknown.reason).toMatchObject({ _tag: "InvalidOption", option: "transport" })
    }).pipe(Effect.scoped))
})
