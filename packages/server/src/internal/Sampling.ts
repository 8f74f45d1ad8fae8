/**
 * OpenAI's sampling fields read for Megatron's `SamplingParams` (`Plan.make` writes them), and
 * the refusals: a parameter that would change the result and that Megatron's engines do not
 * support is a 400 naming it, never silently ignored (a penalty, a logit bias, a seed with
 * sampling on, a combination the engine refuses).
 *
 * @since 0.1.0
 */
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
 * A request's sampling fields, read and checked: what `Plan.make` turns into the engine's
 * `SamplingParams` once the tokens to generate are known.
 *
 * @since 0.2.0
 */
export interface Asked {
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
  /** The engine's `temperature`, `top_k` and `top_p` (greedy as Megatron's own server does it). */
  readonly temperature: number
  readonly topK: number
  readonly topP: number
}

const stopList = (stop: OpenAiSchema.CompletionRequest["stop"]): ReadonlyArray<string> => {
  if (stop === undefined || stop === null) return []
  const list = typeof stop === "string" ? [stop] : stop
  return list.filter((s) => s.length > 0)
}

/**
 * A request's sampling fields, or the 400 for the first one that cannot be honoured.
 * `promptLogprobs` asks for the prompt's log probs too (`echo` with `logprobs`).
 *
 * @since 0.2.0
 */
export const read = (
  request: Common,
  logprobs: number | undefined,
  promptLogprobs: boolean
): Result.Result<Asked, ServerError> => {
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
  return Result.succeed({
    n: request.n ?? 1,
    stream: request.stream === true,
    includeUsage: request.stream_options?.include_usage === true,
    stop: stopList(request.stop),
    logprobs,
    promptLogprobs,
    // Greedy as Megatron's own server does it: top-1 and no nucleus.
    temperature: greedy ? 0 : temperature,
    topK: greedy ? 1 : topK,
    topP: greedy ? 0 : topP
  })
}

const nonZero = (value: number | null | undefined): boolean => value != null && value !== 0
