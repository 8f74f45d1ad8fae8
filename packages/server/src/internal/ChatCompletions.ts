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
import { badRequest, type ServerError } from "../ServerError.ts"
import * as ChatMessages from "./ChatMessages.ts"
import * as ChatChoices from "./answer/ChatChoices.ts"

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

/** How a chat completion answers (`ChatAnswer`): its names, messages and answer. */
const shape: ChatAnswer.Shape<OpenAiSchema.ChatCompletionRequest> = {
  names: (request) => ({
    prompt: "messages",
    maxTokens: request.max_completion_tokens != null ? "max_completion_tokens" : "max_tokens"
  }),
  read: (request, placeholder) => ChatMessages.templateMessages(request.messages, placeholder),
  answer: (_request, tokenizer, logprobs, reading) => ChatChoices.answer(tokenizer, logprobs, reading)
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
