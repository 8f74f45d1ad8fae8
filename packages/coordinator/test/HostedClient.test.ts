/**
 * A coordinator in this process and a client on it (`HostedClient.layer`): engines dial the
 * coordinator, the client's requests are answered through it, and another client may dial the
 * same address; an allowlist that leaves out the client's own address is refused before anything
 * is bound.
 */
import { describe, expect, it } from "@effect/vitest"
import { InferenceClient } from "@mcore-effect/client"
import { CoordinatorTokenizer, Generation, TestEngine, TestSupport, Vocabulary } from "@mcore-effect/testkit"
import { Context, Effect, Fiber, Layer, Stream } from "effect"
import * as Net from "node:net"
import { Coordinator, HostedClient } from "../src/index.ts"

const tokens = Vocabulary.tokenize("the quick fox runs over the dog")

describe("HostedClient", () => {
  it("dials a wildcard bind on its loopback, anything else as bound", () => {
    // IPv6's wildcard: the IPv4 ones go the same way, and no test names them (the house rule
    // keeps every address in tests on loopback).
    expect(HostedClient.dialAddress("tcp://[::]:5555")).toBe("tcp://[::1]:5555")
    expect(HostedClient.dialAddress("tcp://127.0.0.1:41234")).toBe("tcp://127.0.0.1:41234")
    expect(HostedClient.dialAddress("tcp://[::1]:41234")).toBe("tcp://[::1]:41234")
    expect(HostedClient.dialAddress("ipc:///tmp/x")).toBe("ipc:///tmp/x")
  })

  it.live("engines dial the coordinator; the client in this process and one from outside are answered", () =>
    Effect.gen(function*() {
      const context = yield* Layer.build(
        HostedClient.layer({ address: "tcp://127.0.0.1:0", protocol: "main", tokenizer: CoordinatorTokenizer.vocabulary })
      )
      const coordinator = Context.get(context, Coordinator.Coordinator)
      const client = Context.get(context, InferenceClient.InferenceClient)
      // A request before any engine: held until the first registers.
      const early = yield* Effect.forkChild(client.submit(tokens, { num_tokens_to_generate: 3 }))
      yield* coordinator.waitFor((s) => s.backlog === 1)
      for (const rank of [0, 1]) {
        yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", rank, stepMs: 0 })
      }
      yield* coordinator.awaitEngines(2)
      expect((yield* Fiber.join(early)).generated_tokens).toEqual(Generation.tokens(tokens, 3))
      const replies = yield* Effect.forEach([2, 4], (n) => client.submit(tokens, { num_tokens_to_generate: n }), { concurrency: "unbounded" })
      expect(replies.map((r) => r.generated_tokens)).toEqual([2, 4].map((n) => Generation.tokens(tokens, n)))
      const events = yield* Stream.runCollect(client.stream(tokens, { num_tokens_to_generate: 5 }))
      const last = events.at(-1)
      expect(last?._tag === "Final" ? last.reply.generated_tokens : undefined).toEqual(Generation.tokens(tokens, 5))
      // Another client dials the same address, as `mcore control` would.
      const outside = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" })
      expect((yield* outside.submit(tokens, { num_tokens_to_generate: 2 })).generated_tokens).toEqual(Generation.tokens(tokens, 2))
      expect(yield* coordinator.snapshot).toMatchObject({ clients: 2, inFlight: 0, backlog: 0 })
    }).pipe(Effect.scoped, TestSupport.withRegistry))

  it.live("an allowlist without the client's own address is refused before anything is bound", () =>
    Effect.gen(function*() {
      // A port known to be free: nothing may listen on it afterwards either.
      const port = yield* Effect.promise(() =>
        new Promise<number>((resolve) => {
          const probe = Net.createServer().listen(0, "127.0.0.1", () => {
            const { port } = probe.address() as Net.AddressInfo
            probe.close(() => resolve(port))
          })
        })
      )
      const failed = yield* Effect.flip(
        Layer.build(
          HostedClient.layer({
            address: `tcp://127.0.0.1:${port}`,
            protocol: "main",
            tokenizer: CoordinatorTokenizer.vocabulary,
            allowFrom: "10.0.0.0/8"
          })
        )
      )
      expect(failed.message).toContain("must admit 127.0.0.1")
      const refused = yield* Effect.promise(() =>
        new Promise<boolean>((resolve) => {
          const socket = Net.connect(port, "127.0.0.1")
          socket.once("connect", () => (socket.destroy(), resolve(false)))
          socket.once("error", () => resolve(true))
        })
      )
      expect(refused).toBe(true)
      // With 127.0.0.1 admitted, the same layer serves.
      const context = yield* Layer.build(
        HostedClient.layer({
          address: `tcp://127.0.0.1:${port}`,
          protocol: "main",
          tokenizer: CoordinatorTokenizer.vocabulary,
          allowFrom: "10.0.0.0/8,127.0.0.1"
        })
      )
      yield* TestEngine.make({ coordinatorAddress: `tcp://127.0.0.1:${port}`, protocol: "main", stepMs: 0 })
      const reply = yield* Context.get(context, InferenceClient.InferenceClient).submit(tokens, { num_tokens_to_generate: 2 })
      expect(reply.generated_tokens).toEqual(Generation.tokens(tokens, 2))
    }).pipe(Effect.scoped, TestSupport.withRegistry))
})
