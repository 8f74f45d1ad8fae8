/**
 * One request inside a test engine: its generation state, how it finishes, what it streams, and
 * its finished form, shaped like Python's `DynamicInferenceRequest.serialize()` and packed
 * directly (the general encoder would cost more than everything else the engine does per request).
 * The reference protocol's shape is unrolled below (the hot path); a Megatron-LM dialect's
 * (`ReplyShapes`) is written key by key from its list.
 *
 * @since 0.1.0
 * @internal
 */
import { Msgpack, SamplingParams } from "@mcore-effect/protocol"
import type * as Continuations from "../Continuations.ts"
import * as Generation from "../Generation.ts"
import type { ReplyShape } from "./replyShapes.ts"
import * as Vocabulary from "../Vocabulary.ts"

/**
 * The Python `SamplingParams` defaults, in dataclass order: the protocol's, plus the two fields the
 * client does not send (`detokenize_generations`, after `return_prompt_tokens`, and `seed`, last).
 * A finished request reports its parameters as the engine's `SamplingParams.deserialize(...).serialize()`
 * writes them back, so those two come back with these defaults when the client left them out.
 */
const PYTHON_SAMPLING_DEFAULTS: Readonly<Record<string, unknown>> = (() => {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(SamplingParams.defaults)) {
    out[key] = value
    if (key === "return_prompt_tokens") out.detokenize_generations = true
  }
  out.seed = null
  return Object.freeze(out)
})()

/** Encodes a fixed set of map keys once: `keys.generated_tokens` is the bytes of that key. */
const encodeKeys = <const K extends string>(names: ReadonlyArray<K>): { readonly [N in K]: Uint8Array } =>
  Object.freeze(Object.fromEntries(names.map((name) => [name, Msgpack.encode(name)]))) as { readonly [N in K]: Uint8Array }

/** The finished request's keys, in the order Python's `__dict__` holds them. */
const K = encodeKeys([
  "request_id", "prompt", "sampling_params", "inference_parameters", "prompt_tokens", "prompt_length",
  "arrival_time", "status", "encoder_prompt", "generated_text", "segments", "generated_segments",
  "generated_sequence_lengths", "generated_tokens", "prompt_log_probs", "generated_log_probs",
  "prompt_top_n_logprobs", "generated_top_n_logprobs", "generated_length", "tpot", "uid",
  "remaining_prompt_tokens", "policy_epoch", "kv_cache_epoch", "latency", "routing_indices",
  "finished_chunk_token_count", "stop_word_ids", "cg_wait_iters", "block_size_tokens",
  "enable_prefix_caching", "num_cached_tokens", "num_matched_prefix_blocks", "mtp_private_suffix_start",
  "block_hash_salt", "precomputed_block_hashes", "disaggregated_params", "payload_offloaded",
  "payload_stage_metadata", "ttft", "events", "acceptance_step_lengths"
])

const REPLY_KEY_COUNT = Object.keys(K).length

/** Any reply key's bytes, encoded once. */
const keyCache = new Map<string, Uint8Array>(Object.entries(K))
const keyBytes = (key: string): Uint8Array => {
  let bytes = keyCache.get(key)
  if (bytes === undefined) keyCache.set(key, bytes = Msgpack.encode(key))
  return bytes
}

const E = encodeKeys(["timestamp", "type", "payload"])
const TENSOR = Msgpack.encode("tensor")
const COMPLETED = Msgpack.encode("COMPLETED")
const EVENT_TYPES = {
  ADD_ENGINE: Msgpack.encode("ADD_ENGINE"),
  ADD_CONTEXT: Msgpack.encode("ADD_CONTEXT"),
  FINISH: Msgpack.encode("FINISH")
} as const

/** One event, as `DynamicInferenceEvent.serialize()` writes it: `{timestamp, type, payload}`. */
const writeEvent = (w: Msgpack.Writer, timestamp: number, type: keyof typeof EVENT_TYPES): void => {
  w.mapHeader(3).raw(E.timestamp).float(timestamp).raw(E.type).raw(EVENT_TYPES[type]).raw(E.payload).nil()
}

/** A lifecycle event, as `DynamicInferenceEvent.serialize()` writes it. */
interface Event {
  readonly timestamp: number
  readonly type: "ADD_ENGINE" | "ADD_CONTEXT" | "FINISH"
  readonly payload: null
}

/** What the engine knows about a request when it is added. */
export interface EngineRequestInit {
  readonly requestId: number
  /** The prompt as sent: a string, or `null` for token ids (as Megatron reports it). */
  readonly prompt: string | null
  readonly promptTokens: ReadonlyArray<number>
  readonly samplingParams: Readonly<Record<string, unknown>>
  readonly mediaCacheKey: string | null
  readonly blockSizeTokens: number
  readonly blockHashes: ReadonlyArray<bigint>
  readonly numCachedTokens: number
  readonly numMatchedPrefixBlocks: number
  /** Used when neither `num_tokens_to_generate` nor `num_tokens_total` is set. */
  readonly defaultTokensToGenerate: number
  /** The generation epoch in force when the request arrived, if any. */
  readonly generationEpoch: number | null
  /** Set for a KV-handoff submission: the peer's export and blocks. */
  readonly disaggregatedParams: Readonly<Record<string, unknown>> | null
  readonly uid: string
  /** Chosen continuations by prompt (`TestEngine` option `continuations`). */
  readonly continuations?: Continuations.Script | undefined
  /** Seconds (wall clock, as Python's `time.time()`). */
  readonly now: number
  /** A Megatron-LM dialect's reply map; `undefined`: the reference protocol's. */
  readonly shape?: ReplyShape | undefined
}

/** The new tokens of a streaming request, as the engine sends them. */
export type Partial = Record<string, unknown>

const int = (v: unknown): number | null => (typeof v === "number" && Number.isSafeInteger(v) ? v : null)

/**
 * @internal
 */
export class EngineRequest {
  readonly requestId: number
  readonly samplingParams: Record<string, unknown>
  readonly generated: Array<number> = []
  readonly maxTokens: number
  readonly terminationId: number | null
  readonly stopWordIds: ReadonlyArray<ReadonlyArray<number>>
  readonly streaming: boolean
  readonly streamingInterval: number
  readonly keepStopSequence: boolean
  readonly returnLogProbs: boolean
  aborted = false
  /** The sampling parameters already encoded (engines reuse the bytes across requests with the same ones). */
  encodedSamplingParams: Uint8Array | undefined = undefined
  policyEpoch: Array<[number, number]> | null = null
  kvCacheEpoch: Array<[number, number]> | null = null
  disaggregatedParams: Readonly<Record<string, unknown>> | null
  private emitted = 0
  private readonly seed: number
  /** The script's continuation of this prompt, when it has one (see `Continuations`). */
  private readonly scripted: ReadonlyArray<number> | undefined
  private readonly tpot: Array<number> = []
  private ttft: number | null = null
  private lastTokenAt: number
  private readonly events: Array<Event> = []

  constructor(readonly init: EngineRequestInit) {
    this.requestId = init.requestId
    const sp = init.samplingParams
    this.samplingParams = { ...(init.shape?.samplingDefaults ?? PYTHON_SAMPLING_DEFAULTS), ...sp }
    const toGenerate = int(sp.num_tokens_to_generate)
    const total = int(sp.num_tokens_total)
    this.maxTokens = toGenerate ?? (total !== null ? Math.max(0, total - init.promptTokens.length) : init.defaultTokensToGenerate)
    this.terminationId = int(sp.termination_id)
    const stopWords = Array.isArray(sp.stop_words) ? sp.stop_words.filter((w): w is string => typeof w === "string") : []
    this.stopWordIds = stopWords.map(Vocabulary.tokenize).filter((ids) => ids.length > 0)
    this.streaming = sp.streaming === true
    this.streamingInterval = Math.max(1, int(sp.streaming_interval) ?? 1)
    this.keepStopSequence = sp.detokenize_stop_sequence === true
    this.returnLogProbs = sp.return_log_probs === true
    this.disaggregatedParams = init.disaggregatedParams
    this.seed = Generation.seedOf(init.promptTokens)
    this.scripted = init.continuations?.(init.promptTokens)
    this.lastTokenAt = init.now
    if (init.generationEpoch !== null) {
      this.policyEpoch = [[0, init.generationEpoch]]
      this.kvCacheEpoch = [[0, init.generationEpoch]]
    }
    this.events.push({ timestamp: init.now, type: "ADD_ENGINE", payload: null })
    this.events.push({ timestamp: init.now, type: "ADD_CONTEXT", payload: null })
  }

  /** Whether `detokenize_generations` asks the coordinator to fill `generated_text` (Python's default: yes). */
  get needsDetokenize(): boolean {
    const shape = this.init.shape
    return shape === undefined ? this.samplingParams.detokenize_generations !== false : shape.needsDetokenize(this.samplingParams)
  }

  /** The token at `index` of this prompt's continuation (the script's, which may end, or the deterministic stream's). */
  tokenAt(index: number): number | undefined {
    return this.scripted === undefined ? Generation.tokenAt(this.seed, index) : this.scripted[index]
  }

  /** Generates one token; true when the request is finished. */
  step(now: number): boolean {
    if (this.aborted || this.generated.length >= this.maxTokens) return true
    const token = this.tokenAt(this.generated.length)
    if (token === undefined) return true
    return this.accept(token, now)
  }

  /**
   * A decode's first token, sampled by the prefill that handed its KV over (`resume_tokens[0]`):
   * generated as if sampled here, when there is room for it. True when the request is finished.
   */
  resume(token: number, now: number): boolean {
    return this.maxTokens <= 0 || this.accept(token, now)
  }

  private accept(token: number, now: number): boolean {
    const scripted = this.scripted
    this.generated.push(token)
    if (this.ttft === null) this.ttft = now - this.init.now
    else this.tpot.push(now - this.lastTokenAt)
    this.lastTokenAt = now
    if (token === this.terminationId) return true
    for (const stop of this.stopWordIds) {
      if (this.endsWith(stop)) {
        // Without detokenize_stop_sequence the stop sequence is not part of the output.
        if (!this.keepStopSequence) this.generated.length -= stop.length
        return true
      }
    }
    return this.generated.length >= this.maxTokens || (scripted !== undefined && this.generated.length >= scripted.length)
  }

  private endsWith(stop: ReadonlyArray<number>): boolean {
    const g = this.generated
    if (stop.length > g.length) return false
    for (let i = 0; i < stop.length; i++) if (g[g.length - stop.length + i] !== stop[i]) return false
    return true
  }

  /**
   * The tokens not yet streamed, once at least `streaming_interval` of them are ready. Tokens that
   * might still turn out to be the start of a stop word are held back, as Megatron does.
   */
  partial(): Partial | null {
    if (!this.streaming) return null
    let holdback = 0
    if (!this.keepStopSequence) for (const stop of this.stopWordIds) holdback = Math.max(holdback, stop.length - 1)
    const end = Math.max(this.emitted, this.generated.length - holdback)
    if (end - this.emitted < this.streamingInterval) return null
    const newTokens = this.generated.slice(this.emitted, end)
    const partial: Partial = { request_id: this.requestId, new_tokens: newTokens }
    if (this.returnLogProbs) partial.new_log_probs = newTokens.map(Generation.logProbOf)
    this.emitted = end
    return partial
  }

  /** Stamps the request with a new generation epoch (Megatron's sparse `(start_token_index, epoch)` list). */
  stampEpoch(epoch: number): void {
    const total = this.init.promptTokens.length + this.generated.length
    if (total === 0) return
    if (this.policyEpoch === null) this.policyEpoch = [[0, epoch]]
    else this.policyEpoch.push([total - 1, epoch])
    if (this.kvCacheEpoch === null) this.kvCacheEpoch = [[0, epoch]]
    else this.kvCacheEpoch.push([total - 1, epoch])
  }

  /**
   * The finished request as `DynamicInferenceRequest.serialize()` writes it, packed the way
   * Python packs it (floats as float64). `w` is reused across requests.
   */
  encode(now: number, w: Msgpack.Writer): Uint8Array {
    if (this.init.shape !== undefined) return this.encodeShaped(this.init.shape, now, w)
    const init = this.init
    const sp = this.samplingParams
    const promptTokens = init.promptTokens
    w.reset().mapHeader(REPLY_KEY_COUNT)
    w.raw(K.request_id).number(this.requestId)
    w.raw(K.prompt)
    if (init.prompt === null) w.nil()
    else w.string(init.prompt)
    w.raw(K.sampling_params).raw(this.encodedSamplingParams ?? Msgpack.encode(sp))
    w.raw(K.inference_parameters).nil()
    w.raw(K.prompt_tokens)
    if (sp.return_prompt_tokens === true) w.arrayHeader(2).raw(TENSOR).numbers(promptTokens)
    else w.nil()
    w.raw(K.prompt_length).number(promptTokens.length)
    w.raw(K.arrival_time).float(init.now)
    w.raw(K.status).raw(COMPLETED)
    w.raw(K.encoder_prompt).nil()
    w.raw(K.generated_text).nil()
    w.raw(K.segments).nil()
    w.raw(K.generated_segments).nil()
    w.raw(K.generated_sequence_lengths).nil()
    w.raw(K.generated_tokens).numbers(this.generated)
    w.raw(K.prompt_log_probs)
    if (this.returnLogProbs && sp.skip_prompt_log_probs !== true) w.floats(promptTokens.slice(1).map(Generation.logProbOf))
    else w.nil()
    w.raw(K.generated_log_probs)
    if (this.returnLogProbs) w.floats(this.generated.map(Generation.logProbOf))
    else w.nil()
    w.raw(K.prompt_top_n_logprobs).nil()
    w.raw(K.generated_top_n_logprobs).nil()
    w.raw(K.generated_length).number(this.generated.length)
    w.raw(K.tpot).floats(this.tpot)
    w.raw(K.uid).string(init.uid)
    w.raw(K.remaining_prompt_tokens).nil()
    w.raw(K.policy_epoch)
    if (this.policyEpoch === null) w.nil()
    else w.value(this.policyEpoch)
    w.raw(K.kv_cache_epoch)
    if (this.kvCacheEpoch === null) w.nil()
    else w.value(this.kvCacheEpoch)
    w.raw(K.latency).nil()
    w.raw(K.routing_indices).nil()
    w.raw(K.finished_chunk_token_count).number(0)
    w.raw(K.stop_word_ids)
    if (this.stopWordIds.length === 0) w.nil()
    else w.value(this.stopWordIds)
    w.raw(K.cg_wait_iters).number(0)
    w.raw(K.block_size_tokens).number(init.blockSizeTokens)
    w.raw(K.enable_prefix_caching).bool(true)
    w.raw(K.num_cached_tokens).number(init.numCachedTokens)
    w.raw(K.num_matched_prefix_blocks).number(init.numMatchedPrefixBlocks)
    w.raw(K.mtp_private_suffix_start).nil()
    w.raw(K.block_hash_salt)
    if (init.mediaCacheKey === null) w.nil()
    else w.string(init.mediaCacheKey)
    w.raw(K.precomputed_block_hashes)
    if (init.blockHashes.length === 0) w.arrayHeader(0)
    else w.value(init.blockHashes)
    w.raw(K.disaggregated_params)
    if (this.disaggregatedParams === null) w.nil()
    else w.value(this.disaggregatedParams)
    w.raw(K.payload_offloaded).bool(false)
    w.raw(K.payload_stage_metadata).mapHeader(0)
    w.raw(K.ttft)
    if (this.ttft === null) w.nil()
    else w.float(this.ttft)
    w.raw(K.events).arrayHeader(this.events.length + 1)
    for (const event of this.events) writeEvent(w, event.timestamp, event.type)
    writeEvent(w, now, "FINISH")
    w.raw(K.acceptance_step_lengths).arrayHeader(0)
    return w.finish()
  }

  /** The finished request in a dialect's shape: its keys in its order, each written as `encode` writes it. */
  private encodeShaped(shape: ReplyShape, now: number, w: Msgpack.Writer): Uint8Array {
    const init = this.init
    const sp = this.samplingParams
    const promptTokens = init.promptTokens
    w.reset().mapHeader(shape.keys.length)
    for (const key of shape.keys) {
      w.raw(keyBytes(key))
      switch (key) {
        case "request_id":
          w.number(this.requestId)
          break
        case "prompt":
          if (init.prompt === null) w.nil()
          else w.string(init.prompt)
          break
        case "sampling_params":
          w.raw(this.encodedSamplingParams ?? Msgpack.encode(sp))
          break
        case "prompt_tokens":
          if (shape.promptTokensAlways || sp.return_prompt_tokens === true) w.arrayHeader(2).raw(TENSOR).numbers(promptTokens)
          else w.nil()
          break
        case "remaining_prompt_tokens":
          w.arrayHeader(2).raw(TENSOR).numbers(promptTokens)
          break
        case "prompt_length":
          w.number(promptTokens.length)
          break
        case "arrival_time":
          w.float(init.now)
          break
        case "status":
          w.raw(COMPLETED)
          break
        case "generated_tokens":
          w.numbers(this.generated)
          break
        case "prompt_log_probs":
          if (this.returnLogProbs && sp.skip_prompt_log_probs !== true) w.floats(promptTokens.slice(1).map(Generation.logProbOf))
          else w.nil()
          break
        case "generated_log_probs":
          if (this.returnLogProbs) w.floats(this.generated.map(Generation.logProbOf))
          else w.nil()
          break
        case "generated_length":
          w.number(this.generated.length)
          break
        case "tpot":
          w.floats(this.tpot)
          break
        case "uid":
          w.string(init.uid)
          break
        case "policy_epoch":
          if (this.policyEpoch === null) w.nil()
          else w.value(this.policyEpoch)
          break
        case "kv_cache_epoch":
          if (this.kvCacheEpoch === null) w.nil()
          else w.value(this.kvCacheEpoch)
          break
        case "finished_chunk_token_count":
        case "cg_wait_iters":
          w.number(0)
          break
        case "stop_word_ids":
          if (this.stopWordIds.length === 0) w.nil()
          else w.value(this.stopWordIds)
          break
        case "block_size_tokens":
          w.number(init.blockSizeTokens)
          break
        case "enable_prefix_caching":
          w.bool(true)
          break
        case "num_cached_tokens":
          w.number(init.numCachedTokens)
          break
        case "precomputed_block_hashes":
          if (init.blockHashes.length === 0) w.arrayHeader(0)
          else w.value(init.blockHashes)
          break
        case "disaggregated_params":
          if (this.disaggregatedParams === null) w.nil()
          else w.value(this.disaggregatedParams)
          break
        case "ttft":
          if (this.ttft === null) w.nil()
          else w.float(this.ttft)
          break
        case "events":
          w.arrayHeader(this.events.length + 1)
          for (const event of this.events) writeEvent(w, event.timestamp, event.type)
          writeEvent(w, now, "FINISH")
          break
        default:
          // inference_parameters, encoder_prompt, generated_text (the coordinator's), segments,
          // latency, routing_indices, ...: nil, as a test engine has none of them.
          w.nil()
      }
    }
    return w.finish()
  }
}
