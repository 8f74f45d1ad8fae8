/**
 * `POST /v1/chat/completions`: the messages rendered with the model's chat template (with the
 * generation prompt), `n` choices, `logprobs` / `top_logprobs`, streamed or not; tool calls and
 * reasoning read out of the text by the server's parsers (`tools/`), a forced `tool_choice`
 * written into the prompt and checked in the reply (`ToolRequest`); image parts sent as the
 * request's media (`ChatMessages`, `media/ChatImages`). Structured output, audio and the like are
 * not supported, and a request that asks for them is refused with a 400 naming the parameter: a
 * client must never get plain text where it asked for a JSON schema.
 *
 * @since 0.1.0
 */
import type { Tokenizer } from "@mcore-effect/text"
import * as Effect from "effect/Effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as ChatAnswer from "./ChatAnswer.ts"
import * as CommonShape from "./CommonShape.ts"
import type { Handler } from "./Handler.ts"
import * as IgnoredFields from "./IgnoredFields.ts"
import * as OpenAiSchema from "../OpenAiSchema.ts"
import { readRequest } from "./Prompts.ts"
import type * as Plan from "./Plan.ts"
import * as TopLogprobs from "./TopLogprobs.ts"
import { badRequest, type ServerError } from "../ServerError.ts"
import * as ChatMessages from "./ChatMessages.ts"
import * as AssistantReply from "./tools/AssistantReply.ts"

const decode = OpenAiSchema.decode(OpenAiSchema.ChatCompletionRequest, CommonShape.isChatCompletionRequest)

/** vLLM's other fields: ignored when they change nothing, else refused (`IgnoredFields`). */
const fieldPolicy = IgnoredFields.policy(Object.keys(OpenAiSchema.ChatCompletionRequest.fields), IgnoredFields.chatFields)

const neutralChoice = (choice: unknown): boolean => choice == null || choice === "none" || choice === "auto"

/** The first parameter asking for something not supported, as a 400. */
const unsupported = (request: OpenAiSchema.ChatCompletionRequest): ServerError | undefined => {
  if (request.functions != null && request.functions.length > 0) return badRequest("functions", "function calls are not supported")
  if (!neutralChoice(request.function_call)) return badRequest("function_call", "function calls are not supported")
  if (request.response_format != null && request.response_format.type !== "text") {
    return badRequest("response_format", `${JSON.stringify(request.response_format.type)} is not supported (only "text")`)
  }
  if (request.modalities != null && request.modalities.some((m) => m !== "text")) {
    return badRequest("modalities", "only text is supported")
  }
  if (request.audio != null) return badRequest("audio", "not supported")
  if (request.prediction != null) return badRequest("prediction", "not supported")
  if (request.web_search_options != null) return badRequest("web_search_options", "not supported")
  if (request.top_logprobs != null && request.logprobs !== true) {
    return badRequest("top_logprobs", "requires logprobs to be true")
  }
  return undefined
}

const bytesOf = (token: string): Array<number> => Array.from(Buffer.from(token, "utf8"))

/** OpenAI's chat log probs for a finished choice. */
const chatLogprobs = (
  tokenizer: Tokenizer.Service,
  finished: Pick<Plan.Finished, "tokens" | "logprobs" | "topLogprobs">,
  top: number
): { readonly content: ReadonlyArray<OpenAiSchema.ChatLogprob> } => {
  const content: Array<OpenAiSchema.ChatLogprob> = []
  const values = finished.logprobs ?? []
  const tops = finished.topLogprobs ?? []
  for (let i = 0; i < finished.tokens.length; i++) {
    const token = tokenizer.decode([finished.tokens[i]!])
    const logprob = values[i] ?? 0
    // The token first, then the engine's alternatives, `top` in all (`TopLogprobs`).
    const alternatives = TopLogprobs.entries(token, logprob, tops[i], top).map(([t, lp]) => ({ token: t, logprob: lp, bytes: bytesOf(t) }))
    content.push({ token, logprob, bytes: bytesOf(token), top_logprobs: alternatives })
  }
  return { content }
}

/** The endpoint of requests without log probs, one per tokenizer (see {@link endpointOf}). */
const plainEndpoints = new WeakMap<Tokenizer.Service, Plan.Endpoint>()

/**
 * The endpoint's shapes, made outside `handle`: a streamed response holds its format until the
 * last chunk, and closures made in `handle` would hold everything of `handle` they share a
 * context with (the request, its body and plan). Without log probs, the same for every request
 * (PERFORMANCE.md#endpoint-shapes).
 */
const endpointOf = (tokenizer: Tokenizer.Service, logprobs: number | undefined): Plan.Endpoint => {
  if (logprobs !== undefined) return makeEndpoint(tokenizer, logprobs)
  let endpoint = plainEndpoints.get(tokenizer)
  if (endpoint === undefined) {
    endpoint = makeEndpoint(tokenizer, undefined)
    plainEndpoints.set(tokenizer, endpoint)
  }
  return endpoint
}

const makeEndpoint = (tokenizer: Tokenizer.Service, logprobs: number | undefined): Plan.Endpoint => {
  const logprobsOf = (finished: Plan.Finished) =>
    logprobs === undefined ? null : chatLogprobs(tokenizer, finished, logprobs)
  return {
    idPrefix: "chatcmpl-",
    object: "chat.completion",
    format: {
      chunkObject: "chat.completion.chunk",
      opening: (index) => ({ index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }),
      delta: (index, content) => ({ index, delta: { content }, logprobs: null, finish_reason: null }),
      closing: (index, finished) => ({ index, delta: {}, logprobs: logprobsOf(finished), finish_reason: finished.finishReason }),
      // Per chunk only without top log probs: the engines' partials carry no top tokens.
      deltaLogprobs: logprobs === 0
        ? (index, content, tokens, values) => ({
          index,
          delta: { content },
          logprobs: chatLogprobs(tokenizer, { tokens, logprobs: values, topLogprobs: undefined }, 0),
          finish_reason: null
        })
        : undefined
    },
    choice: (index, finished) => ({
      index,
      message: { role: "assistant", content: finished.text, refusal: null },
      logprobs: logprobsOf(finished),
      finish_reason: finished.finishReason
    })
  }
}

/** Reads a finished text as the message and finish reason of a choice. */
const readFinished = (reading: AssistantReply.Reading, finished: Plan.Finished) => {
  const reply = AssistantReply.read(reading, finished.text, true)
  const called = reply.calls.length > 0
  const message: Record<string, unknown> = {
    role: "assistant",
    content: called && reply.content === "" ? null : reply.content,
    refusal: null
  }
  if (reading.reasoning !== undefined) {
    // Under both names: `reasoning_content` (what vLLM wrote first, and DeepSeek's API) and
    // `reasoning` (vLLM's current name, `ChatMessage.reasoning` in its protocol).
    const reasoning = reply.reasoning === "" ? null : reply.reasoning
    message["reasoning_content"] = reasoning
    message["reasoning"] = reasoning
  }
  if (called) message["tool_calls"] = AssistantReply.toolCalls(reply.calls)
  return { message, finishReason: called && finished.finishReason === "stop" ? "tool_calls" as const : finished.finishReason }
}

/**
 * The endpoint of a request whose replies are read (tool calls, reasoning): made per request, as
 * each streamed choice keeps what it read so far. With a forced `tool_choice`, a reply that is
 * not the call is refused, plain or streamed.
 */
const readingEndpoint = (
  tokenizer: Tokenizer.Service,
  logprobs: number | undefined,
  reading: AssistantReply.Reading
): Plan.Endpoint => {
  const plain = endpointOf(tokenizer, logprobs)
  const logprobsOf = (finished: Plan.Finished) =>
    logprobs === undefined ? null : chatLogprobs(tokenizer, finished, logprobs)
  const chunk = (index: number, delta: unknown) => ({ index, delta, logprobs: null, finish_reason: null })
  const forced = reading.forced !== undefined
  return {
    ...plain,
    format: {
      ...plain.format,
      reader: (index) => {
        const deltas = new AssistantReply.Deltas(reading)
        return {
          deltas: (text) => deltas.push(text).map((delta) => chunk(index, delta)),
          closing: (finished) => {
            const last: Array<unknown> = deltas.end().map((delta) => chunk(index, delta))
            const reason = deltas.calledTools && finished.finishReason === "stop" ? "tool_calls" : finished.finishReason
            last.push({ index, delta: {}, logprobs: logprobsOf(finished), finish_reason: reason })
            return last
          },
          refusal: forced ? (finished) => ChatAnswer.notMet(reading, deltas.final(), finished) : undefined
        }
      }
    },
    choice: (index, finished) => {
      const read = readFinished(reading, finished)
      return { index, message: read.message, logprobs: logprobsOf(finished), finish_reason: read.finishReason }
    },
    refusal: forced ? (finished) => ChatAnswer.notMet(reading, AssistantReply.read(reading, finished.text, true), finished) : undefined
  }
}

/** How a chat completion answers (`ChatAnswer`): its names, messages and endpoints. */
const shape: ChatAnswer.Shape<OpenAiSchema.ChatCompletionRequest> = {
  names: (request) => ({
    prompt: "messages",
    maxTokens: request.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens"
  }),
  read: (request, placeholder) => ChatMessages.templateMessages(request.messages, placeholder),
  endpoint: (_request, tokenizer, logprobs, reading) =>
    reading.reasoning === undefined && reading.calls === undefined
      ? endpointOf(tokenizer, logprobs)
      : readingEndpoint(tokenizer, logprobs, reading)
}

/**
 * The route's handler: the body's ignorable fields sifted out (`IgnoredFields`), the rest
 * decoded and its unsupported parameters refused, then the chat answered (`ChatAnswer`).
 *
 * @since 0.1.0
 */
export const handle = (
  handler: Handler
): Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError, Scope.Scope> => {
  const decoded = readRequest(handler, fieldPolicy, decode)
  if (Result.isFailure(decoded)) return Effect.fail(decoded.failure)
  const request = decoded.success
  const refused = unsupported(request)
  if (refused !== undefined) return Effect.fail(refused)
  return ChatAnswer.answer(handler, request, shape)
}
