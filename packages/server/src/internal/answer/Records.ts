/**
 * The records of one streamed answer, as strings: what `StreamedChoices` asks of an answer as its
 * choices' parts come, and `Sse.write` frames. `Answers.records` makes them for a plan's answer:
 * `Chunks`' for a chat or a completion, `ResponseEvents` for the Responses API.
 *
 * @since 0.2.0
 */
import type { TextGeneration } from "@mcore-effect/text"
import type { Usage } from "../../OpenAiSchema.ts"
import type { ServerError } from "../../ServerError.ts"
import type { Finished, Prompt } from "../Plan.ts"

/**
 * The records of one stream, as strings.
 *
 * @since 0.1.0
 */
export interface Records {
  /** The record opening choice `index`, if the endpoint sends one. */
  readonly opening: (index: number, prompt: Prompt) => string | undefined
  /** The record carrying `text` for choice `index`. */
  readonly delta: (index: number, text: string) => string
  /**
   * The record carrying a delta's text and its tokens' log probs, when the delta has them and the
   * endpoint streams them per chunk; `undefined` otherwise (then {@link delta}).
   */
  readonly deltaLogprobs: (index: number, part: TextGeneration.TextDelta) => string | undefined
  /** The record closing choice `index`. */
  readonly closing: (index: number, finished: Finished, prompt: Prompt) => string
  /** Why choice `index` cannot be closed (a forced tool call not made), if it cannot; asked before {@link closing}. */
  readonly refusal: (index: number, finished: Finished) => ServerError | undefined
  /**
   * The records that end a stream whose choices all closed, given the request's usage: with
   * `stream_options.include_usage`, a chunk with no choices and the usage; then `data: [DONE]`.
   */
  readonly end: (usage: Usage) => string
  /**
   * The record of a failure after the headers went out (too late for a status): OpenAI's error
   * object, what its SDKs raise as an `APIError`. Nothing follows it.
   */
  readonly failure: (error: ServerError) => string
}
