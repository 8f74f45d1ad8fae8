/**
 * The data `TextGeneration` takes and gives: prompts and options in; a finished `Generation`, or
 * a stream's text deltas and its `Finish`, out. Public as `TextGeneration`'s types (it
 * re-exports each); a module of its own so that the internals producing these values import
 * them without importing the service.
 *
 * @since 0.2.0
 * @internal
 */
import type { Media, SamplingParams } from "@mcore-effect/protocol"
import type * as Duration from "effect/Duration"
import type * as ChatTemplate from "../ChatTemplate.ts"

/**
 * A chat to render with the chat template; `addGenerationPrompt` defaults to true here (the model
 * is to answer).
 *
 * @category models
 * @since 0.1.0
 */
export interface ChatPrompt extends ChatTemplate.RenderOptions {
  readonly messages: ReadonlyArray<ChatTemplate.Message>
  /**
   * Text written after the rendered chat, tokenized with it: the start of the reply, which the
   * model continues (a server forcing a tool call writes the call's opening). Not part of the
   * generated text.
   */
  readonly prefill?: string | undefined
}

/**
 * A prompt: text (tokenized with the tokenizer), token ids as they are, or a chat.
 *
 * @category models
 * @since 0.1.0
 */
export type Prompt = string | { readonly tokens: ReadonlyArray<number> } | ChatPrompt

/**
 * Options of `TextGeneration.Service`'s `generate` and `stream`.
 *
 * @category models
 * @since 0.1.0
 */
export interface GenerateOptions {
  /**
   * The engine's sampling parameters (`num_tokens_to_generate`, `temperature`, `top_p`...; an
   * engine parameter Megatron's `SamplingParams` does not declare goes in `extra`), validated by
   * the client. `termination_id` defaults to the tokenizer's first eos id.
   */
  readonly samplingParams?: SamplingParams.SamplingParamsInput | undefined
  /**
   * Stop strings: the text ends where the first one begins (it is not part of the text). Also sent
   * as `stop_words`, so the engine can stop too, unless the sampling parameters set those.
   */
  readonly stop?: ReadonlyArray<string> | undefined
  /** Leave special tokens out of the text. Default true. */
  readonly skipSpecialTokens?: boolean | undefined
  /** Ask for the log probabilities of the generated tokens (`return_log_probs`). */
  readonly logProbs?: boolean | undefined
  /** Ask for the `n` most likely tokens at each step with theirs (`top_n_logprobs`). */
  readonly topLogProbs?: number | undefined
  /**
   * Ask for the prompt's log probabilities too (`return_log_probs` with `skip_prompt_log_probs`
   * false; with `topLogProbs`, the prompt's top tokens as well), e.g. to score a text.
   */
  readonly promptLogProbs?: boolean | undefined
  /** For a text prompt: add the tokenizer's special tokens (a bos) as `encode` does. Default true. */
  readonly addSpecialTokens?: boolean | undefined
  /** A deadline for the request (the client's `timeout`). */
  readonly timeout?: Duration.Input | undefined
  /**
   * Media sent with the request (`multi_modal_data`, e.g. `{ image: [bytes, ...] }` in the order
   * the prompt's image placeholders come), as the client's `SubmitOptions.multiModalData`; the
   * client refuses it (`UnsupportedByDialect`) where the dialect cannot carry media.
   */
  readonly multiModalData?: Media.MultiModalData | null | undefined
  /**
   * Where the request goes over several coordinators (the client's `SubmitOptions.routingKey`:
   * one key, one coordinator); one coordinator ignores it.
   */
  readonly routingKey?: string | undefined
}

/**
 * Why the generation ended: `stop` (an eos token, a stop string, or the engine's own stop),
 * `length` (the token budget), `aborted` (the request was aborted on the coordinator).
 *
 * @category models
 * @since 0.1.0
 */
export type FinishReason = "stop" | "length" | "aborted"

/**
 * Token counts of one request.
 *
 * @category models
 * @since 0.1.0
 */
export interface Usage {
  readonly promptTokens: number
  /** Generated tokens consumed (up to and including the one that ended the text). */
  readonly completionTokens: number
  /** Prompt tokens the engine found in its prefix cache (`num_cached_tokens`; 0 when not reported). */
  readonly cachedTokens: number
  readonly totalTokens: number
}

/**
 * A finished generation.
 *
 * @category models
 * @since 0.1.0
 */
export interface Generation {
  readonly text: string
  /** The generated ids, up to and including the one that ended the text. */
  readonly tokenIds: ReadonlyArray<number>
  readonly promptTokenIds: ReadonlyArray<number>
  readonly finishReason: FinishReason
  /** The stop string that ended the text, when one did. */
  readonly stopString: string | undefined
  readonly usage: Usage
  /** Log probabilities of `tokenIds`, when asked for (`logProbs`) and the engine sent them. */
  readonly logProbs: ReadonlyArray<number> | undefined
  /** The `topLogProbs` most likely tokens at each step (token text to log probability), when asked for. */
  readonly topLogProbs: ReadonlyArray<Readonly<Record<string, number>>> | undefined
  /**
   * Log probabilities of the prompt's tokens after the first, when asked for (`promptLogProbs`)
   * and the engine sent them (not on a `Finish` that came before the final reply).
   */
  readonly promptLogProbs: ReadonlyArray<number> | undefined
  /** The prompt's top tokens at each position, when asked for with `promptLogProbs` and `topLogProbs`. */
  readonly promptTopLogProbs: ReadonlyArray<Readonly<Record<string, number>>> | undefined
  /**
   * This client's id of the request, what `InferenceClient.abort` takes (undefined for a stream
   * that ended before any token event reached it).
   */
  readonly requestId: number | undefined
  /**
   * The coordinator's id of the request, the reply's `request_id` (what the engines log; undefined
   * without a final reply).
   */
  readonly coordinatorRequestId: number | undefined
}

/**
 * New text of a streamed generation, with the ids that produced it.
 *
 * @category models
 * @since 0.1.0
 */
export interface TextDelta {
  readonly _tag: "TextDelta"
  readonly text: string
  readonly tokenIds: ReadonlyArray<number>
  /**
   * The log probs of `tokenIds`, one each, when log probs were asked for and the engine's partials
   * carry them (Megatron main's do); otherwise absent, and they come with the `Finish`.
   */
  readonly logProbs?: ReadonlyArray<number> | undefined
}

/**
 * The last part of a streamed generation: the whole of it (`text` is all the deltas together).
 *
 * @category models
 * @since 0.1.0
 */
export interface Finish extends Generation {
  readonly _tag: "Finish"
}

/**
 * What `stream` emits: text deltas (none empty), then exactly one `Finish`.
 *
 * @category models
 * @since 0.1.0
 */
export type StreamPart = TextDelta | Finish
