/**
 * The finished-request map a test engine sends in each Megatron-LM dialect, shaped as that ref's
 * `DynamicInferenceRequest.serialize()` writes it (the key sets, in order, of the replies in
 * `packages/protocol/test/fixtures/megatron/*.json`, captured from Megatron's own processes), and
 * the `SamplingParams` defaults its engine re-serializes a request's parameters from (each
 * release's dataclass has fewer fields than the next). The reference protocol's shape is
 * `EngineRequest`'s own.
 *
 * @since 0.2.0
 * @internal
 */
import { type Dialect, Dialects, SamplingParams } from "@mcore-effect/protocol"

/**
 * One dialect's reply map.
 *
 * @internal
 */
export interface ReplyShape {
  /** The keys, in the order the ref's `__dict__` holds them. */
  readonly keys: ReadonlyArray<string>
  /** The engine's `SamplingParams()` fields and defaults, in dataclass order. */
  readonly samplingDefaults: Readonly<Record<string, unknown>>
  /** `prompt_tokens` in every reply (core_v0.17/18, which have no `return_prompt_tokens`), else only when asked. */
  readonly promptTokensAlways: boolean
  /**
   * The `needs_detokenize` flag of a multipart batch entry, from the request's parameters as the
   * engine holds them: PR 6497's `bool(sampling_params.get("detokenize_generations"))`, a key its
   * `SamplingParams` does not declare. (One-frame batches have no such flag.)
   */
  readonly needsDetokenize: (samplingParams: Readonly<Record<string, unknown>>) => boolean
}

/** main and PR 6497 (d98e8a64dd, fe4e618222). */
const mainKeys: ReadonlyArray<string> = [
  "request_id", "prompt", "sampling_params", "inference_parameters", "prompt_tokens", "prompt_length",
  "arrival_time", "status", "encoder_prompt", "generated_text", "segments", "generated_segments",
  "generated_sequence_lengths", "generated_tokens", "prompt_log_probs", "generated_log_probs",
  "prompt_top_n_logprobs", "generated_top_n_logprobs", "generated_length", "tpot", "uid",
  "remaining_prompt_tokens", "policy_epoch", "kv_cache_epoch", "latency", "routing_indices",
  "finished_chunk_token_count", "stop_word_ids", "cg_wait_iters", "block_size_tokens",
  "enable_prefix_caching", "num_cached_tokens", "precomputed_block_hashes", "disaggregated_params",
  "ttft", "events"
]

/** core_v0.19: main's without `uid` and `disaggregated_params`. */
const v019Keys = mainKeys.filter((key) => key !== "uid" && key !== "disaggregated_params")

/** core_v0.17 and core_v0.18: also without `prompt_length`, `cg_wait_iters` and `num_cached_tokens`. */
const v017Keys = v019Keys.filter((key) => key !== "prompt_length" && key !== "cg_wait_iters" && key !== "num_cached_tokens")

/**
 * core_v0.16: each request of a record (`{"requests": [request], "latency": ...}`); 0.17's keys
 * without the epochs, `routing_indices`, the prefix-caching fields and `ttft`.
 */
const v016Keys: ReadonlyArray<string> = [
  "request_id", "prompt", "sampling_params", "inference_parameters", "prompt_tokens", "arrival_time", "status",
  "encoder_prompt", "generated_text", "segments", "generated_segments", "generated_sequence_lengths",
  "generated_tokens", "prompt_log_probs", "generated_log_probs", "prompt_top_n_logprobs", "generated_top_n_logprobs",
  "generated_length", "tpot", "remaining_prompt_tokens", "latency", "finished_chunk_token_count", "stop_word_ids", "events"
]

/** Defaults of a ref's `SamplingParams()` where they differ from the project's (Python's later ones). */
const ownDefaults: Partial<Record<Dialect.Name, Readonly<Record<string, unknown>>>> = {
  // core_v0.16's dataclass: `num_tokens_to_generate: int = 30` (None from 0.17 on).
  "core_v0.16": { num_tokens_to_generate: 30 }
}

const defaultsOf = (dialect: Dialect.Dialect): Readonly<Record<string, unknown>> =>
  Object.freeze({
    ...Object.fromEntries(dialect.samplingFields.map((key) => [key, (SamplingParams.defaults as Record<string, unknown>)[key]])),
    ...ownDefaults[dialect.name]
  })

const truthy = (v: unknown): boolean => v === true || (typeof v === "number" && v !== 0)

const shape = (name: Dialect.Name, keys: ReadonlyArray<string>, promptTokensAlways: boolean): ReplyShape => ({
  keys,
  samplingDefaults: defaultsOf(Dialects.get(name)),
  promptTokensAlways,
  needsDetokenize: (sp) => truthy(sp.detokenize_generations)
})

const shapes: Readonly<Record<Exclude<Dialect.Name, "reference">, ReplyShape>> = {
  main: shape("main", mainKeys, false),
  "pr-6497": shape("pr-6497", mainKeys, false),
  "core_v0.19": shape("core_v0.19", v019Keys, false),
  "core_v0.18": shape("core_v0.18", v017Keys, true),
  "core_v0.17": shape("core_v0.17", v017Keys, true),
  "core_v0.16": shape("core_v0.16", v016Keys, true)
}

/**
 * The reply shape of a dialect, or `undefined` for the reference protocol (whose shape is
 * `EngineRequest`'s unrolled encoder: the hot path).
 *
 * @internal
 */
export const of = (name: Dialect.Name): ReplyShape | undefined => (name === "reference" ? undefined : shapes[name])
