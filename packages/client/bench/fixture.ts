/**
 * The one workload of the client benchmark, shared by the stand-in, the baseline and the client:
 * a 512-token prompt, sampling parameters asking for 16 tokens, and the reply the stand-in sends
 * back for every request (shaped like Python's `DynamicInferenceRequest.serialize()`).
 *
 * Plain data, no imports: each process of the benchmark builds the same values.
 */

/** Deterministic token ids in a Llama-3-sized vocabulary (about half need a uint32 on the wire). */
const tokens = (count: number, seed: number): Array<number> => {
  const out = new Array<number>(count)
  let x = seed >>> 0
  for (let i = 0; i < count; i++) {
    x = (Math.imul(x, 1_664_525) + 1_013_904_223) >>> 0
    out[i] = x % 128_256
  }
  return out
}

export const PROMPT_TOKENS = 512
export const GENERATED_TOKENS = 16

/** The prompt every request submits. */
export const prompt: ReadonlyArray<number> = tokens(PROMPT_TOKENS, 42)

/** What a caller hands over; the client fills in the rest. */
export const samplingParamsInput = { num_tokens_to_generate: GENERATED_TOKENS } as const

/**
 * The full sampling-parameters map, in the Python dataclass order, as it travels in frame 0: what
 * the baseline sends (the client builds the same map from {@link samplingParamsInput}).
 */
export const samplingParamsWire = {
  temperature: 1.0,
  top_k: 0,
  top_p: 0.0,
  return_log_probs: false,
  skip_prompt_log_probs: false,
  return_segments: false,
  num_tokens_to_generate: GENERATED_TOKENS,
  num_tokens_total: null,
  termination_id: null,
  top_n_logprobs: 0,
  return_prompt_top_n_logprobs: false,
  add_BOS: false,
  stop_words: null,
  detokenize_stop_sequence: false,
  return_prompt_tokens: false,
  streaming: false,
  streaming_interval: 1,
  do_kv_handoff: false
}

/**
 * The finished request the stand-in answers with, encoded once and reused for every reply (so its
 * `request_id` is not the id of the request it answers: frame 0 carries that).
 */
export const replyMap = (): Record<string, unknown> => {
  const generated = tokens(GENERATED_TOKENS, 7)
  const arrival = 1_752_000_000.125
  const ttft = 0.0431
  return {
    request_id: 0,
    prompt: null,
    sampling_params: samplingParamsWire,
    inference_parameters: null,
    prompt_tokens: ["tensor", [...prompt]],
    arrival_time: arrival,
    status: "COMPLETED",
    encoder_prompt: null,
    generated_text: " The quick brown fox jumps over the lazy dog, and then it rests by the river.",
    segments: null,
    generated_segments: null,
    generated_sequence_lengths: null,
    generated_tokens: generated,
    prompt_log_probs: null,
    generated_log_probs: null,
    prompt_top_n_logprobs: null,
    generated_top_n_logprobs: null,
    generated_length: GENERATED_TOKENS,
    prompt_length: PROMPT_TOKENS,
    tpot: Array.from({ length: GENERATED_TOKENS - 1 }, (_, i) => 0.0112 + i * 0.0001),
    ttft,
    events: [
      { type: "ADD", timestamp: arrival, payload: null },
      { type: "FIRST_TOKEN", timestamp: arrival + ttft, payload: null },
      { type: "FINISH", timestamp: arrival + 0.21, payload: null }
    ],
    stop_word_ids: null,
    disaggregated_params: null,
    generation_epoch: null,
    precomputed_block_hashes: null,
    routing_indices: null
  }
}
