/**
 * `allowFrom`: who may connect to the coordinator, on both transports. On loopback, 127.0.0.1 is
 * allowed and 127.0.0.2 is not: a client (a libzmq DEALER sending the protocol's CONNECT, as
 * Megatron's Python client does) and an engine (the testkit's, a libzmq DEALER) dialing from
 * 127.0.0.2 (libzmq's `tcp://source;destination`) are refused before anything is read, counted as
 * `not-allowed` and logged once per address, while a client and an engine from 127.0.0.1 are
 * served. Options the allowlist cannot take are refused before anything is bound.
 */
import { describe, expect, it } from "@effect/vitest"
import { InferenceClient } from "@mcore-effect/client"
import { Dialect, DialectCatalog } from "@mcore-effect/protocol"
import { CoordinatorTokenizer, Generation, TestEngine, TestSupport, Vocabulary } from "@mcore-effect/testkit"
import { Effect, Result } from "effect"
import * as Zmq from "zeromq"
import { Coordinator } from "../src/index.ts"

const tokens = Vocabulary.tokenize("the quick fox runs over the dog")
const main = DialectCatalog.get("main")

/** `address` dialed from `source` (libzmq's source-address form). */
const from = (source: string, address: string) => address.replace("tcp://", `tcp://${source}:0;`)

/** A libzmq DEALER dialing from `source` that sends the protocol's CONNECT, as a client does. */
const rawClient = (source: string, address: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dealer = new Zmq.Dealer({ linger: 0, immediate: false })
      dealer.connect(from(source, address))
      const connect = Dialect.encodeClient(main, { _tag: "Connect" })
      if (Result.isFailure(connect)) throw new Error("CONNECT did not encode")
      void dealer.send(connect.success).catch(() => {})
      return dealer
    }),
    (dealer) => Effect.sync(() => dealer.close())
  )

describe("Coordinator allowFrom", () => {
  for (const transport of ["zmtp", "zeromq"] as const) {
    it.live(`${transport}: a client and an engine from 127.0.0.2 are refused, counted and logged once; 127.0.0.1 is served`, () =>
      TestSupport.withLogs((logs) =>
        Effect.gen(function*() {
          const coordinator = yield* Coordinator.make({
            address: "tcp://127.0.0.1:0",
            protocol: "main",
            tokenizer: CoordinatorTokenizer.vocabulary,
            transport,
            allowFrom: "127.0.0.1"
          })
          // An engine outside the allowlist dials (and dials again, libzmq's reconnect); one inside registers.
          yield* TestEngine.make({ coordinatorAddress: from("127.0.0.2", coordinator.address), protocol: "main", rank: 1, stepMs: 0 })
          yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", rank: 0, stepMs: 0 })
          yield* coordinator.awaitEngines(1)
          const outside = yield* rawClient("127.0.0.2", coordinator.address)
          const refused = yield* coordinator.waitFor((s) => (s.connectionsRefused["not-allowed"] ?? 0) >= 2)
          expect(refused.engines.map((e) => e.identity)).toEqual(["mp-coord-0"])
          // Nothing of theirs was read: no CONNECT acknowledged, no message rejected, no client counted.
          const client = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" })
          const reply = yield* client.submit(tokens, { num_tokens_to_generate: 3 })
          expect(reply.generated_tokens).toEqual(Generation.tokens(tokens, 3))
          const after = yield* coordinator.snapshot
          expect(after).toMatchObject({ clients: 1, rejected: [] })
          expect(after.engines.map((e) => e.identity)).toEqual(["mp-coord-0"])
          const answered = yield* Effect.promise(() =>
            Promise.race([outside.receive().then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 200))])
          )
          expect(answered).toBe(false)
          expect(logs.filter((line) => line.includes("a connection from 127.0.0.2 was refused"))).toHaveLength(1)
        }).pipe(Effect.scoped), "Warn"
      ))
  }

  it.live("a malformed list, an ipc:// address or an in-memory network is refused before anything is bound", () =>
    Effect.gen(function*() {
      const refusal = (options: Partial<Coordinator.Options>) =>
        Effect.flip(Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main", ...options })).pipe(
          Effect.map((error) => error.reason)
        )
      expect(yield* refusal({ allowFrom: "10.0.0.0/33" })).toMatchObject({ _tag: "InvalidOption", option: "allowFrom", why: expect.stringContaining("0 to 32") })
      expect(yield* refusal({ allowFrom: "coordinator.internal" })).toMatchObject({ option: "allowFrom", why: expect.stringContaining("host names") })
      expect(yield* refusal({ allowFrom: "" })).toMatchObject({ option: "allowFrom" })
      expect(yield* refusal({ address: "ipc:///tmp/never-bound", allowFrom: "127.0.0.1" })).toMatchObject({ option: "allowFrom", why: expect.stringContaining("tcp:// only") })
    }))
})
