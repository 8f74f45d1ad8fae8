/**
 * `POST /v1/responses`: OpenAI's Responses API as vLLM serves it, on the chat's path
 * (`ChatAnswer`: the same rendering, sampling, admission, tool-call and reasoning parsers and
 * context-length checks as `/v1/chat/completions`). Its fields that change nothing are sifted out
 * and named in `x-ignored-fields` (`IgnoredFields`, as on the other endpoints); the request is
 * read as a chat
 * (`responses/ResponsesInput`: stateful and output-changing fields refused by name), answered as
 * one response object (`responses/ResponseObject`) or as the API's event stream
 * (`responses/ResponseEvents`). Nothing is stored: every response says `store: false`.
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
import * as OpenAiSchema from "./OpenAiSchema.ts"
import { readRequest } from "./Prompts.ts"
import type * as Routes from "./Routes.ts"
import type { ServerError } from "./ServerError.ts"
import * as AssistantReply from "./tools/AssistantReply.ts"
import { ResponseEvents } from "./responses/ResponseEvents.ts"
import * as ResponseObject from "./responses/ResponseObject.ts"
import * as ResponsesInput from "./responses/ResponsesInput.ts"
import { ResponsesRequest } from "./responses/ResponsesRequest.ts"

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

/** How a response answers (`ChatAnswer`): a constant, nothing made per request but its endpoint. */
const shape: ChatAnswer.Shape<ResponsesInput.Read> = {
  names: () => names,
  read: (request, placeholder) => ChatMessages.templateMessages(request.messages, placeholder),
  endpoint: (request, tokenizer, _logprobs, reading) => ({
    idPrefix: "resp_",
    records: (meta) => new ResponseEvents(meta, request.responses, tokenizer, reading),
    body: (meta, finished, total) => {
      const one = finished[0]!
      const used = ResponseObject.usage(total, ResponseObject.reasoningTokens(tokenizer, reading, one))
      return ResponseObject.response(meta, request.responses, ResponseObject.statusOf(one), ResponseObject.output(reading, one), used)
    },
    refusal: reading.forced === undefined
      ? undefined
      : (finished) => ChatAnswer.notMet(reading, AssistantReply.read(reading, finished.text, true), finished)
  })
}

/**
 * The route's handler.
 *
 * @since 0.2.0
 */
export const handle = (
  generation: Routes.Generation
): Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError, Scope.Scope> => {
  const decoded = readRequest(generation, fieldPolicy, decode)
  if (Result.isFailure(decoded)) return Effect.fail(decoded.failure)
  const read = ResponsesInput.read(decoded.success)
  if (Result.isFailure(read)) return Effect.fail(read.failure)
  return ChatAnswer.answer(generation, read.success, shape)
}
