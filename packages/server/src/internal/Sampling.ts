/**
 * From OpenAI's sampling fields to Megatron's `SamplingParams`, and the refusals: a parameter
 * that would change the result and that Megatron's engines do not support is a 400 naming it,
 * never silently ignored (a penalty, a logit bias, a seed with sampling on, a combination the
 * engine refuses).
 *
 * @since 0.1.0
 */
import type { SamplingParams } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import type * as OpenAiSchema from "../OpenAiSchema.ts"
import { badRequest, type ServerError } from "../ServerError.ts"

/** The fields both endpoints share (the schemas' common part). */
type Common = Pick<
  OpenAiSchema.CompletionRequest,
  | "temperature"
  | "top_p"
  | "top_k"
  | "n"
  | "stream"
  | "stream_options"
  | "stop"
  | "seed"
  | "presence_penalty"
  | "frequency_penalty"
  | "logit_bias"
>

/**
 * What a request asks of generation, whichever endpoint it came through.
 *
 * @since 0.1.0
 */
export interface Plan {
  /** Choices per prompt. */
  readonly n: number
  readonly stream: boolean
  readonly includeUsage: boolean
  /** Stop strings: generation ends where one begins, and the text is cut there. */
  readonly stop: ReadonlyArray<string>
  /** Top log probs per token, when log probs are asked for at all. */
  readonly logprobs: number | undefined
  /** The prompt's log probs too (`echo` with `logprobs`). */
  readonly promptLogprobs: boolean
  /** What is sent to the engine (without `streaming`, which the client sets). */
  readonly samplingParams: SamplingParams.SamplingParamsInput
}

const stopList = (stop: OpenAiSchema.CompletionRequest["stop"]): ReadonlyArray<string> => {
  if (stop === undefined || stop === null) return []
  const list = typeof stop === "string" ? [stop] : stop
  return list.filter((s) => s.length > 0)
}

/**
 * The plan of a request's sampling fields, or the 400 for the first one that cannot be honoured.
 * `maxTokens` is the endpoint's reading of `max_tokens` (null: the engine's default);
 * `promptLogprobs` asks for the prompt's log probs too (`echo` with `logprobs`).
 *
 * @example
 * ```ts
 * import { Sampling } from "@mcore-effect/server"
 *
 * Sampling.plan({ temperature: 0 }, { maxTokens: 16, logprobs: undefined, promptLogprobs: false })
 * // Success: top_k 1 (greedy), num_tokens_to_generate 16
 * ```
 *
 * @since 0.1.0
 */
export const plan = (
  request: Common,
  options: {
    readonly maxTokens: number | null
    readonly logprobs: number | undefined
    readonly promptLogprobs: boolean
  }
): Result.Result<Plan, ServerError> => {
  const fail = (param: string, why: string) => Result.fail(badRequest(param, why))
  if (nonZero(request.presence_penalty)) return fail("presence_penalty", "not supported by the engines (only 0)")
  if (nonZero(request.frequency_penalty)) return fail("frequency_penalty", "not supported by the engines (only 0)")
  if (request.logit_bias != null && Object.keys(request.logit_bias).length > 0) {
    return fail("logit_bias", "not supported by the engines")
  }
  const temperature = request.temperature ?? 1
  const greedy = temperature === 0
  if (request.seed != null && !greedy) {
    return fail("seed", "per-request seeds are not supported by the engines (only with temperature 0, where it changes nothing)")
  }
  const topK = request.top_k == null || request.top_k <= 0 ? 0 : request.top_k
  const topP = request.top_p == null || request.top_p >= 1 ? 0 : request.top_p
  if (topK > 0 && topP > 0 && !greedy) return fail("top_p", "cannot be combined with top_k (the engines refuse both)")
  if (request.stream_options != null && request.stream !== true) {
    return fail("stream_options", "only allowed when stream is true")
  }
  if (request.stream_options?.continuous_usage_stats === true) {
    return fail("stream_options.continuous_usage_stats", "not supported")
  }
  const stop = stopList(request.stop)
  const logprobs = options.logprobs
  const topN = logprobs ?? 0
  const samplingParams: SamplingParams.SamplingParamsInput = {
    // Greedy as Megatron's own server does it: top-1 and no nucleus.
    temperature: greedy ? 0 : temperature,
    top_k: greedy ? 1 : topK,
    top_p: greedy ? 0 : topP,
    num_tokens_to_generate: options.maxTokens,
    return_log_probs: logprobs !== undefined,
    top_n_logprobs: topN,
    skip_prompt_log_probs: !options.promptLogprobs,
    return_prompt_top_n_logprobs: topN > 0 && options.promptLogprobs,
    stop_words: stop.length > 0 ? stop : null
  }
  return Result.succeed({
    n: request.n ?? 1,
    stream: request.stream === true,
    includeUsage: request.stream_options?.include_usage === true,
    stop,
    logprobs,
    promptLogprobs: options.promptLogprobs,
    samplingParams
  })
}

const nonZero = (value: number | null | undefined): boolean => value != null && value !== 0
