import { describe, expect, it } from "@effect/vitest"
import { Headers, Msgpack, Reply } from "@mcore-effect/protocol"
import { Effect, Result } from "effect"
import { Generation, TestCluster, Vocabulary } from "../src/index.ts"
import * as RawClient from "./support/RawClient.ts"

const H = Headers.values

/** A cluster with one engine (or more) and a connected client. */
const setup = (options?: TestCluster.Options) =>
  Effect.gen(function*() {
    const cluster = yield* TestCluster.make({ engines: 1, ...options })
    const client = yield* RawClient.make(cluster.address)
    yield* client.connect
    return { cluster, client, engine: cluster.engines[0]! }
  })

/** The first index at which `needle` occurs in `tokens`, scanning whole tokens. */
const firstIndexOf = (tokens: ReadonlyArray<number>, needle: ReadonlyArray<number>) => {
  for (let i = 0; i + needle.length <= tokens.length; i++) {
    if (needle.every((t, j) => tokens[i + j] === t)) return i
  }
  return -1
}

const prompt = "the quick fox runs over the dog"
const promptTokens = Vocabulary.tokenize(prompt)

describe("TestEngine: generation", () => {
  it.effect("generates the same tokens for the same prompt on any engine, in a reply shaped like DynamicInferenceRequest", () =>
    Effect.gen(function*() {
      const { client } = yield* setup({ engines: 2 })
      yield* client.submit(0, prompt, { params: { num_tokens_to_generate: 6 } })
      yield* client.submit(1, promptTokens, { params: { num_tokens_to_generate: 6, return_prompt_tokens: true } })
      const replies = (yield* client.untilReplies(2)).sort((a, b) => a.requestId - b.requestId)
      const expected = Generation.tokens(promptTokens, 6)
      expect(replies.map((r) => r.body?.generated_tokens)).toEqual([expected, expected])
      const [text, tokens] = replies.map((r) => r.body!)
      expect(text).toMatchObject({
        prompt,
        prompt_tokens: null,
        prompt_length: promptTokens.length,
        status: "COMPLETED",
        generated_length: 6,
        generated_text: Vocabulary.detokenize(expected),
        num_cached_tokens: 0,
        policy_epoch: null,
        disaggregated_params: null
      })
      expect(text!.sampling_params).toMatchObject({ num_tokens_to_generate: 6, detokenize_generations: true, seed: null })
      expect(text!.events.map((e: { type: string }) => e.type)).toEqual(["ADD_ENGINE", "ADD_CONTEXT", "FINISH"])
      expect(text!.tpot).toHaveLength(5)
      expect(typeof text!.ttft).toBe("number")
      expect(tokens!.prompt).toBe(null)
      expect(tokens!.prompt_tokens).toEqual(["tensor", promptTokens])
      // The protocol package's reader takes it as it would the Python engine's.
      for (const body of [text, tokens]) {
        const decoded = Reply.decodeReply(body)
        expect(Result.isSuccess(decoded)).toBe(true)
      }
    }).pipe(Effect.scoped))

  it.effect("honours num_tokens_total and the engine's default length", () =>
    Effect.gen(function*() {
      const { client } = yield* setup({ engine: { defaultTokensToGenerate: 3 } })
      yield* client.submit(0, promptTokens, { params: { num_tokens_total: promptTokens.length + 4 } })
      yield* client.submit(1, promptTokens)
      const replies = (yield* client.untilReplies(2)).sort((a, b) => a.requestId - b.requestId)
      expect(replies.map((r) => r.body?.generated_length)).toEqual([4, 3])
    }).pipe(Effect.scoped))

  it.effect("stops at termination_id, keeping the token in generated_tokens and out of generated_text", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      const stream = Generation.tokens(promptTokens, 8)
      const stopAt = stream.findIndex((t, i) => i >= 2 && stream.indexOf(t) === i)
      const terminationId = stream[stopAt]!
      yield* client.submit(0, promptTokens, { params: { num_tokens_to_generate: 8, termination_id: terminationId } })
      const reply = yield* client.nextReply()
      expect(reply.body?.generated_tokens).toEqual(stream.slice(0, stopAt + 1))
    }).pipe(Effect.scoped))

  it.effect("stops at stop_words; the stop sequence stays out unless detokenize_stop_sequence", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      const stream = Generation.tokens(promptTokens, 12)
      const stop = stream.slice(3, 5)
      const at = firstIndexOf(stream, stop)
      const stopWord = Vocabulary.detokenize(stop)
      yield* client.submit(0, promptTokens, { params: { num_tokens_to_generate: 12, stop_words: ["zebra", stopWord] } })
      yield* client.submit(1, promptTokens, {
        params: { num_tokens_to_generate: 12, stop_words: [stopWord], detokenize_stop_sequence: true }
      })
      const replies = (yield* client.untilReplies(2)).sort((a, b) => a.requestId - b.requestId)
      expect(replies[0]!.body?.generated_tokens).toEqual(stream.slice(0, at))
      expect(replies[1]!.body?.generated_tokens).toEqual(stream.slice(0, at + 2))
      expect(replies[1]!.body?.generated_text).toBe(Vocabulary.detokenize(stream.slice(0, at + 2)))
    }).pipe(Effect.scoped))

  it.effect("leaves generated_text null when detokenize_generations is off (the reply body is forwarded untouched)", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      yield* client.submit(0, prompt, { params: { num_tokens_to_generate: 2, detokenize_generations: false } })
      expect((yield* client.nextReply()).body?.generated_text).toBe(null)
    }).pipe(Effect.scoped))

  it.effect("streams partials every streaming_interval tokens, then the final reply with every token", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      yield* client.submit(0, promptTokens, {
        params: { num_tokens_to_generate: 7, streaming: true, streaming_interval: 2, return_log_probs: true }
      })
      const messages = yield* client.untilReplies(1)
      const expected = Generation.tokens(promptTokens, 7)
      expect(messages.map((m) => m.header)).toEqual([
        H.ENGINE_REPLY_PARTIAL,
        H.ENGINE_REPLY_PARTIAL,
        H.ENGINE_REPLY_PARTIAL,
        H.ENGINE_REPLY
      ])
      const partials = messages.slice(0, 3).map((m) => m.body!)
      expect(partials.map((p) => p.new_tokens)).toEqual([expected.slice(0, 2), expected.slice(2, 4), expected.slice(4, 6)])
      expect(partials[0]!.new_log_probs).toEqual(expected.slice(0, 2).map(Generation.logProbOf))
      expect(messages[3]!.body?.generated_tokens).toEqual(expected)
      expect(messages[3]!.body?.generated_log_probs).toEqual(expected.map(Generation.logProbOf))
    }).pipe(Effect.scoped))

  it.effect("steps all active requests together, one token each per step, replies batched per step", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* setup()
      yield* client.signal(H.PAUSE)
      for (let id = 0; id < 5; id++) yield* client.submit(id, [id], { params: { num_tokens_to_generate: 3 } })
      yield* engine.waitFor("5 active requests", (s) => s.active.length === 5)
      const before = (yield* engine.snapshot).steps
      yield* client.signal(H.UNPAUSE)
      yield* client.untilReplies(5)
      expect((yield* engine.snapshot).steps - before).toBe(3)
    }).pipe(Effect.scoped))

  it.effect("generates at most maxActiveRequests per step; the rest wait in arrival order", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* setup({ engine: { maxActiveRequests: 2 } })
      yield* client.signal(H.PAUSE)
      for (let id = 0; id < 5; id++) yield* client.submit(id, [id], { params: { num_tokens_to_generate: 1 } })
      yield* engine.waitFor("5 requests", (s) => s.active.length === 5)
      const before = (yield* engine.snapshot).steps
      yield* client.signal(H.UNPAUSE)
      const replies = yield* client.untilReplies(5)
      expect(replies.map((r) => r.requestId)).toEqual([0, 1, 2, 3, 4])
      expect((yield* engine.snapshot).steps - before).toBe(3)
    }).pipe(Effect.scoped))
})

describe("TestEngine: control", () => {
  it.effect("stops stepping while paused or suspended, and resumes where it was", () =>
    Effect.gen(function*() {
      const { client, cluster, engine } = yield* setup()
      yield* client.signal(H.PAUSE)
      yield* client.submit(0, promptTokens, { params: { num_tokens_to_generate: 1 } })
      yield* engine.waitFor("the request", (s) => s.active.length === 1)
      // One step would finish it. Twenty signals later, each seen by the engine, it has not stepped.
      for (let i = 0; i < 10; i++) {
        yield* client.signal(H.START_CUDA_PROFILER)
        yield* client.signal(H.STOP_CUDA_PROFILER)
      }
      yield* client.signal(H.SUSPEND)
      const paused = yield* engine.waitFor("the signals", (s) => s.signals.length === 22)
      expect(paused.state).toBe("SUSPENDED")
      expect(paused.completed).toBe(0)
      expect(paused.profiling).toBe(false)
      yield* client.signal(H.RESUME)
      yield* client.signal(H.UNPAUSE)
      expect((yield* client.nextReply()).requestId).toBe(0)
      expect((yield* engine.snapshot).state).toBe("RUNNING")
      expect((yield* cluster.coordinator.snapshot).state).toBe("RUNNING")
    }).pipe(Effect.scoped))

  it.effect("drops aborted requests when configured to (no reply), and finishes them with what they have by default", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* setup({ engine: { abort: "drop" } })
      yield* client.signal(H.PAUSE)
      yield* client.submit(0, promptTokens)
      yield* client.submit(1, promptTokens, { params: { num_tokens_to_generate: 1 } })
      yield* client.signal(H.ABORT_REQUEST, 0)
      const snapshot = yield* engine.waitFor("the abort", (s) => s.aborted.length === 1)
      expect(snapshot.active).toEqual([1])
      yield* client.signal(H.UNPAUSE)
      // Only request 1 answers; request 0 stays in flight at the coordinator (nobody will answer it).
      expect((yield* client.nextReply()).requestId).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("stamps policy_epoch and kv_cache_epoch after SET_GENERATION_EPOCH", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      yield* client.signal(H.PAUSE)
      yield* client.submit(0, promptTokens, { params: { num_tokens_to_generate: 2 } })
      yield* client.signal(H.SET_GENERATION_EPOCH, 5)
      yield* client.signal(H.SET_GENERATION_EPOCH, 6)
      yield* client.submit(1, promptTokens, { params: { num_tokens_to_generate: 2 } })
      yield* client.signal(H.UNPAUSE)
      const replies = (yield* client.untilReplies(2)).sort((a, b) => a.requestId - b.requestId)
      const last = promptTokens.length - 1
      expect(replies[0]!.body?.policy_epoch).toEqual([[0, 5], [last, 6]])
      expect(replies[0]!.body?.kv_cache_epoch).toEqual([[0, 5], [last, 6]])
      expect(replies[1]!.body?.policy_epoch).toEqual([[0, 6]])
    }).pipe(Effect.scoped))

  it.effect("STOP ends the engine: it says DISCONNECT and leaves the routing pool", () =>
    Effect.gen(function*() {
      const { client, cluster, engine } = yield* setup()
      yield* client.signal(H.PAUSE)
      yield* client.signal(H.STOP)
      const snapshot = yield* cluster.coordinator.waitFor("the engine to leave", (s) => s.engines.length === 0)
      expect(snapshot.state).toBe("RUNNING")
      expect((yield* engine.snapshot).state).toBe("STOPPED")
    }).pipe(Effect.scoped))
})

describe("TestEngine: KV", () => {
  it.effect("records KV-handoff submissions, counts the prompt as cached and starts from the resume token", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* setup({ engine: { blockSizeTokens: 4 } })
      // Not the stream's own first token: the decode's first token comes from kv_meta.
      const resume = Generation.tokens(promptTokens, 1)[0]! + 1
      const kvMeta = { agent: "nixl-7", layout: [1, 2], resume_tokens: [resume] }
      yield* client.submitWithKv(3, promptTokens, kvMeta, [10, 11], { num_tokens_to_generate: 2 })
      const reply = yield* client.nextReply()
      expect(reply.requestId).toBe(3)
      expect(reply.body?.num_cached_tokens).toBe(7)
      expect(reply.body?.generated_tokens).toEqual([resume, Generation.tokens(promptTokens, 2)[1]])
      // A decode's request is a new one on its engine: no hand-off parameters of its own.
      expect(reply.body?.disaggregated_params).toBeNull()
      const snapshot = yield* engine.snapshot
      expect(snapshot.kvHandoffs).toEqual([{ requestId: 0, kvMeta, srcBlockIds: [10, 11] }])
      expect(snapshot.received[0]!.frames.length).toBe(3)
    }).pipe(Effect.scoped))

  it.effect("pins KV for do_kv_handoff requests and releases it on RELEASE_KV (unknown ids ignored)", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* setup()
      yield* client.submit(0, promptTokens, { params: { num_tokens_to_generate: 1, do_kv_handoff: true } })
      const reply = yield* client.nextReply()
      const pinned = reply.body?.disaggregated_params
      expect(pinned).toMatchObject({ kv_meta: { engine: "mp-coord-0" } })
      expect((yield* engine.snapshot).pinned).toEqual([pinned.request_id])
      yield* client.signal(H.RELEASE_KV, 4242)
      yield* client.signal(H.RELEASE_KV, pinned.request_id)
      const snapshot = yield* engine.waitFor("the release", (s) => s.released.length === 1)
      expect(snapshot.released).toEqual([pinned.request_id])
      expect(snapshot.pinned).toEqual([])
      expect(snapshot.counters.unknownRelease).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("reports num_cached_tokens from the blocks it has seen before", () =>
    Effect.gen(function*() {
      const { client } = yield* setup({ engine: { blockSizeTokens: 4 } })
      const tokens = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
      const cached: Array<number> = []
      for (const [id, p] of [[0, tokens], [1, tokens], [2, [1, 2, 3, 4, 0, 0, 0, 0]], [3, [9, 2, 3, 4, 5, 6, 7, 8]]] as const) {
        yield* client.submit(id, p, { params: { num_tokens_to_generate: 1 } })
        const reply = yield* client.nextReply()
        cached.push(reply.body?.num_cached_tokens)
      }
      expect(cached).toEqual([0, 8, 4, 0])
    }).pipe(Effect.scoped))
})

describe("TestEngine: malformed input", () => {
  it.effect("drops and counts messages it cannot read, and keeps going", () =>
    Effect.gen(function*() {
      const { client, cluster, engine } = yield* setup()
      // An undecodable prompt passes the coordinator (it does not read prompts under load_balanced).
      yield* client.send([Msgpack.encode([H.SUBMIT_REQUEST, 0, RawClient.params(), null]), Msgpack.encode({}), RawClient.submitFrames(0, "x")[2]!, Uint8Array.of(0xc0), Uint8Array.of(0xc0)])
      yield* engine.waitFor("the rejection", (s) => s.counters.malformed === 1)
      yield* client.submit(1, prompt, { params: { num_tokens_to_generate: 1 } })
      expect((yield* client.nextReply()).requestId).toBe(1)
      expect((yield* cluster.coordinator.snapshot).inFlight).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("a submission whose parameters it cannot re-encode is dropped and counted; the next reply is intact", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* setup()
      // An unknown sampling parameter holding a timestamp extension: the engine decodes it to a
      // Date, which cannot be re-encoded for the reply's echo of the parameters.
      const head = Msgpack.encode([H.SUBMIT_REQUEST, 0, RawClient.params({ num_tokens_to_generate: 1, when: 0 }), null])
      const withExtension = Uint8Array.from([...head.subarray(0, head.length - 2), 0xd6, 0xff, 0, 0, 0, 1, 0xc0])
      const nil = Msgpack.encode(null)
      yield* client.send([withExtension, Msgpack.encode("the cat"), nil, nil, nil])
      yield* engine.waitFor("the failed reply", (s) => s.counters.malformed === 1)
      yield* client.submit(1, prompt, { params: { num_tokens_to_generate: 2 } })
      const reply = yield* client.nextReply()
      expect(reply.requestId).toBe(1)
      expect(reply.body?.generated_tokens).toEqual(Generation.tokens(promptTokens, 2))
    }).pipe(Effect.scoped))
})
