/**
 * The seed's behaviours, one by one, against the testkit's coordinator and engines over real
 * ZeroMQ sockets on loopback.
 */
import { describe, expect, it } from "@effect/vitest"
import { expectTypeOf } from "vitest"
import { Msgpack, Reply } from "@mcore-effect/protocol"
import { Faults, Generation, TestSupport, Vocabulary } from "@mcore-effect/testkit"
import { Effect, Fiber, Metric, Result, Schedule, Stream, Tracer } from "effect"
import { ClientMetrics, InferenceClient } from "../src/index.ts"
import { setup, withRegistry } from "./support/Cluster.ts"

const text = "the quick fox runs over the dog"
const tokens = Vocabulary.tokenize(text)

describe("InferenceClient against the test coordinator and engines", () => {
  it.live("handshake: the coordinator counts the client once it has said CONNECT", () =>
    Effect.gen(function*() {
      const { cluster } = yield* setup()
      const snapshot = yield* cluster.coordinator.snapshot
      expect(snapshot.clients).toBe(1)
      expect(snapshot.counters.neverConnected).toBe(0)
    }).pipe(withRegistry))

  it.live("submit: the raw reply map, every key kept, with latency in seconds", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      const reply = yield* client.submit(tokens, { num_tokens_to_generate: 5, return_prompt_tokens: true })
      expect(InferenceClient.isDeserialized(reply)).toBe(false)
      expect(reply.generated_tokens).toEqual(Generation.tokens(tokens, 5))
      expect(reply.status).toBe("COMPLETED")
      expect(reply.prompt_tokens).toEqual(["tensor", tokens]) // raw: the tensor wrapper is still there
      expect(typeof reply.latency).toBe("number")
      expect(reply.latency).toBeGreaterThan(0)
      expect(reply.latency).toBeLessThan(60)
      expect(Object.keys(reply)).toEqual(expect.arrayContaining(["events", "tpot", "ttft", "sampling_params"]))
    }).pipe(withRegistry))

  it.live("submit with deserialize: a DynamicInferenceRequest, tensors unwrapped, latency set", () =>
    Effect.gen(function*() {
      const { client } = yield* setup({ client: { deserialize: true } })
      const reply = yield* client.submit(text, { num_tokens_to_generate: 4 })
      expect(InferenceClient.isDeserialized(reply)).toBe(true)
      if (!InferenceClient.isDeserialized(reply)) return
      expect(reply).toBeInstanceOf(Reply.DynamicInferenceRequest)
      expect(reply.generated_tokens).toEqual(Generation.tokens(tokens, 4))
      expect(reply.generated_text).toBe(Vocabulary.detokenize(Generation.tokens(tokens, 4)))
      expect(reply.latency).toBeGreaterThan(0)
    }).pipe(withRegistry))

  it.live("submit: the engine receives the five frames, prompt and parameters as sent", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup({ engines: 1 })
      const offload = { stage: [1, 2], tag: "x" }
      yield* client.submit(tokens, { num_tokens_to_generate: 2, temperature: 0.5, extra: { seed: 7 } }, { offloadParams: offload })
      const engine = yield* cluster.engines[0]!.snapshot
      const submit = engine.received.find((m) => m.name === "SUBMIT_REQUEST")!
      expect(submit.frames.length).toBe(5)
      const [header, , params, media] = Msgpack.decode(submit.frames[0]!) as [number, number, Record<string, unknown>, unknown]
      expect(header).toBe(20)
      expect(params).toMatchObject({ num_tokens_to_generate: 2, temperature: 0.5, seed: 7, streaming: false })
      expect(media).toBe(null)
      expect([...submit.frames[1]!]).toEqual([...Msgpack.encode(tokens)])
      expect(Msgpack.decode(submit.frames[3]!)).toBe(null)
      expect(Msgpack.decode(submit.frames[4]!)).toEqual(offload)
    }).pipe(withRegistry))

  it.live("submitWithId: the id is the client's, ids count up from 0", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup()
      const first = yield* client.submitWithId(text, { num_tokens_to_generate: 1 })
      const second = yield* client.submitWithId(text, { num_tokens_to_generate: 1 })
      expect([first.requestId, second.requestId]).toEqual([0, 1])
      yield* first.reply
      yield* second.reply
      const snapshot = yield* cluster.coordinator.snapshot
      const ids = snapshot.engines.flatMap((e) => e.received).filter((d) => d.name === "SUBMIT_REQUEST")
        .map((d) => d.clientRequestId).sort()
      expect(ids).toEqual([0, 1])
    }).pipe(withRegistry))

  it.live("stream: partials in order, then exactly one final reply, then the end", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      const events = yield* Stream.runCollect(client.stream(tokens, { num_tokens_to_generate: 6 }))
      const partials = events.slice(0, -1)
      const last = events[events.length - 1]!
      expect(partials.length).toBeGreaterThan(0)
      expect(partials.every((e) => e._tag === "Tokens")).toBe(true)
      expect(last._tag).toBe("Final")
      const streamed = partials.flatMap((e) => (e._tag === "Tokens" ? e.newTokens : []))
      const expected = Generation.tokens(tokens, 6)
      // In order: the partials spell out the start of what the final reply holds.
      expect(streamed).toEqual(expected.slice(0, streamed.length))
      if (last._tag === "Final") expect(last.reply.generated_tokens).toEqual(expected)
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(withRegistry))

  it.live("deserialize drives the reply type: make({ deserialize: true }) and layerDeserialized return typed replies", () =>
    Effect.gen(function*() {
      const { cluster } = yield* setup()
      const typed = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol, deserialize: true })
      const reply = yield* typed.submit(tokens, { num_tokens_to_generate: 2 })
      expectTypeOf(reply).toEqualTypeOf<Reply.DynamicInferenceRequest>()
      expect(reply).toBeInstanceOf(Reply.DynamicInferenceRequest)
      expect(reply.generated_tokens).toHaveLength(2)
      const raw = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol })
      const map = yield* raw.submit(tokens, { num_tokens_to_generate: 1 })
      type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false
      expectTypeOf<Same<typeof map, InferenceClient.RawReply>>().toEqualTypeOf<true>()
      expect(InferenceClient.isDeserialized(map)).toBe(false)
      const viaLayer = yield* InferenceClient.DeserializedInferenceClient.use((client) =>
        client.submit(tokens, { num_tokens_to_generate: 1 })
      ).pipe(Effect.provide(InferenceClient.layerDeserialized({ address: cluster.address, protocol: cluster.protocol })))
      expectTypeOf(viaLayer).toEqualTypeOf<Reply.DynamicInferenceRequest>()
      expect(viaLayer.generated_length).toBe(1)
    }).pipe(withRegistry))

  it.live("KV handoff: prefill pins, the decode request carries kv_meta and block ids, release unpins", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup({ client: { deserialize: true } })
      const prefill = yield* client.submit(tokens, { num_tokens_to_generate: 1, do_kv_handoff: true })
      if (!InferenceClient.isDeserialized(prefill)) return expect.unreachable()
      const params = prefill.disaggregated_params as { request_id: number; block_ids: Array<number>; kv_meta: Record<string, unknown> }
      const decoded = yield* client.submitWithKvHandoff(tokens, { num_tokens_to_generate: 3 }, params.kv_meta, params.block_ids)
      if (!InferenceClient.isDeserialized(decoded)) return expect.unreachable()
      expect(decoded.generated_length).toBe(3)
      const streamed = yield* Stream.runCollect(
        client.streamWithKvHandoff(tokens, { num_tokens_to_generate: 2 }, params.kv_meta, params.block_ids)
      )
      expect(streamed[streamed.length - 1]!._tag).toBe("Final")
      const handoffs = (yield* Effect.forEach(cluster.engines, (e) => e.snapshot)).flatMap((s) => s.kvHandoffs)
      expect(handoffs).toHaveLength(2)
      expect(handoffs[0]).toMatchObject({ kvMeta: params.kv_meta, srcBlockIds: params.block_ids })
      const pinnedBy = (yield* Effect.forEach(cluster.engines, (e) => e.snapshot))
        .findIndex((s) => s.pinned.includes(params.request_id))
      expect(pinnedBy).toBeGreaterThanOrEqual(0)
      yield* client.releaseKvHandoff(params.request_id)
      const holder = yield* cluster.engines[pinnedBy]!.waitFor("the release", (s) => s.released.length > 0)
      expect(holder.released).toEqual([params.request_id])
      expect(holder.pinned).toEqual([])
    }).pipe(withRegistry))

  it.live("control signals reach every engine; the state machine moves", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup()
      yield* client.pauseEngines()
      yield* client.suspendEngines()
      yield* client.resumeEngines()
      yield* client.setGenerationEpoch(7)
      yield* client.startCudaProfiler()
      yield* client.stopEngines()
      yield* client.pauseEngines()
      yield* client.unpauseEngines()
      yield* client.stopCudaProfiler()
      const expected = [
        "PAUSE",
        "SUSPEND",
        "RESUME",
        "SET_GENERATION_EPOCH",
        "START_CUDA_PROFILER",
        "STOP",
        "PAUSE",
        "UNPAUSE",
        "STOP_CUDA_PROFILER"
      ]
      for (const engine of cluster.engines) {
        const snapshot = yield* engine.waitFor("every signal", (s) => s.signals.length === expected.length)
        expect(snapshot.signals).toEqual(expected)
        expect(snapshot.generationEpoch).toBe(7)
        expect(snapshot.profiling).toBe(false)
      }
      expect((yield* cluster.coordinator.snapshot).state).toBe("RUNNING")
    }).pipe(withRegistry))

  it.live("shutdownCoordinator stops the coordinator and leaves the engines alone", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup()
      yield* client.shutdownCoordinator()
      yield* cluster.coordinator.awaitStopped
      const snapshot = yield* cluster.coordinator.snapshot
      expect(snapshot.shutdownReceived).toBe(true)
      for (const engine of cluster.engines) expect((yield* engine.snapshot).running).toBe(true)
    }).pipe(withRegistry))

  it.live("abort reaches the engine that holds the request", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup({ engines: 1, engine: { stepMs: 20 } })
      const { requestId, reply } = yield* client.submitWithId(tokens, { num_tokens_to_generate: 1000 })
      const engine = cluster.engines[0]!
      yield* engine.waitFor("the request", (s) => s.active.length === 1)
      yield* client.abort(requestId)
      expect((yield* Effect.flip(reply)).reason._tag).toBe("RequestAborted")
      const snapshot = yield* engine.waitFor("the abort", (s) => s.aborted.length === 1)
      expect(snapshot.aborted).toHaveLength(1)
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(withRegistry))

  it.live("interrupting the waiting fiber aborts on the engine", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup({ engines: 1, engine: { stepMs: 20 } })
      const fiber = yield* Effect.forkChild(client.submit(tokens, { num_tokens_to_generate: 1000 }))
      const engine = cluster.engines[0]!
      yield* engine.waitFor("the request", (s) => s.active.length === 1)
      yield* Fiber.interrupt(fiber)
      yield* engine.waitFor("the abort", (s) => s.aborted.length === 1)
      expect(yield* client.pendingCount).toBe(0)
      expect((yield* Metric.value(ClientMetrics.aborted)).count).toBe(1)
    }).pipe(withRegistry))

  it.live("blockHashes: null unless configured; with a prefix policy, frame 2 carries them", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup({
        engines: 1,
        coordinator: { policy: "longest_prefix", blockSizeTokens: 4 },
        client: { blockSizeTokens: 4, prefixCachingPolicy: "longest_prefix" }
      })
      expect(yield* client.blockHashes(text)).toBe(null)
      const hashes = yield* client.blockHashes(tokens)
      expect(hashes).toBeInstanceOf(BigUint64Array)
      expect(hashes!.length).toBe(Math.floor(tokens.length / 4))
      yield* client.submit(tokens, { num_tokens_to_generate: 1 })
      const delivered = (yield* cluster.engines[0]!.snapshot).received.find((m) => m.name === "SUBMIT_REQUEST")!
      expect(delivered.frames.length).toBe(5)
      const unconfigured = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol })
      expect(yield* unconfigured.blockHashes(tokens)).toBe(null)
      expect((yield* Effect.flip(client.blockHashes([1.5]))).reason._tag).toBe("InvalidRequest")
    }).pipe(withRegistry))

  it.live("duplicate replies from the coordinator are dropped and counted, never resolving anything twice", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup()
      yield* cluster.coordinator.injectFault(Faults.duplicateReplies(3))
      const replies = yield* Effect.forEach([1, 2, 3], (n) => client.submit(tokens, { num_tokens_to_generate: n }), {
        concurrency: "unbounded"
      })
      expect(replies.map((r) => r.generated_length)).toEqual([1, 2, 3])
      // The duplicates arrive right behind their originals; one more round trip lets them land.
      yield* client.submit(text, { num_tokens_to_generate: 1 })
      const dropped = Metric.withAttributes(ClientMetrics.messagesDropped, { reason: "unknown_request" })
      expect((yield* Metric.value(dropped)).count).toBe(3)
      expect((yield* Metric.value(ClientMetrics.completed)).count).toBe(4)
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(withRegistry))

  it.live("garbage and wrong-arity messages from the coordinator do not disturb requests in flight", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup()
      yield* cluster.coordinator.injectFault(Faults.sendGarbage(5))
      const replies = yield* Effect.forEach(
        Array.from({ length: 20 }, (_, i) => i),
        (i) => client.submit(tokens, { num_tokens_to_generate: 1 + (i % 3) }),
        { concurrency: "unbounded" }
      )
      expect(replies).toHaveLength(20)
      const malformed = Metric.withAttributes(ClientMetrics.messagesDropped, { reason: "malformed" })
      expect((yield* Metric.value(malformed)).count).toBe(5)
      // A reply that loses its body cannot finish its request, which times out alone; the other
      // request goes on. Which of the two loses its body depends on which reply the coordinator
      // sends first, so the test asserts one of each, not which.
      yield* cluster.coordinator.injectFault(Faults.sendWrongArity(1))
      const outcomes = yield* Effect.all(
        [
          Effect.result(client.submit(tokens, { num_tokens_to_generate: 1 }, { timeout: "3 seconds" })),
          Effect.result(client.submit(text, { num_tokens_to_generate: 2 }, { timeout: "3 seconds" }))
        ],
        { concurrency: "unbounded" }
      )
      expect(outcomes.filter(Result.isSuccess)).toHaveLength(1)
      const failures = outcomes.filter(Result.isFailure)
      expect(failures.map((f) => f.failure.reason._tag)).toEqual(["RequestTimeout"])
      expect((yield* Metric.value(malformed)).count).toBe(6)
    }).pipe(withRegistry))

  it.live("a coordinator crash mid-flight fails pending requests with CoordinatorLost; after its restart, requests work again", () =>
    Effect.gen(function*() {
      const { cluster, client } = yield* setup({
        engines: 1,
        engine: { stepMs: 10 },
        client: { heartbeatInterval: 50, heartbeatTimeout: 500 }
      })
      const long = { num_tokens_to_generate: 40 }
      const pending = yield* Effect.forkChild(
        Effect.forEach([1, 2, 3], () => client.submit(tokens, long), { concurrency: "unbounded" })
      )
      const stream = yield* Effect.forkChild(Stream.runCollect(client.stream(tokens, long)))
      yield* cluster.coordinator.waitFor("4 in flight", (s) => s.inFlight === 4)
      yield* cluster.coordinator.crash
      expect((yield* Effect.flip(Fiber.join(pending))).reason._tag).toBe("CoordinatorLost")
      expect((yield* Effect.flip(Fiber.join(stream))).reason._tag).toBe("CoordinatorLost")
      expect(yield* client.pendingCount).toBe(0)
      expect((yield* Effect.flip(client.submit(text))).reason._tag).toBe("CoordinatorLost")
      expect((yield* Metric.value(ClientMetrics.failed)).count).toBe(4)

      // The engine outlives the coordinator; once it is idle (its old requests' replies had nowhere
      // to go), a fresh coordinator on the same address takes the client back.
      yield* cluster.engines[0]!.waitFor("the old requests to finish", (s) => s.active.length === 0)
      yield* cluster.coordinator.restart
      yield* cluster.coordinator.waitFor("the client to reconnect", (s) => s.clients === 1)
      yield* cluster.coordinator.awaitEngines(1)
      const reply = yield* client.submit(text, { num_tokens_to_generate: 2 }).pipe(
        Effect.retry({
          while: (e) => e.reason._tag === "CoordinatorLost",
          schedule: Schedule.spaced("10 millis"),
          times: 500
        })
      )
      expect(reply.generated_length).toBe(2)
    }).pipe(withRegistry))

  it.live("spans carry the request id when a tracer is installed", () =>
    Effect.gen(function*() {
      const { spans, tracer } = TestSupport.recordingTracer()
      const { client } = yield* setup()
      yield* Effect.gen(function*() {
        yield* client.submit(text, { num_tokens_to_generate: 1 })
        yield* client.submit(text, { num_tokens_to_generate: 1 })
        yield* Stream.runDrain(client.stream(text, { num_tokens_to_generate: 2 }))
        yield* client.pauseEngines()
      }).pipe(Effect.withSpan("caller"), Effect.provideService(Tracer.Tracer, tracer))
      const named = spans.filter((s) => s.name.startsWith("InferenceClient."))
      expect(named.map((s) => [s.name, s.attributes.get("mcore.request_id")])).toEqual([
        ["InferenceClient.submit", 0],
        ["InferenceClient.submit", 1],
        ["InferenceClient.stream", 2],
        ["InferenceClient.pauseEngines", undefined]
      ])
      const caller = spans.find((s) => s.name === "caller")!
      for (const span of named) {
        expect(span.status._tag).toBe("Ended")
        expect(span.parent._tag === "Some" && span.parent.value.spanId).toBe(caller.spanId)
      }
    }).pipe(withRegistry))
})
