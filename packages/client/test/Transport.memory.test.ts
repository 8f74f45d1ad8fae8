/**
 * The client against the testkit's coordinator and engines over the in-memory transport
 * (`Transport.memory`, `MemorySocket`): no socket anywhere, the coordinator and its engines on the
 * same in-memory network as the client. These tests are about the client's logic (submit,
 * stream, abort, control signals, closing with replies owed, a coordinator that goes away, many
 * connections at once); the same behaviours over real ZeroMQ sockets, the wire, are the other
 * tests' subject.
 */
import { describe, expect, it } from "@effect/vitest"
import { MemorySocket } from "@mcore-effect/protocol"
import { Generation, TestCluster, Vocabulary } from "@mcore-effect/testkit"
import { Cause, Effect, Exit, Fiber, Layer, Schedule, Scope, Stream } from "effect"
import { type ClientConfig, InferenceClient, Transport } from "../src/index.ts"
import { withRegistry } from "./support/Cluster.ts"

const text = "the quick fox runs over the dog"
const tokens = Vocabulary.tokenize(text)

/** A cluster on a fresh in-memory network, and a client reaching it over that network. */
const memorySetup = (
  options?: Omit<TestCluster.Options, "network"> & { readonly client?: Partial<ClientConfig.ClientOptions> }
) =>
  Effect.gen(function*() {
    const network = new MemorySocket.Network()
    const cluster = yield* TestCluster.make({ engines: 2, ...options, network })
    const client = yield* InferenceClient.make({ address: cluster.address, protocol: "reference", ...options?.client }).pipe(
      Effect.provide(Transport.layerMemory(network))
    )
    return { network, cluster, client }
  })

const reasonOf = <A>(effect: Effect.Effect<A, { readonly reason: { readonly _tag: string } }>) =>
  Effect.map(Effect.flip(effect), (error) => error.reason._tag)

describe("InferenceClient over the in-memory transport, against the test coordinator", () => {
  it.live("submit: the handshake, then each reply the engine's tokens for its prompt", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* memorySetup()
      expect(cluster.address).toMatch(/^inproc:\/\//)
      const snapshot = yield* cluster.coordinator.snapshot
      expect(snapshot.clients).toBe(1)
      expect(yield* client.connected).toBe(true)
      const replies = yield* Effect.forEach(
        [2, 3, 4, 5],
        (n) => client.submit(tokens, { num_tokens_to_generate: n }),
        { concurrency: "unbounded" }
      )
      expect(replies.map((r) => r.generated_tokens)).toEqual([2, 3, 4, 5].map((n) => Generation.tokens(tokens, n)))
      const after = yield* cluster.coordinator.snapshot
      // Both engines served, nothing refused, every reply delivered.
      expect(after.engines.map((e) => e.received.filter((d) => d.name === "SUBMIT_REQUEST").length)).toEqual([2, 2])
      expect(after.rejected).toEqual([])
      expect(after.counters.unreachable).toBe(0)
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(withRegistry))

  it.live("stream: two streams at once, each its own partials in order, then its one final reply", () =>
    Effect.gen(function*() {
      const { client } = yield* memorySetup({ engines: 1 })
      const prompts = [tokens, Vocabulary.tokenize("a red dog")]
      const runs = yield* Effect.forEach(
        prompts,
        (prompt) => Stream.runCollect(client.stream(prompt, { num_tokens_to_generate: 6 })),
        { concurrency: "unbounded" }
      )
      runs.forEach((events, i) => {
        const expected = Generation.tokens(prompts[i]!, 6)
        const finals = events.filter((e) => e._tag === "Final")
        expect(finals).toHaveLength(1)
        expect(events.at(-1)).toBe(finals[0])
        const streamed = events.flatMap((e) => (e._tag === "Tokens" ? e.newTokens : []))
        expect(streamed.length).toBeGreaterThan(0)
        expect(streamed).toEqual(expected.slice(0, streamed.length))
        expect(finals[0]!._tag === "Final" && finals[0]!.reply.generated_tokens).toEqual(expected)
      })
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(withRegistry))

  it.live("abort, and a stream ended early: the engine ends both, the waiter fails with RequestAborted", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* memorySetup({ engines: 1, engine: { stepMs: 20 } })
      const engine = cluster.engines[0]!
      const submitted = yield* client.submitWithId(tokens, { num_tokens_to_generate: 100_000 })
      // One partial taken, then the stream ends: its request is aborted.
      const taken = yield* Stream.runCollect(Stream.take(client.stream(tokens, { num_tokens_to_generate: 100_000 }), 1))
      expect(taken.map((e) => e._tag)).toEqual(["Tokens"])
      yield* engine.waitFor("the stream's abort", (s) => s.aborted.length === 1 && s.active.length === 1)
      yield* client.abort(submitted.requestId)
      expect(yield* reasonOf(submitted.reply)).toBe("RequestAborted")
      yield* engine.waitFor("both aborts", (s) => s.aborted.length === 2 && s.active.length === 0)
      expect(yield* client.pendingCount).toBe(0)
      expect((yield* cluster.coordinator.snapshot).inFlight).toBe(0)
    }).pipe(withRegistry))

  it.live("pause and unpause move the coordinator's state and reach every engine; requests run after", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* memorySetup()
      yield* client.pauseEngines()
      yield* cluster.coordinator.waitFor("PAUSED", (s) => s.state === "PAUSED")
      for (const engine of cluster.engines) yield* engine.waitFor("PAUSE", (s) => s.state === "PAUSED")
      yield* client.unpauseEngines()
      yield* cluster.coordinator.waitFor("RUNNING", (s) => s.state === "RUNNING")
      for (const engine of cluster.engines) {
        const snapshot = yield* engine.waitFor("UNPAUSE", (s) => s.state === "RUNNING" && s.signals.length === 2)
        expect(snapshot.signals).toEqual(["PAUSE", "UNPAUSE"])
      }
      expect((yield* client.submit(tokens, { num_tokens_to_generate: 3 })).generated_tokens).toEqual(Generation.tokens(tokens, 3))
    }).pipe(withRegistry))

  it.live("closing with replies owed (main): the pending request fails with ClientClosed, is aborted, and its reply is waited for", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const cluster = yield* TestCluster.make({ engines: 1, protocol: "main", engine: { stepMs: 20 }, network })
      const scope = yield* Scope.make()
      const client = yield* InferenceClient.make({ address: cluster.address, protocol: "main", drainTimeout: "1 minute" }).pipe(
        Effect.provide(Transport.layerMemory(network)),
        Scope.provide(scope)
      )
      const waiter = yield* Effect.forkChild(reasonOf(client.submit(tokens, { num_tokens_to_generate: 100_000 })))
      const engine = cluster.engines[0]!
      yield* engine.waitFor("the request", (s) => s.active.length === 1)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      expect(yield* Fiber.join(waiter)).toBe("ClientClosed")
      // The close aborts what is owed; the engine ends it at its next step and replies, and the
      // close ends once that reply is in: nothing is routed to a client that is gone.
      yield* Fiber.join(closing)
      const snapshot = yield* engine.snapshot
      expect(snapshot.aborted).toHaveLength(1)
      expect(snapshot.active).toEqual([])
      const coordinator = yield* cluster.coordinator.waitFor("the client to leave", (s) => s.clients === 0)
      expect(coordinator.inFlight).toBe(0)
      expect(coordinator.counters.unreachable).toBe(0)
      expect(coordinator.running).toBe(true)
    }).pipe(Effect.scoped, withRegistry))

  it.live("a coordinator that goes away fails what is pending with CoordinatorLost; one bound again takes the client back", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* memorySetup({ engines: 1, engine: { stepMs: 10 } })
      const samplingParams = { num_tokens_to_generate: 40 }
      // A batch that settles each request on its own, and a stream.
      const batch = yield* Effect.forkChild(
        Stream.runCollect(client.submitAllSettled([0, 1, 2].map(() => ({ prompt: tokens, samplingParams }))))
      )
      const stream = yield* Effect.forkChild(Stream.runCollect(client.stream(tokens, samplingParams)))
      yield* cluster.coordinator.waitFor("4 in flight", (s) => s.inFlight === 4)
      yield* cluster.coordinator.crash
      const settled = yield* Fiber.join(batch)
      expect(settled.map((s) => (Exit.isFailure(s.exit) ? Cause.squash(s.exit.cause) : s.exit.value))).toEqual(
        [0, 1, 2].map(() => expect.objectContaining({ reason: expect.objectContaining({ _tag: "CoordinatorLost" }) }))
      )
      expect(yield* reasonOf(Fiber.join(stream))).toBe("CoordinatorLost")
      expect(yield* client.pendingCount).toBe(0)
      expect(yield* client.connected).toBe(false)
      expect(yield* reasonOf(client.submit(text))).toBe("CoordinatorLost")

      yield* cluster.engines[0]!.waitFor("the old requests to finish", (s) => s.active.length === 0)
      yield* cluster.coordinator.restart
      yield* cluster.coordinator.waitFor("the client to reconnect", (s) => s.clients === 1)
      yield* cluster.coordinator.awaitEngines(1)
      const reply = yield* client.submit(text, { num_tokens_to_generate: 2 }).pipe(
        Effect.retry({ while: (e) => e.reason._tag === "CoordinatorLost", schedule: Schedule.spaced("10 millis"), times: 500 })
      )
      expect(reply.generated_length).toBe(2)
      expect(yield* client.connected).toBe(true)
    }).pipe(withRegistry))

  it.live("connections are values: two coordinators, three clients on one transport, each its own link; closing one leaves the others", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const a = yield* TestCluster.make({ engines: 1, network })
      const b = yield* TestCluster.make({ engines: 1, network })
      const connect = (address: string) =>
        Effect.gen(function*() {
          const scope = yield* Scope.make()
          const client = yield* InferenceClient.make({ address, protocol: "reference" }).pipe(Scope.provide(scope))
          return { client, close: Scope.close(scope, Exit.void) }
        })
      const [toA1, toA2, toB] = yield* Effect.forEach([a.address, a.address, b.address], connect).pipe(
        Effect.provide(Layer.succeed(Transport.Transport, Transport.memory(network)))
      )
      expect((yield* a.coordinator.snapshot).clients).toBe(2)
      expect((yield* b.coordinator.snapshot).clients).toBe(1)
      const [r1, r2, r3] = yield* Effect.all([
        toA1!.client.submit(tokens, { num_tokens_to_generate: 1 }),
        toA2!.client.submit(tokens, { num_tokens_to_generate: 2 }),
        toB!.client.submit(tokens, { num_tokens_to_generate: 3 })
      ], { concurrency: "unbounded" })
      expect([r1.generated_length, r2.generated_length, r3.generated_length]).toEqual([1, 2, 3])
      expect((yield* a.engines[0]!.snapshot).completed).toBe(2)
      expect((yield* b.engines[0]!.snapshot).completed).toBe(1)

      yield* toA1!.close
      yield* a.coordinator.waitFor("one client left", (s) => s.clients === 1)
      expect(yield* reasonOf(toA1!.client.submit(tokens))).toBe("ClientClosed")
      expect((yield* toA2!.client.submit(tokens, { num_tokens_to_generate: 4 })).generated_length).toBe(4)
      expect((yield* toB!.client.submit(tokens, { num_tokens_to_generate: 5 })).generated_length).toBe(5)
      yield* toA2!.close
      yield* toB!.close
    }).pipe(Effect.scoped, withRegistry))

  it.live("the transport decides which addresses it takes: ZeroMQ refuses inproc://, memory takes it", () =>
    Effect.gen(function*() {
      const refused = yield* Effect.flip(Effect.scoped(InferenceClient.make({ address: "inproc://coordinator", protocol: "reference" })))
      expect(refused.reason._tag).toBe("InvalidAddress")
      expect(Transport.zeromq.addressProblem("inproc://coordinator")).toBeDefined()
      expect(Transport.memory(new MemorySocket.Network()).addressProblem("inproc://coordinator")).toBeUndefined()
    }).pipe(withRegistry))
})
