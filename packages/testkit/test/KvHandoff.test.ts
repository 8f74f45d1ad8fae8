/**
 * The test engines' KV hand-off as Megatron-LM main's engines do it
 * (`disaggregation/inference_state_handoff.py` at d98e8a64dd): the prefill's pin and its
 * `resume_tokens`, the decode's checks (each one fatal), its import that ignores ABORT until
 * admitted, and the counts of pins and releases.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Dialect, Headers, Msgpack } from "@mcore-effect/protocol"
import { Effect, Result } from "effect"
import { Generation, KvPins, TestCluster, Vocabulary } from "../src/index.ts"
import * as DialectPeer from "./support/DialectPeer.ts"
import * as RawClient from "./support/RawClient.ts"

const H = Headers.values

/** One cluster of `engines` engines (block size 4), and a connected raw client. */
const cluster = (engine?: TestCluster.Options["engine"], engines = 1) =>
  Effect.gen(function*() {
    const c = yield* TestCluster.make({ engines, engine: { blockSizeTokens: 4, ...engine } })
    const client = yield* RawClient.make(c.address)
    yield* client.connect
    return { cluster: c, client, engine: c.engines[0]! }
  })

/** A prefill cluster and a decode cluster, as the disaggregated flow uses them. */
const prefillAndDecode = Effect.all([cluster(), cluster()])

interface Params {
  readonly request_id: number
  readonly block_ids: Array<number>
  readonly kv_meta: { readonly resume_tokens: Array<number> } & Record<string, unknown>
}

/** A prefill as the disaggregated flow sends it: token ids, `do_kv_handoff`, nothing to generate. */
const prefill = (client: RawClient.RawClient, id: number, tokens: ReadonlyArray<number>, params?: Record<string, unknown>) =>
  Effect.gen(function*() {
    yield* client.submit(id, tokens, { params: { num_tokens_to_generate: 0, do_kv_handoff: true, ...params } })
    const reply = yield* client.nextReply()
    return { reply, params: reply.body?.disaggregated_params as Params }
  })

/** The decode of a hand-off: SUBMIT_REQUEST_WITH_KV with the prefill's `kv_meta` and block ids. */
const decode = (client: RawClient.RawClient, id: number, prompt: string | ReadonlyArray<number>, params: Params, sp: Record<string, unknown>) =>
  client.submitWithKv(id, prompt, params.kv_meta, params.block_ids, sp)

const tokens = (n: number) => Array.from({ length: n }, (_, i) => 1 + (i * 7) % 50)

describe("KV hand-off: the prefill", () => {
  it.effect("pins ceil(prompt / block) blocks and hands out the first sampled token as resume_tokens", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* cluster()
      const blocks: Array<number> = []
      for (const [id, length] of [[0, 7], [1, 8], [2, 9]] as const) {
        const { params, reply } = yield* prefill(client, id, tokens(length))
        expect(reply.body?.generated_tokens).toEqual([])
        expect(params.request_id).toBe((yield* engine.snapshot).pinned.at(-1))
        expect(params.kv_meta.resume_tokens).toEqual(Generation.tokens(tokens(length), 1))
        expect(params.kv_meta.engine).toBe("mp-coord-0")
        blocks.push(params.block_ids.length)
      }
      expect(blocks).toEqual([2, 2, 3])
      const { kvPins } = yield* engine.snapshot
      expect(kvPins).toMatchObject({ pinned: 3, released: 0, blocksPinned: 7, blocksReleased: 0 })
    }).pipe(Effect.scoped))

  it.effect("with num_speculative_tokens, resume_tokens hold that many proposals after the sampled token", () =>
    Effect.gen(function*() {
      const { client } = yield* cluster({ numSpeculativeTokens: 2 })
      const { params } = yield* prefill(client, 0, tokens(5))
      expect(params.kv_meta.resume_tokens).toEqual(Generation.tokens(tokens(5), 3))
      // A prefill that generated tokens resumes from the last one it sampled.
      const two = yield* prefill(client, 1, tokens(7), { num_tokens_to_generate: 2 })
      expect(two.params.kv_meta.resume_tokens).toEqual(Generation.tokens(tokens(7), 4).slice(1))
      // The prompt's blocks only: ceil(7 / 4), not ceil((7 + 2) / 4).
      expect(two.params.block_ids).toHaveLength(2)
    }).pipe(Effect.scoped))

  it.effect("an aborted prefill still pins (ABORT only ends its generation early), and its reply says where", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* cluster()
      yield* client.signal(H.PAUSE)
      yield* client.submit(0, tokens(6), { params: { num_tokens_to_generate: 5, do_kv_handoff: true } })
      yield* client.signal(H.ABORT_REQUEST, 0)
      yield* engine.waitFor("the abort", (s) => s.aborted.length === 1)
      yield* client.signal(H.UNPAUSE)
      const reply = yield* client.nextReply()
      expect(reply.body?.generated_tokens).toEqual([])
      expect((reply.body?.disaggregated_params as Params).block_ids).toHaveLength(2)
      expect((yield* engine.snapshot).kvPins.pinned).toBe(1)
    }).pipe(Effect.scoped))

  it.effect("RELEASE_KV frees the pin; a second release is repeated, an id never pinned foreign", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* cluster()
      const { params } = yield* prefill(client, 0, tokens(9))
      yield* client.signal(H.RELEASE_KV, params.request_id)
      yield* client.signal(H.RELEASE_KV, params.request_id)
      yield* client.signal(H.RELEASE_KV, 4242)
      const s = yield* engine.waitFor("three releases", (s) => s.counters.unknownRelease === 2)
      expect(s.pinned).toEqual([])
      expect(s.released).toEqual([params.request_id])
      expect(s.kvPins).toMatchObject({ pinned: 1, released: 1, repeated: 1, foreign: 1, blocksPinned: 3, blocksReleased: 3 })
      expect(s.kvPins.foreignIds).toEqual([4242])
      expect(KvPins.balanced(s.kvPins)).toBe(false)
    }).pipe(Effect.scoped))

  it.effect("a cluster's counts: a release broadcast to every engine is foreign once, and only when no engine pinned it", () =>
    Effect.gen(function*() {
      const { client, cluster: c } = yield* cluster(undefined, 2)
      const pins: Array<Params> = []
      for (let id = 0; id < 4; id++) pins.push((yield* prefill(client, id, tokens(5 + id))).params)
      for (const p of pins) yield* client.signal(H.RELEASE_KV, p.request_id)
      yield* Effect.forEach(c.engines, (e) => e.waitFor("the releases", (s) => s.received.filter((r) => r.name === "RELEASE_KV").length === 4))
      const balanced = yield* c.kvPins
      expect(balanced).toMatchObject({ pinned: 4, released: 4, repeated: 0, foreign: 0 })
      expect(KvPins.balanced(balanced)).toBe(true)
      yield* client.signal(H.RELEASE_KV, 999)
      yield* Effect.forEach(c.engines, (e) => e.waitFor("the foreign release", (s) => s.received.some((r) => r.requestId === 999)))
      const after = yield* c.kvPins
      expect(after.foreign).toBe(1)
      expect(KvPins.balanced(after)).toBe(false)
    }).pipe(Effect.scoped))
})

describe("KV hand-off: the decode", () => {
  it.effect("the whole answer, starting with the resume token, as one engine would have generated it", () =>
    Effect.gen(function*() {
      const [p, d] = yield* prefillAndDecode
      const prompt = tokens(10)
      const { params } = yield* prefill(p.client, 0, prompt)
      yield* decode(d.client, 0, prompt, params, { num_tokens_to_generate: 5 })
      const reply = yield* d.client.nextReply()
      expect(reply.body?.generated_tokens).toEqual(Generation.tokens(prompt, 5))
      expect(reply.body?.num_cached_tokens).toBe(10)
      yield* p.client.signal(H.RELEASE_KV, params.request_id)
      const s = yield* p.engine.waitFor("the release", (s) => s.released.length === 1)
      expect(KvPins.balanced(s.kvPins)).toBe(true)
      expect((yield* d.engine.snapshot).kvHandoffs).toEqual([{ requestId: 0, kvMeta: params.kv_meta, srcBlockIds: params.block_ids }])
    }).pipe(Effect.scoped))

  it.effect("a decode of one token completes at once with the resume token; streamed, the first partial is it", () =>
    Effect.gen(function*() {
      const [p, d] = yield* prefillAndDecode
      const prompt = tokens(6)
      const { params } = yield* prefill(p.client, 0, prompt)
      yield* decode(d.client, 0, prompt, params, { num_tokens_to_generate: 1 })
      expect((yield* d.client.nextReply()).body?.generated_tokens).toEqual(params.kv_meta.resume_tokens)
      yield* decode(d.client, 1, prompt, params, { num_tokens_to_generate: 3, streaming: true })
      const first = Msgpack.decode((yield* d.client.next())[1]!) as { new_tokens: Array<number> }
      expect(first.new_tokens[0]).toBe(params.kv_meta.resume_tokens[0])
    }).pipe(Effect.scoped))

  it.effect("caches the imported blocks: the same prompt after the import finds them", () =>
    Effect.gen(function*() {
      const [p, d] = yield* prefillAndDecode
      const prompt = tokens(9)
      const { params } = yield* prefill(p.client, 0, prompt)
      yield* decode(d.client, 0, prompt, params, { num_tokens_to_generate: 2 })
      yield* d.client.nextReply()
      yield* d.client.submit(1, prompt, { params: { num_tokens_to_generate: 1 } })
      // Two whole blocks of four; the partial tail is not a cached block.
      expect((yield* d.client.nextReply()).body?.num_cached_tokens).toBe(8)
    }).pipe(Effect.scoped))

  it.effect("ignores ABORT while its import is pending; once admitted the request runs to its end", () =>
    Effect.gen(function*() {
      const [p, d] = yield* prefillAndDecode
      const prompt = tokens(7)
      const { params } = yield* prefill(p.client, 0, prompt)
      // Paused, the engine does not step: the import stays pending.
      yield* d.client.signal(H.PAUSE)
      yield* decode(d.client, 0, prompt, params, { num_tokens_to_generate: 4 })
      yield* d.client.signal(H.ABORT_REQUEST, 0)
      const pending = yield* d.engine.waitFor("the ignored abort", (s) => s.counters.abortWhileImporting === 1)
      expect(pending.importing).toEqual([0])
      expect(pending.aborted).toEqual([])
      yield* d.client.signal(H.UNPAUSE)
      expect((yield* d.client.nextReply()).body?.generated_tokens).toEqual(Generation.tokens(prompt, 4))
      expect((yield* d.engine.snapshot).importing).toEqual([])
    }).pipe(Effect.scoped))

  const prompt = tokens(7)
  const resume = Generation.tokens(prompt, 1)
  const fatal: ReadonlyArray<readonly [string, (c: RawClient.RawClient) => Effect.Effect<void>, RegExp]> = [
    ["a text prompt", (c) => c.submitWithKv(0, "the quick fox", { resume_tokens: resume }, [0, 1], {}), /token ids/],
    ["no resume_tokens", (c) => c.submitWithKv(0, prompt, { agent: "x" }, [0, 1], {}), /expected 1, got 0/],
    ["two resume tokens without MTP", (c) => c.submitWithKv(0, prompt, { resume_tokens: [1, 2] }, [0, 1], {}), /expected 1, got 2/],
    ["too few blocks", (c) => c.submitWithKv(0, prompt, { resume_tokens: resume }, [0], {}), /expected 2, got 1/],
    ["log probs", (c) => c.submitWithKv(0, prompt, { resume_tokens: resume }, [0, 1], { return_log_probs: true }), /NotImplementedError/],
    ["top-n log probs", (c) => c.submitWithKv(0, prompt, { resume_tokens: resume }, [0, 1], { top_n_logprobs: 2, return_prompt_top_n_logprobs: true }), /NotImplementedError/]
  ]
  for (const [what, send, why] of fatal) {
    it.effect(`dies of ${what}, as Megatron's engine does; the coordinator answers what it held FAILED when its connection closes`, () =>
      Effect.gen(function*() {
        const d = yield* cluster()
        yield* send(d.client)
        const s = yield* d.engine.waitFor("the engine's death", (s) => !s.running)
        expect(s.failure).toMatch(why)
        expect(s.importing).toEqual([])
        // Its connection closed: the coordinator's ROUTER (ours) says so, and the hand-off it held
        // is answered FAILED with no other send.
        const failed = yield* d.client.nextReply()
        expect(failed.requestId).toBe(0)
        expect(failed.body).toMatchObject({ status: "FAILED", generated_tokens: [] })
        expect(String((failed.body?.events as Array<{ payload: string }>)[0]!.payload)).toMatch(/^engine mp-coord-0 was lost \(its connection closed\)/)
        // A new request, never sent to it, waits for an engine.
        yield* d.client.submit(1, prompt, { params: { num_tokens_to_generate: 1 } })
        expect(yield* d.client.quietFor(200)).toBe(true)
        const after = yield* d.cluster.coordinator.snapshot
        expect(after).toMatchObject({ engines: [], inFlight: 0, backlog: 1 })
        expect(after.counters.failedBack).toBe(1)
      }).pipe(Effect.scoped))
  }
})

describe("KV hand-off: releases against the decode's reads", () => {
  it.effect("a release while the decode's import is pending is counted as before its first output; after it, not", () =>
    Effect.gen(function*() {
      const [p, d] = yield* prefillAndDecode
      const early = yield* prefill(p.client, 0, tokens(7))
      const late = yield* prefill(p.client, 1, tokens(8))
      yield* d.client.signal(H.PAUSE)
      yield* decode(d.client, 0, tokens(7), early.params, { num_tokens_to_generate: 2 })
      yield* d.engine.waitFor("the import", (s) => s.importing.length === 1)
      yield* p.client.signal(H.RELEASE_KV, early.params.request_id)
      yield* p.engine.waitFor("the early release", (s) => s.released.length === 1)
      yield* d.client.signal(H.UNPAUSE)
      yield* d.client.nextReply()
      yield* decode(d.client, 1, tokens(8), late.params, { num_tokens_to_generate: 2 })
      yield* d.client.nextReply()
      yield* p.client.signal(H.RELEASE_KV, late.params.request_id)
      const s = yield* p.engine.waitFor("the second release", (s) => s.released.length === 2)
      expect(s.kvPins).toMatchObject({ pinned: 2, released: 2, releasedBeforeFirstOutput: 1, importsAfterRelease: 0 })
      expect(KvPins.balanced(s.kvPins)).toBe(false)
    }).pipe(Effect.scoped))

  it.effect("an import of blocks already released is counted; a decode that died ends its reads", () =>
    Effect.gen(function*() {
      const [p, d] = yield* prefillAndDecode
      const freed = yield* prefill(p.client, 0, tokens(5))
      yield* p.client.signal(H.RELEASE_KV, freed.params.request_id)
      yield* p.engine.waitFor("the release", (s) => s.released.length === 1)
      yield* decode(d.client, 0, tokens(5), freed.params, { num_tokens_to_generate: 1 })
      yield* d.client.nextReply()
      expect((yield* p.engine.snapshot).kvPins.importsAfterRelease).toBe(1)
      // A decode that dies with an import pending no longer reads: a release after it is not early.
      const held = yield* prefill(p.client, 1, tokens(6))
      yield* d.client.signal(H.PAUSE)
      yield* decode(d.client, 1, tokens(6), held.params, { num_tokens_to_generate: 2 })
      yield* decode(d.client, 2, "a text prompt", held.params, {})
      yield* d.engine.waitFor("the engine's death", (s) => !s.running)
      yield* p.client.signal(H.RELEASE_KV, held.params.request_id)
      const s = yield* p.engine.waitFor("the release", (s) => s.released.length === 2)
      expect(s.kvPins.releasedBeforeFirstOutput).toBe(0)
    }).pipe(Effect.scoped))
})

describe("KV hand-off in Megatron-LM main's dialect", () => {
  it.effect("main: the prefill's pin, the decode's answer, the release, over the one-frame wire", () =>
    Effect.gen(function*() {
      const protocol: Dialect.Name = "main"
      const p = yield* TestCluster.make({ engines: 1, protocol, engine: { blockSizeTokens: 4 } })
      const d = yield* TestCluster.make({ engines: 1, protocol, engine: { blockSizeTokens: 4 } })
      const pc = yield* DialectPeer.client(p.address, protocol)
      const dc = yield* DialectPeer.client(d.address, protocol)
      yield* pc.connect
      yield* dc.connect
      const prompt = Vocabulary.tokenize("the quick fox runs over the lazy dog")
      yield* pc.submit(0, prompt, { num_tokens_to_generate: 0, do_kv_handoff: true })
      const [prefilled] = (yield* pc.untilReplies(1)).filter((m) => m.message._tag === "EngineReply")
      const params = (prefilled!.message.reply as { disaggregated_params: Params }).disaggregated_params
      expect(params.block_ids).toHaveLength(Math.ceil(prompt.length / 4))
      yield* dc.sendMessage(Result.getOrThrow(dc.dialect.submitWithKv({
        requestId: 0,
        prompt,
        samplingParams: { num_tokens_to_generate: 4 },
        kvMeta: params.kv_meta,
        srcBlockIds: params.block_ids
      })))
      const [decoded] = (yield* dc.untilReplies(1)).filter((m) => m.message._tag === "EngineReply")
      expect((decoded!.message.reply as { generated_tokens: Array<number> }).generated_tokens).toEqual(Generation.tokens(prompt, 4))
      yield* pc.sendMessage({ _tag: "ReleaseKv", requestId: params.request_id })
      const s = yield* p.engines[0]!.waitFor("the release", (s) => s.released.length === 1)
      expect(KvPins.balanced(s.kvPins)).toBe(true)
    }).pipe(Effect.scoped))
})
