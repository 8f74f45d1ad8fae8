/**
 * One choice: one request to the coordinator for one prompt, through the text package's
 * `TextGeneration` (ids to text with its incremental detokenizer, the final reply's tail, stop
 * strings and eos, finish reasons, usage with cached tokens). Streamed, a stop string or eos ends
 * the stream early, which aborts the request on the coordinator.
 *
 * `echo` with `logprobs` (what evaluation harnesses send to score a text) asks for the prompt's
 * log probs too (`promptLogProbs`).
 *
 * @since 0.1.0
 */
import type { ClientError } from "@mcore-effect/client"
import type { Media, SamplingParams } from "@mcore-effect/protocol"
import type { TextError, TextGeneration } from "@mcore-effect/text"
import * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { FinishReason, Usage } from "../OpenAiSchema.ts"
import type { Shared } from "./Handler.ts"
import type { Finished, Plan, Prompt } from "./Plan.ts"
import { badRequest, fromClientError, Internal, serverError, type ServerError } from "../ServerError.ts"

const failure = (shared: Shared, error: TextError.TextError | ClientError.ClientError): ServerError => {
  if (error._tag === "TextError") {
    return error.reason._tag === "InvalidArgument"
      ? badRequest(error.reason.name, error.reason.why)
      : serverError(new Internal({ why: error.message }))
  }
  if (error.reason._tag === "RequestTimeout") shared.state.metrics.aborted("deadline")
  return fromClientError(error)
}

const options = (shared: Shared, plan: Plan): TextGeneration.GenerateOptions => ({
  samplingParams: plan.samplingParams,
  stop: plan.stop,
  skipSpecialTokens: true,
  logProbs: plan.logprobs !== undefined,
  topLogProbs: plan.logprobs,
  promptLogProbs: plan.promptLogprobs,
  timeout: shared.state.config.requestTimeoutMillis,
  multiModalData: plan.media,
  routingKey: plan.routingKey
})

const finishReason = (reason: TextGeneration.FinishReason): FinishReason => reason === "aborted" ? "abort" : reason

const finished = (generation: TextGeneration.Generation): Finished => ({
  text: generation.text,
  stopString: generation.stopString,
  tokens: generation.tokenIds,
  finishReason: finishReason(generation.finishReason),
  promptTokens: generation.usage.promptTokens,
  completionTokens: generation.usage.completionTokens,
  cachedTokens: generation.usage.cachedTokens,
  logprobs: generation.logProbs,
  topLogprobs: generation.topLogProbs,
  promptLogprobs: generation.promptLogProbs,
  promptTopLogprobs: generation.promptTopLogProbs
})

/**
 * Generates one choice and waits for it. Interrupting the wait (the HTTP client went away)
 * aborts the request on the coordinator.
 *
 * @since 0.1.0
 */
export const generate = (shared: Shared, plan: Plan, prompt: Prompt): Effect.Effect<Finished, ServerError> =>
  // One step (matchEffect) rather than two (mapError, then map). The ids frozen: the text layer
  // then holds them as they are, without a copy of its own.
  Effect.matchEffect(shared.text.generate({ tokens: Object.freeze(prompt.ids) }, options(shared, plan)), {
    onFailure: (error) => Effect.fail(failure(shared, error)),
    onSuccess: (generation) => Effect.succeed(finished(generation))
  })

/**
 * One choice as a stream of the text package's parts (text deltas, then `Finish`). Ending
 * consumption early (the HTTP client went away) aborts the request on the coordinator. Not
 * mapped here: the server consumes it in one place, and every stream combinator costs heap per
 * open stream (PERFORMANCE.md#choice-parts).
 *
 * @since 0.1.0
 */
export const parts = (
  shared: Shared,
  plan: Plan,
  prompt: Prompt
): Stream.Stream<TextGeneration.StreamPart, TextError.TextError | ClientError.ClientError> =>
  // Frozen (its type says it never changes): the text layer uses it as it is, with no copy.
  shared.text.stream({ tokens: Object.freeze(prompt.ids) }, options(shared, plan))

/**
 * The server's error for a failure of {@link parts}.
 *
 * @since 0.1.0
 */
export const failed = (shared: Shared, error: TextError.TextError | ClientError.ClientError): ServerError =>
  failure(shared, error)

/**
 * The finished choice of the last part of {@link parts}.
 *
 * @since 0.1.0
 */
export const finishedOf = (part: TextGeneration.Finish): Finished => finished(part)

/**
 * `finished` with only its tokens from `sent` on (and their log probs): what a closing chunk
 * still has to carry when the first `sent` went out with their deltas.
 *
 * @since 0.1.0
 */
export const unsent = (finished: Finished, sent: number): Finished =>
  sent === 0 ? finished : {
    ...finished,
    tokens: finished.tokens.slice(sent),
    logprobs: finished.logprobs?.slice(sent),
    topLogprobs: finished.topLogprobs?.slice(sent)
  }

/**
 * The usage of a request's finished choices (`n` per prompt, in order), counted in the server's
 * metrics: where every answer, plain or streamed, counts its tokens, once per request.
 *
 * @since 0.2.0
 */
export const countedUsage = (shared: Shared, finished: ReadonlyArray<Finished | undefined>, n: number): Usage => {
  const total = usage(finished, n)
  shared.state.metrics.tokens(total.prompt_tokens, total.completion_tokens)
  return total
}

/**
 * Counts a generation interrupted before its end as an abort: by shutdown, or by the client that
 * went away. Where every answer, plain or streamed, counts it (a deadline is counted where the
 * failure is read, {@link failed}).
 *
 * @since 0.2.0
 */
export const countInterrupted = (shared: Shared): void =>
  shared.state.metrics.aborted(shared.state.gate.isClosing ? "shutdown" : "disconnect")

/** Usage of finished choices: each prompt counted once, every generated token counted. */
const usage = (finished: ReadonlyArray<Finished | undefined>, n: number): Usage => {
  let prompt = 0
  let completion = 0
  let cached = 0
  for (let i = 0; i < finished.length; i++) {
    const choice = finished[i]
    if (choice === undefined) continue
    completion += choice.completionTokens
    if (i % n === 0) {
      prompt += choice.promptTokens
      cached += choice.cachedTokens
    }
  }
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached }
  }
}
