/**
 * The client in each Megatron-LM dialect against the testkit's coordinator and engines speaking
 * the same one, over real ZeroMQ sockets on loopback: submissions (text and token ids), streams
 * and aborts where the dialect has them, control signals, the KV hand-off on main and PR 6497;
 * and what the dialect lacks refused by the client, typed, before anything reaches the
 * coordinator (whose records show nothing dropped, and whose engines received nothing of it).
 */
import { describe, expect, it } from "@effect/vitest"
import { Dialect, Dialects } from "@mcore-effect/protocol"
import { Generation, type TestCluster, TestSupport, Vocabulary } from "@mcore-effect/testkit"
import { Effect, Fiber, Metric, Stream } from "effect"
import { ClientMetrics, InferenceClient } from "../src/index.ts"
import { setup, withRegistry } from "./support/Cluster.ts"

const text = "the quick fox runs over the dog"
const tokens = Vocabulary.tokenize(text)
const generated = (n: number) => Generation.tokens(tokens, n)

type Reason = { readonly reason: { readonly _tag: string; readonly error?: { readonly reason: { readonly _tag: string } } } }

/** The typed reason of a refused call: `UnsupportedByDialect` inside `InvalidRequest`. */
const reasonOf = <A>(effect: Effect.Effect<A, Reason>) =>
  Effect.flip(effect).pipe(Effect.map((e) => e.reason.error?.reason._tag ?? e.reason._tag))

/** The coordinator dropped nothing: no counter moved, no rejection recorded. */
const nothingDropped = (cluster: TestCluster.Handle) =>
  Effect.gen(function*() {
    const snapshot = yield* cluster.coordinator.snapshot
    expect(snapshot.rejected).toEqual([])
    const { malformed, badArity, unknownHeader, neverConnected, notFromEngine, unknownRequest } = snapshot.counters
    expect({ malformed, badArity, unknownHeader, neverConnected, notFromEngine, unknownRequest }).toEqual({
      malformed: 0,
      badArity: 0,
      unknownHeader: 0,
      neverConnected: 0,
      notFromEngine: 0,
      unknownRequest: 0
    })
    for (const engine of cluster.engines) expect((yield* engine.snapshot).counters.malformed).toBe(0)
  })

/** What every engine was sent, by header name. */
const receivedNames = (cluster: TestCluster.Handle) =>
  Effect.map(Effect.forEach(cluster.engines, (e) => e.snapshot), (snapshots) => snapshots.flatMap((s) => s.received.map((m) => m.name)))

const dropped = (reason: string) => Metric.value(Metric.withAttributes(ClientMetrics.messagesDropped, { reason }))

/** The request a reply is about (a core_v0.16 record's last request; any other reply itself). */
const requestOf = (reply: InferenceClient.Reply) => InferenceClient.requestOf(reply) as InferenceClient.RawReply

for (const protocol of ["main", "pr-6497", "core_v0.19", "core_v0.18", "core_v0.17", "core_v0.16"] as const) {
  const dialect = Dialects.get(protocol)
  const has = (feature: Dialect.Feature) => Dialect.supports(dialect, feature)
  /** The cluster and the client, both speaking `protocol`. */
  const cluster = (options?: Parameters<typeof setup>[0]) => setup({ protocol, ...options, client: { protocol, ...options?.client } })

  describe(`InferenceClient against the testkit, both speaking ${protocol}`, () => {
    it.live("submits text and token ids; the reply is that ref's, generated_text filled as its coordinator fills it", () =>
      Effect.gen(function*() {
        const { cluster: c, client } = yield* cluster()
        expect((yield* c.coordinator.snapshot).protocol).toBe(protocol)
        const rawText = yield* client.submit(text, { num_tokens_to_generate: 4, temperature: 0.5 })
        const fromText = requestOf(rawText)
        const fromIds = requestOf(yield* client.submit(tokens, { num_tokens_to_generate: 3 }))
        if (protocol === "core_v0.16") {
          // The record as it came, the client's latency set on it (as Megatron's 0.16 client sets it).
          expect(Object.keys(rawText)).toEqual(["requests", "latency"])
          expect(((rawText as InferenceClient.RawReply).requests as Array<unknown>).length).toBe(1)
          expect(rawText.latency).toBeGreaterThan(0)
          expect(fromText.latency).toBe(rawText.latency)
        } else expect(fromText).toBe(rawText)
        expect(fromText.generated_tokens).toEqual(generated(4))
        expect(fromIds.generated_tokens).toEqual(generated(3))
        expect(fromText.prompt).toBe(text)
        // PR 6497's coordinator detokenizes only when asked (`detokenize_generations`, a key its
        // SamplingParams lacks); main's and the releases' always.
        expect(fromText.generated_text).toBe(protocol === "pr-6497" ? null : Vocabulary.detokenize(generated(4)))
        // core_v0.16/17/18's coordinator also gives a token prompt its text.
        expect(fromIds.prompt).toBe(protocol === "core_v0.16" || protocol === "core_v0.17" || protocol === "core_v0.18" ? text : null)
        expect(Object.keys(fromText.sampling_params as object).slice(0, dialect.samplingFields.length)).toEqual(dialect.samplingFields)
        if (protocol === "pr-6497") {
          const asked = requestOf(yield* client.submit(tokens, { num_tokens_to_generate: 2, extra: { detokenize_generations: true } }))
          expect(asked.generated_text).toBe(Vocabulary.detokenize(generated(2)))
        }
        // What the engines were forwarded: the client's layout, one frame where the dialect's is.
        const submits = (yield* Effect.forEach(c.engines, (e) => e.snapshot))
          .flatMap((s) => s.received)
          .filter((m) => m.name === "SUBMIT_REQUEST")
        expect(submits.map((m) => m.frames.length)).toEqual(Array(submits.length).fill(dialect.framing === "single" ? 1 : 2))
        yield* nothingDropped(c)
      }).pipe(Effect.scoped, withRegistry))

    if (has("streaming")) {
      it.live("streams a request: its partials in order, then its reply", () =>
        Effect.gen(function*() {
          const { cluster: c, client } = yield* cluster({ engines: 1 })
          const events = yield* Stream.runCollect(client.stream(tokens, { num_tokens_to_generate: 5, streaming_interval: 2 }))
          const streamedTokens = events.flatMap((e) => (e._tag === "Tokens" ? e.newTokens : []))
          expect(streamedTokens).toEqual(generated(4))
          const last = events[events.length - 1]!
          expect(last._tag === "Final" && last.reply.generated_tokens).toEqual(generated(5))
          yield* nothingDropped(c)
        }).pipe(Effect.scoped, withRegistry))
    }

    if (has("abort")) {
      it.live("aborts: the ABORT reaches the engine holding the request, which finishes it", () =>
        Effect.gen(function*() {
          const { cluster: c, client } = yield* cluster({ engines: 1, engine: { stepMs: 20 } })
          const { requestId, reply } = yield* client.submitWithId(tokens, { num_tokens_to_generate: 1000 })
          const engine = c.engines[0]!
          yield* engine.waitFor("the request", (s) => s.active.length === 1)
          yield* client.abort(requestId)
          expect((yield* Effect.flip(reply)).reason._tag).toBe("RequestAborted")
          yield* engine.waitFor("the abort", (s) => s.aborted.length === 1)
          // The engine's final reply of the aborted request reaches the client, which drops it.
          yield* c.coordinator.waitFor("the aborted request's reply", (s) => s.inFlight === 0)
          yield* nothingDropped(c)
        }).pipe(Effect.scoped, withRegistry))
    } else {
      it.live("no abort: an interrupted request sends nothing; it runs to its end and its reply is dropped quietly", () =>
        Effect.gen(function*() {
          const { cluster: c, client } = yield* cluster({ engines: 1 })
          const engine = c.engines[0]!
          // Paused, the engine holds the request without stepping it: it is still in flight when interrupted.
          yield* client.pauseEngines()
          yield* engine.waitFor("PAUSE", (s) => s.state === "PAUSED")
          const fiber = yield* Effect.forkChild(client.submit(tokens, { num_tokens_to_generate: 3 }))
          yield* engine.waitFor("the request", (s) => s.active.length === 1)
          yield* Fiber.interrupt(fiber)
          expect(yield* client.pendingCount).toBe(0)
          yield* client.unpauseEngines()
          yield* engine.waitFor("the request's end", (s) => s.completed === 1)
          yield* c.coordinator.waitFor("its reply forwarded", (s) => s.inFlight === 0)
          // One connection keeps its order: once a later reply is here, the dropped one came before it.
          yield* client.submit(tokens, { num_tokens_to_generate: 1 })
          expect((yield* dropped("unknown_request")).count).toBe(1)
          // core_v0.16's PAUSE_ACK came to this client too: expected, not malformed.
          expect((yield* dropped("malformed")).count).toBe(0)
          expect((yield* Metric.value(Metric.withAttributes(ClientMetrics.controlAcks, { signal: "pause" }))).count)
            .toBe(has("pause") && dialect.headers.values.PAUSE_ACK !== undefined ? 1 : 0)
          expect((yield* engine.snapshot).aborted).toEqual([])
          expect(yield* receivedNames(c)).not.toContain("ABORT_REQUEST")
          yield* nothingDropped(c)
        }).pipe(Effect.scoped, withRegistry))
    }

    if (protocol !== "core_v0.16") it.live("control signals reach every engine in the dialect's own header values", () =>
      Effect.gen(function*() {
        const { cluster: c, client } = yield* cluster()
        yield* client.pauseEngines()
        yield* client.suspendEngines()
        yield* client.resumeEngines()
        yield* client.setGenerationEpoch(7)
        const expected = ["PAUSE", "SUSPEND", "RESUME", "SET_GENERATION_EPOCH"]
        if (has("profiler")) {
          yield* client.startCudaProfiler()
          yield* client.stopCudaProfiler()
          expected.push("START_CUDA_PROFILER", "STOP_CUDA_PROFILER")
        }
        yield* client.unpauseEngines()
        expected.push("UNPAUSE")
        for (const engine of c.engines) {
          const snapshot = yield* engine.waitFor("every signal", (s) => s.signals.length === expected.length)
          expect(snapshot.signals).toEqual(expected)
          expect(snapshot.generationEpoch).toBe(7)
          expect(snapshot.state).toBe("RUNNING")
          // Forwarded as the client sent it: one frame, `[h]` with the dialect's value.
          const pause = snapshot.received.find((m) => m.name === "PAUSE")!
          expect(Array.from(pause.frames[0]!)).toEqual([0x91, dialect.headers.values.PAUSE])
        }
        expect((yield* c.coordinator.snapshot).state).toBe("RUNNING")
        // STOP ends the engines: they leave the coordinator with the dialect's DISCONNECT.
        yield* client.pauseEngines()
        yield* client.stopEngines()
        yield* c.coordinator.waitFor("the engines to leave", (s) => s.engines.length === 0)
        yield* nothingDropped(c)
      }).pipe(Effect.scoped, withRegistry))

    if (has("kvHandoff")) {
      it.live("KV hand-off: the prefill pins, the decode carries kv_meta and block ids, RELEASE_KV unpins", () =>
        Effect.gen(function*() {
          const { cluster: c, client } = yield* cluster({ client: { deserialize: true } })
          const prefill = yield* client.submit(tokens, { num_tokens_to_generate: 1, do_kv_handoff: true })
          if (!InferenceClient.isDeserialized(prefill)) return expect.unreachable()
          const params = prefill.disaggregated_params as { request_id: number; block_ids: Array<number>; kv_meta: Record<string, unknown> }
          const decoded = yield* client.submitWithKvHandoff(tokens, { num_tokens_to_generate: 3 }, params.kv_meta, params.block_ids)
          if (!InferenceClient.isDeserialized(decoded)) return expect.unreachable()
          expect(decoded.generated_length).toBe(3)
          const handoffs = (yield* Effect.forEach(c.engines, (e) => e.snapshot)).flatMap((s) => s.kvHandoffs)
          expect(handoffs).toEqual([{ requestId: expect.any(Number), kvMeta: params.kv_meta, srcBlockIds: params.block_ids }])
          const pinnedBy = (yield* Effect.forEach(c.engines, (e) => e.snapshot)).findIndex((s) => s.pinned.includes(params.request_id))
          expect(pinnedBy).toBeGreaterThanOrEqual(0)
          yield* client.releaseKvHandoff(params.request_id)
          const holder = yield* c.engines[pinnedBy]!.waitFor("the release", (s) => s.released.length > 0)
          expect(holder.released).toEqual([params.request_id])
          yield* nothingDropped(c)
        }).pipe(Effect.scoped, withRegistry))
    }

    it.live("what the dialect lacks is refused by the client, typed, and never reaches the coordinator", () =>
      Effect.gen(function*() {
        const { cluster: c, client } = yield* cluster()
        const refused: Array<string> = []
        if (!has("streaming")) refused.push(yield* reasonOf(Stream.runDrain(client.stream(text))))
        if (!has("abort")) refused.push(yield* reasonOf(client.abort(0)))
        if (!has("kvHandoff")) {
          refused.push(yield* reasonOf(client.submitWithKvHandoff(tokens, undefined, { agent: "p" }, [0])))
          refused.push(yield* reasonOf(client.releaseKvHandoff(0)))
        }
        if (!has("media")) {
          refused.push(yield* reasonOf(client.submit(text, undefined, { multiModalData: { image: new Uint8Array([1]) } })))
        }
        if (!has("profiler")) refused.push(yield* reasonOf(client.startCudaProfiler()))
        if (!has("generationEpoch")) refused.push(yield* reasonOf(client.setGenerationEpoch(1)))
        if (!has("shutdown")) refused.push(yield* reasonOf(client.shutdownCoordinator()))
        refused.push(yield* reasonOf(client.submit(text, undefined, { offloadParams: { stage: 1 } })))
        expect(refused).toEqual(Array(refused.length).fill("UnsupportedByDialect"))
        // The connection is fine and nothing went before this submission.
        const reply = requestOf(yield* client.submit(tokens, { num_tokens_to_generate: 2 }))
        expect(reply.generated_tokens).toEqual(generated(2))
        expect(yield* receivedNames(c)).toEqual(["SUBMIT_REQUEST"])
        yield* nothingDropped(c)
      }).pipe(Effect.scoped, withRegistry))
  })
}

describe("InferenceClient against the testkit, both speaking core_v0.16: its acknowledged controls", () => {
  const protocol = "core_v0.16"
  const cluster = (options?: Parameters<typeof setup>[0]) => setup({ protocol, ...options, client: { protocol, ...options?.client } })
  const acks = (signal: "pause" | "stop") => Metric.value(Metric.withAttributes(ClientMetrics.controlAcks, { signal }))

  it.live("PAUSE is acked to the client; a second PAUSE is refused; suspend and resume pair as 0.16's client pairs them", () =>
    Effect.gen(function*() {
      const { cluster: c, client } = yield* cluster()
      yield* client.pauseEngines()
      // A second PAUSE before UNPAUSE would kill 0.16's coordinator: refused, typed, nothing sent.
      const second = yield* Effect.flip(client.pauseEngines())
      expect(second.reason._tag === "InvalidRequest" && second.reason.error.reason).toMatchObject({
        _tag: "UnsupportedByDialect",
        dialect: "core_v0.16"
      })
      for (const engine of c.engines) yield* engine.waitFor("the coordinator's PAUSE_ACK", (s) => s.signals.includes("PAUSE_ACK"))
      yield* client.unpauseEngines()
      // The PAUSE_ACK left the coordinator before this reply did, on the same connection.
      expect(requestOf(yield* client.submit(tokens, { num_tokens_to_generate: 2 })).generated_tokens).toEqual(generated(2))
      expect((yield* acks("pause")).count).toBe(1)
      // suspend = PAUSE + SUSPEND, resume = RESUME + UNPAUSE (megatron/core/inference/inference_client.py at 0.16).
      yield* client.suspendEngines()
      for (const engine of c.engines) yield* engine.waitFor("SUSPENDED", (s) => s.state === "SUSPENDED")
      yield* client.resumeEngines()
      for (const engine of c.engines) {
        const snapshot = yield* engine.waitFor("RUNNING again", (s) => s.state === "RUNNING" && s.signals.filter((x) => x === "UNPAUSE").length === 2)
        expect(snapshot.signals.filter((x) => x !== "PAUSE_ACK")).toEqual(["PAUSE", "UNPAUSE", "PAUSE", "SUSPEND", "RESUME", "UNPAUSE"])
        // `[h]` with 0.16's own values: UNPAUSE is 7 there.
        const unpause = snapshot.received.find((m) => m.name === "UNPAUSE")!
        expect(Array.from(unpause.frames[0]!)).toEqual([0x91, 7])
      }
      expect(requestOf(yield* client.submit(tokens, { num_tokens_to_generate: 3 })).generated_tokens).toEqual(generated(3))
      expect((yield* acks("pause")).count).toBe(2)
      expect((yield* dropped("malformed")).count).toBe(0)
      expect((yield* c.coordinator.snapshot).running).toBe(true)
      yield* nothingDropped(c)
    }).pipe(Effect.scoped, withRegistry))

  it.live("deserialize: the typed reply is the record's last request, with the client's latency", () =>
    Effect.gen(function*() {
      const { client } = yield* cluster({ client: { deserialize: true } })
      const reply = yield* client.submit(tokens, { num_tokens_to_generate: 3 })
      if (!InferenceClient.isDeserialized(reply)) return expect.unreachable()
      expect(reply.generated_tokens).toEqual(generated(3))
      expect(reply.latency).toBeGreaterThan(0)
      expect(InferenceClient.requestOf(reply)).toBe(reply)
      const tokensReceived = yield* Metric.value(ClientMetrics.tokensReceived)
      expect(tokensReceived.count).toBe(3)
    }).pipe(Effect.scoped, withRegistry))

  it.live("STOP: every engine acks, and the coordinator ends, as 0.16's does", () =>
    Effect.gen(function*() {
      const { cluster: c, client } = yield* cluster()
      yield* client.stopEngines()
      for (const engine of c.engines) yield* engine.waitFor("STOPPED", (s) => s.state === "STOPPED")
      yield* c.coordinator.waitFor("the loop to end", (s) => !s.running)
      expect((yield* dropped("malformed")).count).toBe(0)
    }).pipe(Effect.scoped, withRegistry))

  it.live("two clients' PAUSEs kill the coordinator (what one client cannot guard against)", () =>
    Effect.gen(function*() {
      const { cluster: c, client } = yield* cluster({ engines: 1 })
      const other = yield* InferenceClient.make({ address: c.address, protocol })
      yield* client.pauseEngines()
      yield* c.engines[0]!.waitFor("the coordinator's PAUSE_ACK", (s) => s.signals.includes("PAUSE_ACK"))
      yield* other.pauseEngines()
      yield* c.coordinator.waitFor("the coordinator to die", (s) => !s.running)
    }).pipe(Effect.scoped, withRegistry, TestSupport.quiet))
})
