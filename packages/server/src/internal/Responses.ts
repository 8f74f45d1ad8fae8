/**
 * `POST /v1/responses`: OpenAI's Responses API as vLLM serves it, on the chat's path
 * (`ChatAnswer`: the same rendering, sampling, admission, tool-call and reasoning parsers and
 * context-length checks as `/v1/chat/completions`). Its fields that change nothing are sifted out
 * and named in `x-ignored-fields` (`IgnoredFields`, as on the other endpoints); the request is
 * read as a chat
 * (`ResponsesInput`: stateful and output-changing fields refused by name), answered as
 * one response object (`answer/ResponseObject`) or as the API's event stream
 * (`answer/ResponseEvents`). Nothing is stored: every response says `store: false`.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as ChatAnswer from "./ChatAnswer.ts"
import * as ChatMessages from "./ChatMessages.ts"
import * as IgnoredFields from "./IgnoredFields.ts"
import * as OpenAiSchema from "../OpenAiSchema.ts"
import { readRequest } from "./Prompts.ts"
import type { Handler } from "./Handler.ts"
import type { ServerError } from "../ServerError.ts"
import * as ResponsesInput from "./ResponsesInput.ts"
import { ResponsesRequest } from "../ResponsesRequest.ts"

/** The body's decoder: strict, as the other endpoints' (an unknown field is a 400 naming it). */
const decode = OpenAiSchema.decode(ResponsesRequest)

/**
 * vLLM's fields of a Responses request this server does not act on, with the values that change
 * nothing (vLLM's `ResponsesRequest`), beside the chat's (`IgnoredFields.chatFields`).
 */
const responsesFields: ReadonlyArray<readonly [string, (value: unknown) => boolean, string]> = [
  ["priority", (v) => v === null || v === 0, "request priorities are not supported by the engines"],
  ["top_k", (v) => v === null || v === 0 || v === -1, "not supported on /v1/responses (only 0 or -1: no top-k)"],
  ["skip_special_tokens", (v) => v === null || v === true, "only true is supported"],
  ["logit_bias", (v) => v === null || (typeof v === "object" && !Array.isArray(v) && Object.keys(v as object).length === 0), "not supported by the engines"],
  ["enable_response_messages", (v) => v === null || v === false, "not supported (only false)"],
  ["previous_input_messages", (v) => v === null || (Array.isArray(v) && v.length === 0), "this server stores no responses; send the whole conversation as input"],
  // OpenAI's prompt-cache hints: they change nothing here, whatever they hold.
  ["prompt_cache_options", () => true, ""]
]

/**
 * What the endpoint does with the body's top-level fields (`IgnoredFields`): decodes its Schema's,
 * ignores those that change nothing (listed in `x-ignored-fields`, counted in `/metrics`), refuses
 * the rest by name.
 */
const fieldPolicy = IgnoredFields.policy(Object.keys(ResponsesRequest.fields), [...IgnoredFields.chatFields, ...responsesFields])

const names = { prompt: "input", maxTokens: "max_output_tokens" } as const

/** How a response answers (`ChatAnswer`): a constant, nothing made per request but its answer. */
const shape: ChatAnswer.Shape<ResponsesInput.Read> = {
  names: () => names,
  read: (request, placeholder) => ChatMessages.templateMessages(request.messages, placeholder),
  answer: (request, tokenizer, _logprobs, reading) => ({ _tag: "Responses", tokenizer, request: request.responses, reading })
}

/**
 * The route's handler.
 *
 * @since 0.2.0
 */
export const handle = (
  handler: Handler
): Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError, Scope.Scope> => {
  const decoded = readRequest(handler, fieldPolicy, decode)
  if (Result.isFailure(decoded)) return Effect.fail(decoded.failure)
  const read = ResponsesInput.read(decoded.success)
  if (Result.isFailure(read)) return Effect.fail(read.failure)
  return ChatAnswer.answer(handler, read.success, shape)
}
