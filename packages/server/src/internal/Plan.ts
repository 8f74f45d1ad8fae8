/**
 * One request's plan: everything a generation request asks, read once, before anything is sent.
 * An endpoint's handler decodes its body, refuses what cannot be honoured, reads its sampling
 * fields (`Sampling`), vLLM's extension fields (`VllmParams`), its tools and media, tokenizes its
 * prompts and fits them in the context (`ContextLength`), then makes one {@link Plan}; the
 * responder (`Respond`) consumes it, as one JSON body or as an event stream. A plan is never
 * changed after it is made.
 *
 * The endpoint's shapes ({@link Endpoint}, {@link Format}, {@link WholeEndpoint}) are part of the
 * plan: how a choice, a chunk and a stream's records look.
 *
 * @since 0.2.0
 */
import type { Media, SamplingParams } from "@mcore-effect/protocol"
import type { TextGeneration } from "@mcore-effect/text"
import type { FinishReason, Usage } from "../OpenAiSchema.ts"
import type { ServerError } from "../ServerError.ts"
import type * as Sampling from "./Sampling.ts"
import type * as VllmParams from "./VllmParams.ts"

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
  /** The stop string that ended the text (not part of it), if one did. */
  readonly stopString?: string | undefined
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
 * What identifies a response.
 *
 * @since 0.1.0
 */
export interface Meta {
  readonly id: string
  readonly created: number
  readonly model: string
}

/**
 * A streamed choice read as its text comes (see {@link Format.reader}).
 *
 * @since 0.1.0
 */
export interface ChoiceReader {
  readonly deltas: (text: string) => ReadonlyArray<unknown>
  readonly closing: (finished: Finished, prompt: Prompt) => ReadonlyArray<unknown>
  /**
   * Why the finished choice cannot be answered (a forced tool call the model did not make): the
   * stream then ends with that error's record in place of the closing chunks.
   */
  readonly refusal?: ((finished: Finished) => ServerError | undefined) | undefined
}

/**
 * How an endpoint shapes its chunks.
 *
 * @since 0.1.0
 */
export interface Format {
  /** `object` of a chunk. */
  readonly chunkObject: string
  /** The choice of the chunk that opens choice `index`, if the endpoint sends one. */
  readonly opening: ((index: number, prompt: Prompt) => unknown) | undefined
  /** The choice of a chunk carrying `text`. */
  readonly delta: (index: number, text: string) => unknown
  /** The choice of the chunk that closes choice `index`. */
  readonly closing: (index: number, finished: Finished, prompt: Prompt) => unknown
  /**
   * When set, a choice's text is read as it comes (tool calls, reasoning): each text gives the
   * choices of zero or more chunks, in place of `delta`, and the end those of its closing chunks,
   * in place of `closing`. One per streamed choice.
   */
  readonly reader?: ((index: number) => ChoiceReader) | undefined
  /**
   * The choice of a chunk carrying `text` and the log probs of the tokens it came from, when the
   * endpoint streams log probs per chunk (the engines' partials carry them); the closing chunk then
   * carries only the tokens' not sent before (`Choice.unsent`).
   */
  readonly deltaLogprobs?: ((index: number, text: string, tokens: ReadonlyArray<number>, logprobs: ReadonlyArray<number>) => unknown) | undefined
}

/**
 * How an endpoint shapes its answers: the chunks ({@link Format}), and the choice of a plain
 * response.
 *
 * @since 0.1.0
 */
export interface Endpoint {
  /** `cmpl-`, `chatcmpl-`. */
  readonly idPrefix: string
  /** `object` of a plain response. */
  readonly object: string
  readonly format: Format
  /** A choice of a plain response. */
  readonly choice: (index: number, finished: Finished, prompt: Prompt) => unknown
  /** Why a finished choice cannot be answered (see {@link ChoiceReader.refusal}): the request fails with it. */
  readonly refusal?: ((finished: Finished) => ServerError | undefined) | undefined
}

/**
 * The records of one stream, as strings (`Chunks` makes them from a {@link Format};
 * `responses/ResponseEvents` is the Responses API's).
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
  /** Why choice `index` cannot be closed (its reader's refusal), if it cannot; asked before {@link closing}. */
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

/**
 * An endpoint that shapes its answers whole rather than as choices (OpenAI's Responses API): the
 * records of a stream (over the same parts and reader as a chat's), and the body of a plain
 * answer from its finished choices and their usage.
 *
 * @since 0.2.0
 */
export interface WholeEndpoint {
  /** `resp_`. */
  readonly idPrefix: string
  /** The records of one stream. */
  readonly records: (meta: Meta) => Records
  /** The body of a plain answer. */
  readonly body: (meta: Meta, finished: ReadonlyArray<Finished>, usage: Usage) => unknown
  /** Why a finished choice cannot be answered (see {@link ChoiceReader.refusal}): the request fails with it. */
  readonly refusal?: ((finished: Finished) => ServerError | undefined) | undefined
}

/**
 * Whether `endpoint` shapes its answers whole.
 *
 * @since 0.2.0
 */
export const isWhole = (endpoint: Endpoint | WholeEndpoint): endpoint is WholeEndpoint => "records" in endpoint

/**
 * What one request asks, whichever endpoint it came through: its prompts, its choices, what is
 * sent to the engine for each, and how its answer is shaped.
 *
 * @since 0.2.0
 */
export interface Plan {
  /** The prompts; choice `p * n + j` is the `j`th of prompt `p`. */
  readonly prompts: ReadonlyArray<Prompt>
  /** Choices per prompt. */
  readonly n: number
  readonly stream: boolean
  /** `stream_options.include_usage`. */
  readonly includeUsage: boolean
  /**
   * The engine's sampling fields the request sets itself (temperature, top-k, top-p, the token
   * budget, vLLM's `ignore_eos` and `stream_interval`); `streaming` is the client's, and the stop
   * strings and log probs below are the text layer's to turn into wire fields
   * (`TextGeneration`'s options: `stop_words`, `return_log_probs`, `top_n_logprobs`,
   * `skip_prompt_log_probs`).
   */
  readonly samplingParams: SamplingParams.SamplingParamsInput
  /** Stop strings: generation ends where one begins, and the text is cut there. */
  readonly stop: ReadonlyArray<string>
  /** Top log probs per token, when log probs are asked for at all. */
  readonly logprobs: number | undefined
  /** The prompt's log probs too (`echo` with `logprobs`). */
  readonly promptLogprobs: boolean
  /** Media sent with every choice's request (a chat's images), when there are any. */
  readonly media: Media.MultiModalData | undefined
  /** How the answer is shaped. */
  readonly endpoint: Endpoint | WholeEndpoint
  /** vLLM's `include_stop_str_in_output`: a plain choice ends with the stop string that ended it. */
  readonly includeStopString: boolean
  /** vLLM's `return_token_ids`: a plain choice carries its `token_ids` and `prompt_token_ids`. */
  readonly returnTokenIds: boolean
}

/**
 * The plan of a request from its parts, each read and checked before: its sampling fields, its
 * vLLM fields, the tokens each choice may generate (`ContextLength`), its prompts, media and
 * endpoint.
 *
 * @since 0.2.0
 */
export const make = (
  sampling: Sampling.Asked,
  vllm: VllmParams.Asked,
  maxTokens: number | null,
  prompts: ReadonlyArray<Prompt>,
  media: Media.MultiModalData | undefined,
  endpoint: Endpoint | WholeEndpoint
): Plan => {
  const { logprobs, promptLogprobs, stop } = sampling
  const samplingParams: { -readonly [K in keyof SamplingParams.SamplingParamsInput]: SamplingParams.SamplingParamsInput[K] } = {
    temperature: sampling.temperature,
    top_k: sampling.topK,
    top_p: sampling.topP,
    num_tokens_to_generate: maxTokens
  }
  // vLLM's `ignore_eos` and `stream_interval`, as the engine takes them.
  if (vllm.ignoreEos) samplingParams.termination_id = -1
  if (vllm.streamInterval !== undefined) samplingParams.streaming_interval = vllm.streamInterval
  return {
    prompts,
    n: sampling.n,
    stream: sampling.stream,
    includeUsage: sampling.includeUsage,
    samplingParams,
    stop,
    logprobs,
    promptLogprobs,
    media,
    endpoint,
    includeStopString: vllm.includeStopString,
    returnTokenIds: vllm.returnTokenIds
  }
}
