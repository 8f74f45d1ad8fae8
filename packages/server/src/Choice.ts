/**
 * One choice: one request to the coordinator for one prompt, through the text package's
 * `TextGeneration` (ids to text with its incremental detokenizer, the final reply's tail, stop
 * strings and eos, finish reasons, usage with cached tokens). Streamed, a stop string or eos ends
 * the stream early, which aborts the request on the coordinator.
 *
 * One case goes to the client directly: `echo` with `logprobs` (what evaluation harnesses send to
 * score a text) needs the prompt's log probs, which `TextGeneration`'s result does not carry; the
 * reply is read here and its text made with the text package's `Detokenizer`.
 *
 * @since 0.1.0
 */
import { type ClientError, InferenceClient } from "@mcore-effect/client"
import { Reply as ProtocolReply, type SamplingParams } from "@mcore-effect/protocol"
import { Detokenizer, type TextError, type TextGeneration, type Tokenizer } from "@mcore-effect/text"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import type { FinishReason } from "./OpenAiSchema.ts"
import { badRequest, fromClientError, Internal, serverError, type ServerError } from "./ServerError.ts"
import type { State } from "./ServerState.ts"

/**
 * A prompt, as token ids (what is sent) and as text (what `echo` repeats).
 *
 * @since 0.1.0
 */
export interface Prompt {
  readonly ids: ReadonlyArray<number>
  readonly text: string
}

/**
 * A finished choice.
 *
 * @since 0.1.0
 */
export interface Finished {
  /** The generated text, cut where a stop string begins. */
  readonly text: string
  /** The generated ids that made `text`. */
  readonly tokens: ReadonlyArray<number>
  readonly finishReason: FinishReason
  readonly promptTokens: number
  readonly completionTokens: number
  readonly cachedTokens: number
  /** Log prob of each of `tokens`, when asked for. */
  readonly logprobs: ReadonlyArray<number> | undefined
  readonly topLogprobs: ReadonlyArray<Readonly<Record<string, number>>> | undefined
  /** Log probs of the prompt's tokens after the first (`echo` with `logprobs` only). */
  readonly promptLogprobs: ReadonlyArray<number> | undefined
  readonly promptTopLogprobs: ReadonlyArray<Readonly<Record<string, number>>> | undefined
}

/**
 * What generating a choice needs.
 *
 * @since 0.1.0
 */
export interface Context {
  readonly text: TextGeneration.Service
  readonly client: InferenceClient.Service
  readonly state: State
  readonly samplingParams: SamplingParams.SamplingParamsInput
  readonly stop: ReadonlyArray<string>
  /** Top log probs per token, when log probs are asked for at all. */
  readonly logprobs: number | undefined
  /** The prompt's log probs too (`echo` with `logprobs`). */
  readonly promptLogprobs: boolean
}

const failure = (context: Context) => (error: TextError.TextError | ClientError.ClientError): ServerError => {
  if (error._tag === "TextError") {
    return error.reason._tag === "InvalidArgument"
      ? badRequest(error.reason.name, error.reason.why)
      : serverError(new Internal({ why: error.message }))
  }
  context.state.health.failed(error)
  if (error.reason._tag === "RequestTimeout") context.state.metrics.aborted("deadline")
  return fromClientError(error)
}

const options = (context: Context): TextGeneration.GenerateOptions => ({
  samplingParams: context.samplingParams,
  stop: context.stop,
  skipSpecialTokens: true,
  logProbs: context.logprobs !== undefined,
  topLogProbs: context.logprobs,
  timeout: context.state.config.requestTimeoutMillis
})

const finishReason = (reason: TextGeneration.FinishReason): FinishReason => reason === "aborted" ? "abort" : reason

const finished = (generation: TextGeneration.Generation): Finished => ({
  text: generation.text,
  tokens: generation.tokenIds,
  finishReason: finishReason(generation.finishReason),
  promptTokens: generation.usage.promptTokens,
  completionTokens: generation.usage.completionTokens,
  cachedTokens: generation.usage.cachedTokens,
  logprobs: generation.logProbs,
  topLogprobs: generation.topLogProbs,
  promptLogprobs: undefined,
  promptTopLogprobs: undefined
})

/**
 * Generates one choice and waits for it. Interrupting the wait (the HTTP client went away)
 * aborts the request on the coordinator.
 *
 * @since 0.1.0
 */
export const generate = (context: Context, prompt: Prompt): Effect.Effect<Finished, ServerError> =>
  context.promptLogprobs
    ? scored(context, prompt)
    : context.text.generate({ tokens: prompt.ids }, options(context)).pipe(
      Effect.mapError(failure(context)),
      Effect.map((generation) => {
        context.state.health.replied()
        return finished(generation)
      })
    )

/**
 * What one choice's stream gives: the text package's parts (text deltas, then `Finish`), or, for
 * `echo` with `logprobs`, the scored result at once.
 *
 * @since 0.1.0
 */
export type Part = TextGeneration.StreamPart | { readonly _tag: "Scored"; readonly finished: Finished }

/**
 * One choice as a stream of {@link Part}s. Ending consumption early (the HTTP client went away)
 * aborts the request on the coordinator. Not mapped here: the server consumes it in one place,
 * and every stream combinator costs about 1 KB per open stream (measured).
 *
 * @since 0.1.0
 */
export const parts = (
  context: Context,
  prompt: Prompt
): Stream.Stream<Part, TextError.TextError | ClientError.ClientError | ServerError> =>
  context.promptLogprobs
    ? Stream.fromEffect(Effect.map(scored(context, prompt), (finished): Part => ({ _tag: "Scored", finished })))
    : context.text.stream({ tokens: prompt.ids }, options(context))

/**
 * The server's error for a failure of {@link parts}.
 *
 * @since 0.1.0
 */
export const failed = (context: Context, error: TextError.TextError | ClientError.ClientError | ServerError): ServerError =>
  error._tag === "ServerError" ? error : failure(context)(error)

/**
 * The finished choice of the last part of {@link parts}.
 *
 * @since 0.1.0
 */
export const finishedOf = (context: Context, part: Exclude<Part, TextGeneration.TextDelta>): Finished => {
  if (part._tag === "Scored") return part.finished
  context.state.health.replied()
  return finished(part)
}

/** `echo` with `logprobs`: the reply read here for the prompt's log probs. */
const scored = (context: Context, prompt: Prompt): Effect.Effect<Finished, ServerError> =>
  context.client.submit(prompt.ids, context.samplingParams, { timeout: context.state.config.requestTimeoutMillis }).pipe(
    Effect.mapError(failure(context)),
    Effect.flatMap((raw) => {
      context.state.health.replied()
      const typed = InferenceClient.isDeserialized(raw) ? Result.succeed(raw) : ProtocolReply.decodeReply(raw)
      if (Result.isFailure(typed)) {
        return Effect.fail(serverError(new Internal({ why: `the engine's reply could not be read: ${typed.failure.message}` })))
      }
      const reply = typed.success
      const generated = reply.generated_tokens ?? []
      const detokenizer = Detokenizer.make(context.text.tokenizer as Tokenizer.Service, { skipSpecialTokens: true, stop: context.stop })
      const text = detokenizer.push(generated) + detokenizer.finish()
      const stopped = detokenizer.stopString !== undefined
      const tokens = stopped ? generated.slice(0, detokenizer.tokenCount) : generated
      const requested = context.samplingParams.num_tokens_to_generate
      const logprobs = reply.generated_log_probs ?? undefined
      const top = reply.generated_top_n_logprobs ?? undefined
      return Effect.succeed<Finished>({
        text,
        tokens,
        finishReason: !stopped && typeof requested === "number" && generated.length >= requested ? "length" : "stop",
        promptTokens: prompt.ids.length,
        completionTokens: generated.length,
        cachedTokens: reply.num_cached_tokens ?? 0,
        logprobs: logprobs?.slice(0, tokens.length),
        topLogprobs: top?.slice(0, tokens.length),
        promptLogprobs: reply.prompt_log_probs ?? undefined,
        promptTopLogprobs: reply.prompt_top_n_logprobs ?? undefined
      })
    })
  )
