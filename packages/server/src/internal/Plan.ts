/**
 * One request's plan: everything a generation request asks, read once, before anything is sent.
 * An endpoint's handler decodes its body, refuses what cannot be honoured, reads its sampling
 * fields (`Sampling`), vLLM's extension fields (`VllmParams`), its tools and media, tokenizes its
 * prompts and fits them in the context (`ContextLength`), then makes one {@link Plan}; the
 * responder (`Respond`) consumes it, as one JSON body or as an event stream. A plan is never
 * changed after it is made.
 *
 * How the answer is shaped ({@link Answer}) is part of the plan, as data: `answer/Answers` reads
 * it where the answer is written.
 *
 * @since 0.2.0
 */
import type { Media, SamplingParams } from "@mcore-effect/protocol"
import type { Tokenizer } from "@mcore-effect/text"
import type { FinishReason } from "../OpenAiSchema.ts"
import type { ResponsesRequest } from "../ResponsesRequest.ts"
import type * as AssistantReply from "./tools/AssistantReply.ts"
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
 * A chat completion's answer (`POST /v1/chat/completions`): its top log probs per token when log
 * probs are asked for, and how its replies are read (tool calls, reasoning) when they are.
 *
 * @since 0.2.0
 */
export interface ChatAnswer {
  readonly _tag: "Chat"
  readonly tokenizer: Tokenizer.Service
  readonly logprobs: number | undefined
  /** Set when the replies are read (tool calls, reasoning, a forced `tool_choice`). */
  readonly reading: AssistantReply.Reading | undefined
}

/**
 * A completion's answer (`POST /v1/completions`): its `logprobs` and whether it echoes the prompt.
 *
 * @since 0.2.0
 */
export interface CompletionAnswer {
  readonly _tag: "Completion"
  readonly tokenizer: Tokenizer.Service
  readonly logprobs: number | undefined
  readonly echo: boolean
}

/**
 * A response's answer (`POST /v1/responses`): the request it echoes, and how its replies are read.
 *
 * @since 0.2.0
 */
export interface ResponsesAnswer {
  readonly _tag: "Responses"
  readonly tokenizer: Tokenizer.Service
  readonly request: ResponsesRequest
  readonly reading: AssistantReply.Reading
}

/**
 * How a request's answer is shaped, as data: which endpoint's answer, and what of the request it
 * depends on. `answer/Answers` reads it where the answer is written, as one JSON body or as the
 * records of a stream; nothing in it is called back.
 *
 * @since 0.2.0
 */
export type Answer = ChatAnswer | CompletionAnswer | ResponsesAnswer

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
  readonly answer: Answer
  /** vLLM's `include_stop_str_in_output`: a plain choice ends with the stop string that ended it. */
  readonly includeStopString: boolean
  /** vLLM's `return_token_ids`: a plain choice carries its `token_ids` and `prompt_token_ids`. */
  readonly returnTokenIds: boolean
  /** Where its requests go over several coordinators (`RoutingKey`), if it says. */
  readonly routingKey: string | undefined
}

/**
 * The plan of a request from its parts, each read and checked before: its sampling fields, its
 * vLLM fields, the tokens each choice may generate (`ContextLength`), its prompts, media,
 * answer and routing key.
 *
 * @since 0.2.0
 */
export const make = (
  sampling: Sampling.Asked,
  vllm: VllmParams.Asked,
  maxTokens: number | null,
  prompts: ReadonlyArray<Prompt>,
  media: Media.MultiModalData | undefined,
  answer: Answer,
  routingKey: string | undefined
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
    answer,
    includeStopString: vllm.includeStopString,
    returnTokenIds: vllm.returnTokenIds,
    routingKey
  }
}
