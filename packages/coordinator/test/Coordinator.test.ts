/**
 * `Coordinator`: engines dial it and register as Megatron-LM's do (the testkit's test engines,
 * which speak each dialect's engine side), clients (the project's `InferenceClient`) are served
 * through it; over real ZeroMQ sockets on loopback and over the in-memory transport.
 */
import { describe, expect, it } from "@effect/vitest"
import { InferenceClient, Transport } from "@mcore-effect/client"
import { DialectCatalog, MemorySocket, Msgpack } from "@mcore-effect/protocol"
import * as Zmq from "zeromq"
import { CoordinatorTokenizer, Generation, TestEngine, TestSupport, Vocabulary } from "@mcore-effect/testkit"
import { Effect, Exit, Fiber, Scope } from "effect"
import { Coordinator } from "../src/index.ts"

const prompt = "the quick fox runs over the dog"
const tokens = Vocabulary.tokenize(prompt)
const tokenizer = CoordinatorTokenizer.vocabulary

/** A tokenizer that is not the engines' vocabulary: every word in capitals. */
const capitals: CoordinatorTokenizer.CoordinatorTokenizer = {
  tokenize: (text) => Vocabulary.tokenize(text.toLowerCase()),
  detokenize: (ids, options) => Vocabulary.detokenize(ids, options).toUpperCase()
}

const reasonOf = <A>(effect: Effect.Effect<A, { readonly reason: { readonly _tag: string; readonly message: string } }>) =>
  Effect.map(Effect.flip(effect), (error) => error.reason)

describe("Coordinator", () => {
  it.live("engines dial it and register; a client's requests are answered, the text by the tokenizer it was given", () =>
    Effect.gen(function*() {
      const coordinator = yield* Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main", tokenizer: capitals })
      expect(coordinator.address).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/)
      expect((yield* coordinator.snapshot).engines).toEqual([])
      for (const rank of [0, 1]) {
        yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", rank, stepMs: 0 })
      }
      const registered = yield* coordinator.awaitEngines(2)
      expect(registered.engines.map((e) => e.identity)).toEqual(["mp-coord-0", "mp-coord-1"])
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" })
      const replies = yield* Effect.forEach([2, 3, 4, 5], (n) => client.submit(tokens, { num_tokens_to_generate: n }), {
        concurrency: "unbounded"
      })
      expect(replies.map((r) => r.generated_tokens)).toEqual([2, 3, 4, 5].map((n) => Generation.tokens(tokens, n)))
      expect(replies.map((r) => r.generated_text)).toEqual(
        [2, 3, 4, 5].map((n) => Vocabulary.detokenize(Generation.tokens(tokens, n)).toUpperCase())
      )
      const after = yield* coordinator.snapshot
      // load_balanced spread them; nothing refused, nothing left in flight.
      expect(after.engines.map((e) => e.receivedTotal)).toEqual([2, 2])
      expect(after).toMatchObject({ inFlight: 0, backlog: 0, clients: 1, rejected: [], policy: "load_balanced", protocol: "main" })
    }).pipe(Effect.scoped, TestSupport.withRegistry))

  it.live("a client that comes before any engine waits for one; SHUTDOWN ends it", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const coordinator = yield* Coordinator.make({ address: "inproc://coordinator", protocol: "pr-6497", tokenizer, network })
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: "pr-6497" }).pipe(
        Effect.provide(Transport.layerMemory(network))
      )
      const early = yield* Effect.forkChild(client.submit(tokens, { num_tokens_to_generate: 3 }))
      yield* coordinator.waitFor((s) => s.backlog === 1)
      yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "pr-6497", network, stepMs: 0 })
      const reply = yield* Fiber.join(early)
      expect(reply.generated_tokens).toEqual(Generation.tokens(tokens, 3))
      yield* client.shutdownCoordinator()
      yield* coordinator.awaitStopped
      expect((yield* coordinator.snapshot).running).toBe(false)
    }).pipe(Effect.scoped, TestSupport.withRegistry))

  it.live("a request aborted while it waits for a first engine is answered FAILED, not left owed", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const coordinator = yield* Coordinator.make({ address: "inproc://coordinator", protocol: "main", tokenizer, network })
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" }).pipe(
        Effect.provide(Transport.layerMemory(network))
      )
      const submitted = yield* client.submitWithId(tokens, { num_tokens_to_generate: 3 })
      yield* coordinator.waitFor((s) => s.backlog === 1)
      // The request stays pending here: the coordinator's answer reaches it.
      yield* client.sendAbort(submitted.requestId)
      const reply = (yield* submitted.reply) as Record<string, any>
      expect(reply.status).toBe("FAILED")
      expect(reply.events.map((e: { type: string; payload: unknown }) => [e.type, e.payload])).toEqual([
        ["FAIL", "aborted before an engine took it"]
      ])
      expect(yield* coordinator.snapshot).toMatchObject({ backlog: 0, inFlight: 0, counters: { abortsDropped: 0 } })
      // Before this answer, closing a client of a Megatron dialect waited for it for its whole
      // drainTimeout: the engine that comes later sees nothing of the request.
      yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", network, stepMs: 0 })
      const [engine] = (yield* coordinator.awaitEngines(1)).engines
      expect((yield* client.submit(tokens, { num_tokens_to_generate: 2 })).generated_tokens).toEqual(Generation.tokens(tokens, 2))
      expect(engine!.receivedTotal).toBe(0)
      expect((yield* coordinator.snapshot).engines[0]!.receivedTotal).toBe(1)
    }).pipe(Effect.scoped, TestSupport.withRegistry))

  it.live("bad options and an address it cannot bind fail typed, before anything is bound", () =>
    Effect.gen(function*() {
      const base = { address: "tcp://127.0.0.1:0", protocol: "main" as const, tokenizer }
      const noProtocol = yield* reasonOf(Coordinator.make({ ...base, protocol: undefined as never }).pipe(Effect.scoped))
      expect(noProtocol._tag).toBe("InvalidOption")
      expect(noProtocol.message).toMatch(/^invalid option protocol: /)
      const badTokenizer = yield* reasonOf(Coordinator.make({ ...base, tokenizer: {} as never }).pipe(Effect.scoped))
      expect(badTokenizer.message).toBe("invalid option tokenizer: must have tokenize and detokenize functions (the model's tokenizer)")
      const badBlock = yield* reasonOf(Coordinator.make({ ...base, blockSizeTokens: 0 }).pipe(Effect.scoped))
      expect(badBlock.message).toBe("invalid option blockSizeTokens: must be an integer >= 1")
      const first = yield* Coordinator.make(base)
      const taken = yield* reasonOf(Coordinator.make({ ...base, address: first.address }).pipe(Effect.scoped))
      expect(taken._tag).toBe("BindFailed")
      expect(taken.message).toMatch(new RegExp(`^cannot bind ${first.address}: `))
    }).pipe(Effect.scoped))
})

describe("Coordinator: Megatron-LM's prefix routing", () => {
  /** Two engines on loopback (block size 4), a client, and the coordinator's SUBMIT_REQUEST count per engine. */
  const setup = (scoring: "megatron" | "relative_load", policy: "longest_prefix" | "first_prefix_block" = "longest_prefix") =>
    Effect.gen(function*() {
      const coordinator = yield* Coordinator.make({
        address: "tcp://127.0.0.1:0",
        protocol: "main",
        tokenizer,
        policy,
        blockSizeTokens: 4,
        scoring
      })
      for (const rank of [0, 1]) {
        yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", rank, stepMs: 20, blockSizeTokens: 4 })
      }
      yield* coordinator.awaitEngines(2)
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" })
      const submitsTo = Effect.map(coordinator.snapshot, (s) =>
        s.engines.map((e) => e.received.filter((d) => d.name === "SUBMIT_REQUEST").length))
      return { coordinator, client, submitsTo }
    })

  // Two prompts of eight tokens: two blocks each, no block in common.
  const first = Vocabulary.tokenize("the quick fox runs over the old dog")
  const second = Vocabulary.tokenize("a stone wall stood by the river bank")

  /** Both prompts at once: the first to mp-coord-0 (a tie, the lowest index), the second to the idler mp-coord-1. */
  const bothTogether = (client: InferenceClient.Service) =>
    Effect.all([client.submit(first, { num_tokens_to_generate: 4 }), client.submit(second, { num_tokens_to_generate: 4 })], {
      concurrency: "unbounded"
    })

  for (const policy of ["longest_prefix", "first_prefix_block"] as const) {
    it.live(`megatron, ${policy}: a prefix served before goes back to the engine that served it, after its request ended`, () =>
      Effect.gen(function*() {
        const { client, coordinator, submitsTo } = yield* setup("megatron", policy)
        yield* bothTogether(client)
        expect(yield* submitsTo).toEqual([1, 1])
        // Two blocks a prompt, the first only under first_prefix_block.
        expect((yield* coordinator.snapshot).prefixTable).toBe(policy === "longest_prefix" ? 4 : 2)
        // Both ended; the second prompt again: to mp-coord-1, which holds its prefix cached.
        yield* client.submit(second, { num_tokens_to_generate: 2 })
        expect(yield* submitsTo).toEqual([1, 2])
      }).pipe(Effect.scoped, TestSupport.withRegistry))
  }

  it.live("relative_load: only requests in flight count, so the same prompt afterwards goes by load (the control)", () =>
    Effect.gen(function*() {
      const { client, coordinator, submitsTo } = yield* setup("relative_load")
      yield* bothTogether(client)
      expect(yield* submitsTo).toEqual([1, 1])
      yield* client.submit(second, { num_tokens_to_generate: 2 })
      expect(yield* submitsTo).toEqual([2, 1])
      expect((yield* coordinator.snapshot).prefixTable).toBe(0)
    }).pipe(Effect.scoped, TestSupport.withRegistry))
})

describe("Coordinator: an engine lost with requests in flight", () => {
  // libzmq's ROUTER never says whose connection went: the next send to the engine tells. Ours
  // says so when it happens.
  const cases = [
    { protocol: "main", transport: "zeromq", found: "at the next send", why: "it is unreachable" },
    { protocol: "core_v0.16", transport: "zeromq", found: "at the next send", why: "it is unreachable" },
    { protocol: "main", transport: "zmtp", found: "when its connection closes", why: "its connection closed" },
    { protocol: "core_v0.16", transport: "zmtp", found: "when its connection closes", why: "its connection closed" }
  ] as const
  for (const { found, protocol, transport, why } of cases) {
    it.live(`${protocol} on ${transport}: killed (its socket closed, no DISCONNECT): found gone ${found}, what it held answered FAILED, the new request served by the next engine`, () =>
      Effect.gen(function*() {
        const coordinator = yield* Coordinator.make({ address: "tcp://127.0.0.1:0", protocol, tokenizer, transport })
        // An engine slow enough that its request is still in flight when it dies.
        const doomed = yield* Scope.make()
        yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol, rank: 0, stepMs: 60_000 }).pipe(Scope.provide(doomed))
        yield* coordinator.awaitEngines(1)
        const client = yield* InferenceClient.make({ address: coordinator.address, protocol })
        const held = yield* Effect.forkChild(client.submit(tokens, { num_tokens_to_generate: 3 }))
        yield* coordinator.waitFor((s) => s.inFlight === 1)
        yield* Scope.close(doomed, Exit.void)
        // Its connection is down: on libzmq's ROUTER only the count of connections says so (one
        // less than the engines and clients known); ours takes it out of the pool.
        yield* coordinator.waitFor((s) => (transport === "zmtp" ? s.engines.length === 0 : s.clients === 0))
        // On our ROUTER, the held request is answered with no other send.
        const first = transport === "zmtp" ? yield* Fiber.join(held) as Effect.Effect<Record<string, any>, unknown> : undefined
        // The next submission never reaches it (on libzmq's, it finds it gone), so it waits for an engine.
        const next = yield* Effect.forkChild(client.submit(tokens, { num_tokens_to_generate: 2 }))
        const reply = first ?? (yield* Fiber.join(held) as Effect.Effect<Record<string, any>, unknown>)
        // core_v0.16 answers with the engine's record; its client deserializes the request in it.
        const failed = protocol === "core_v0.16" ? reply.requests[0] : reply
        expect(failed).toMatchObject({ status: "FAILED", generated_tokens: [] })
        if (protocol === "core_v0.16") {
          expect(failed).toMatchObject({ sampling_params: null, inference_parameters: null, events: [{ type: "FAIL", payload: null }] })
        } else {
          expect(failed.events[0].payload).toBe(`engine mp-coord-0 was lost (${why}) with this request in flight`)
        }
        const waiting = yield* coordinator.waitFor((s) => s.backlog === 1)
        expect(waiting).toMatchObject({ engines: [], inFlight: 0 })
        expect(waiting.counters.failedBack).toBe(1)
        yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol, rank: 1, stepMs: 0 })
        const served = (yield* Fiber.join(next)) as Record<string, any>
        const answer = protocol === "core_v0.16" ? served.requests.at(-1) : served
        expect(answer.generated_tokens).toEqual(Generation.tokens(tokens, 2))
      }).pipe(Effect.scoped, TestSupport.withRegistry, TestSupport.quiet))
  }

  it.live("its DISCONNECT (STOP while paused): what it held is answered FAILED at once, not left hanging", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const coordinator = yield* Coordinator.make({ address: "inproc://lost", protocol: "main", tokenizer, network })
      yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", network, rank: 0, stepMs: 0 })
      yield* coordinator.awaitEngines(1)
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" }).pipe(
        Effect.provide(Transport.layerMemory(network))
      )
      yield* client.pauseEngines()
      yield* coordinator.waitFor((s) => s.state === "PAUSED")
      const held = yield* Effect.forkChild(client.submit(tokens, { num_tokens_to_generate: 3 }))
      yield* coordinator.waitFor((s) => s.inFlight === 1)
      yield* client.stopEngines()
      const failed = yield* Fiber.join(held)
      expect(failed.status).toBe("FAILED")
      expect(String((failed.events as Array<{ payload: unknown }>)[0]!.payload)).toBe(
        "engine mp-coord-0 was lost (it sent DISCONNECT) with this request in flight"
      )
      expect(yield* coordinator.snapshot).toMatchObject({ engines: [], inFlight: 0, counters: { failedBack: 1 } })
    }).pipe(Effect.scoped, TestSupport.withRegistry, TestSupport.quiet))
})

describe("Coordinator without a tokenizer", () => {
  it.live("replies keep the engine's text; a text prompt a prefix policy must hash is answered FAILED, saying why; token ids are routed", () =>
    Effect.gen(function*() {
      const coordinator = yield* Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main", policy: "longest_prefix" })
      yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", rank: 0, stepMs: 0 })
      yield* coordinator.awaitEngines(1)
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" })
      const refused = (yield* client.submit(prompt, { num_tokens_to_generate: 2 })) as Record<string, any>
      expect(refused).toMatchObject({ status: "FAILED", generated_tokens: [] })
      expect(refused.events[0].payload).toBe(
        "a text prompt, and this coordinator has no tokenizer to hash it with for prefix routing: send token ids, or give the coordinator the model's tokenizer"
      )
      const served = yield* client.submit(tokens, { num_tokens_to_generate: 3 })
      expect(served.generated_tokens).toEqual(Generation.tokens(tokens, 3))
      // Not detokenized here: the engine's text (main's engines leave it to the coordinator: none).
      expect(served.generated_text ?? null).toBe(null)
      const after = yield* coordinator.snapshot
      expect(after.counters).toMatchObject({ refused: 1, malformed: 0 })
      expect(after.engines[0]!.receivedTotal).toBe(1)
    }).pipe(Effect.scoped, TestSupport.withRegistry, TestSupport.quiet))

  it.live("load_balanced never hashes: a text prompt goes to the engine, which tokenizes it", () =>
    Effect.gen(function*() {
      const coordinator = yield* Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main" })
      yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", rank: 0, stepMs: 0 })
      yield* coordinator.awaitEngines(1)
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" })
      const reply = yield* client.submit(prompt, { num_tokens_to_generate: 3 })
      expect(reply.generated_tokens).toEqual(Generation.tokens(tokens, 3))
      expect((yield* coordinator.snapshot).counters.refused).toBe(0)
    }).pipe(Effect.scoped, TestSupport.withRegistry))
})

describe("Coordinator: a client that leaves with replies owed", () => {
  it.live("the replies owed to it are dropped and counted; the coordinator serves the others (Megatron's dies of it from core_v0.17 on)", () =>
    Effect.gen(function*() {
      const coordinator = yield* Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main", tokenizer })
      yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", rank: 0, stepMs: 0 })
      yield* coordinator.awaitEngines(1)
      const control = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" })
      yield* control.pauseEngines()
      yield* coordinator.waitFor((s) => s.state === "PAUSED")
      const goneScope = yield* Scope.make()
      const gone = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" }).pipe(Scope.provide(goneScope))
      yield* Effect.forkChild(Effect.forEach([1, 2, 3], (n) => gone.submit(tokens, { num_tokens_to_generate: n }), { concurrency: "unbounded" }))
      yield* coordinator.waitFor((s) => s.inFlight === 3)
      yield* Scope.close(goneScope, Exit.void)
      yield* coordinator.waitFor((s) => s.clients === 1) // the one that left is down
      yield* control.unpauseEngines()
      const after = yield* coordinator.waitFor((s) => s.inFlight === 0 && s.counters.unreachable === 3)
      expect(after.running).toBe(true)
      const reply = yield* control.submit(tokens, { num_tokens_to_generate: 2 })
      expect(reply.generated_tokens).toEqual(Generation.tokens(tokens, 2))
    }).pipe(Effect.scoped, TestSupport.withRegistry, TestSupport.quiet))
})

describe("Coordinator: an engine removed twice", () => {
  it.live("its DISCONNECT twice, then its socket gone: removed once, counted, the loop goes on (Megatron's main dies of the second removal)", () =>
    Effect.gen(function*() {
      const coordinator = yield* Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main", tokenizer })
      yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", rank: 0, stepMs: 0 })
      // A raw engine rank: registers with one empty message, then leaves twice over.
      const rank = new Zmq.Dealer({ routingId: "mp-coord-7", linger: 0 })
      rank.connect(coordinator.address)
      yield* Effect.promise(() => rank.send(new Uint8Array(0)))
      yield* coordinator.awaitEngines(2)
      const disconnect = Msgpack.encode([DialectCatalog.get("main").headers.values.DISCONNECT!])
      yield* Effect.promise(() => rank.send(disconnect))
      yield* Effect.promise(() => rank.send(disconnect))
      yield* coordinator.waitFor((s) => s.engines.length === 1)
      rank.close()
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: "main" })
      const replies = yield* Effect.forEach([1, 2, 3], (n) => client.submit(tokens, { num_tokens_to_generate: n }))
      expect(replies.map((r) => r.generated_tokens)).toEqual([1, 2, 3].map((n) => Generation.tokens(tokens, n)))
      const after = yield* coordinator.snapshot
      expect(after).toMatchObject({ running: true, engines: [{ identity: "mp-coord-0" }] })
      expect(after.counters.internalErrors).toBe(0)
    }).pipe(Effect.scoped, TestSupport.withRegistry, TestSupport.quiet))
})
