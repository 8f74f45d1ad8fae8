/**
 * `POST /v1/responses`: OpenAI's Responses API as vLLM serves it, on the chat's path
 * (`ChatAnswer`: the same rendering, sampling, admission, tool-call and reasoning parsers and
 * context-length checks as `/v1/chat/completions`). The request is read as a chat
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
import * as OpenAiSchema from "./OpenAiSchema.ts"
import { decodeRequest } from "./Prompts.ts"
import type * as Routes from "./Routes.ts"
import type { ServerError } from "./ServerError.ts"
import * as AssistantReply from "./tools/AssistantReply.ts"
import { ResponseEvents } from "./responses/ResponseEvents.ts"
import * as ResponseObject from "./responses/ResponseObject.ts"
import * as ResponsesInput from "./responses/ResponsesInput.ts"
import { ResponsesRequest } from "./responses/ResponsesRequest.ts"

/**
 * The body's decoder: strict, as the other endpoints' (an unknown field is a 400 naming it). The
 * place to switch to accepted-and-ignored fields is here, as for chat completions.
 */
const decode = OpenAiSchema.decode(ResponsesRequest)

const names = { prompt: "input", maxTokens: "max_output_tokens" } as const

/** How a response answers (`ChatAnswer`): a constant, nothing made per request but its endpoint. */
const shape: ChatAnswer.Shape<ResponsesInput.Read> = {
  names: () => names,
  read: (request, placeholder) => {
    const read = ChatMessages.templateMessages(request.messages, placeholder)
    if (Result.isFailure(read) || request.reasoning.size === 0) return read
    // The reasoning of an earlier turn, where the chat templates read it.
    const messages = read.success.messages.map((message, i) => {
      const reasoning = request.reasoning.get(i)
      return reasoning === undefined ? message : { ...message, reasoning_content: reasoning }
    })
    return Result.succeed({ ...read.success, messages })
  },
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
  const decoded = decodeRequest(generation.state, decode, generation.body)
  if (Result.isFailure(decoded)) return Effect.fail(decoded.failure)
  const read = ResponsesInput.read(decoded.success)
  if (Result.isFailure(read)) return Effect.fail(read.failure)
  return ChatAnswer.answer(generation, read.success, shape)
}
