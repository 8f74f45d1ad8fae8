/**
 * `POST /tokenize` and `POST /detokenize`, in vLLM's shapes: a prompt (`{ model?, prompt,
 * add_special_tokens? = true }`) or a chat (`{ model?, messages, add_generation_prompt? = true,
 * continue_final_message? = false }`, rendered with the served chat template as the chat endpoint
 * renders it) to `{ count, max_model_len, tokens }` (with `token_strs` when `return_token_strs`);
 * `{ model?, tokens }` back to `{ prompt }`. Nothing goes to the coordinator.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type { TextGeneration } from "@mcore-effect/text"
import { readJson } from "./Admission.ts"
import { templateMessages } from "./ChatMessages.ts"
import * as DeveloperRole from "./DeveloperRole.ts"
import * as JsonResponse from "./JsonResponse.ts"
import * as OpenAiSchema from "../OpenAiSchema.ts"
import { decodeRequest, tokenizePrompt, tokenPrompt } from "./Prompts.ts"
import { badRequest, type ServerError } from "../ServerError.ts"
import type { State } from "./ServerState.ts"

/**
 * The body of `POST /tokenize` for a prompt.
 *
 * @since 0.1.0
 */
export const TokenizePromptRequest = Schema.Struct({
  model: Schema.optionalKey(Schema.String),
  prompt: Schema.String,
  add_special_tokens: Schema.optionalKey(Schema.Boolean),
  return_token_strs: Schema.optionalKey(Schema.NullOr(Schema.Boolean))
})

/**
 * The body of `POST /tokenize` for a chat.
 *
 * @since 0.1.0
 */
export const TokenizeChatRequest = Schema.Struct({
  model: Schema.optionalKey(Schema.String),
  messages: Schema.Array(OpenAiSchema.ChatMessage).check(Schema.isMinLength(1)),
  add_generation_prompt: Schema.optionalKey(Schema.Boolean),
  continue_final_message: Schema.optionalKey(Schema.Boolean),
  add_special_tokens: Schema.optionalKey(Schema.Boolean),
  return_token_strs: Schema.optionalKey(Schema.NullOr(Schema.Boolean))
})

/**
 * The body of `POST /detokenize`.
 *
 * @since 0.1.0
 */
export const DetokenizeRequest = Schema.Struct({
  model: Schema.optionalKey(Schema.String),
  // Any number: each id is checked by `tokenPrompt`, which says what is wrong with it.
  tokens: Schema.Array(Schema.Number)
})

const decodePrompt = OpenAiSchema.decode(TokenizePromptRequest)
const decodeChat = OpenAiSchema.decode(TokenizeChatRequest)
const decodeDetokenize = OpenAiSchema.decode(DetokenizeRequest)

const isChat = (body: unknown): boolean => typeof body === "object" && body !== null && Object.hasOwn(body, "messages")

const tokenized = (state: State, text: TextGeneration.Service, ids: ReadonlyArray<number>, strs: boolean | null | undefined) =>
  JsonResponse.json({
    count: ids.length,
    max_model_len: state.maxModelLen,
    tokens: ids,
    ...(strs === true ? { token_strs: ids.map((id) => text.tokenizer.decode([id])) } : {})
  })

const chatTokens = (
  state: State,
  text: TextGeneration.Service,
  body: unknown
): Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError> => {
  const decoded = decodeRequest(state, decodeChat, body)
  if (Result.isFailure(decoded)) return Effect.fail(decoded.failure)
  const request = decoded.success
  if (request.add_special_tokens === true) {
    return Effect.fail(badRequest("add_special_tokens", "only false for chats (the chat template writes the special tokens)"))
  }
  if (Result.isFailure(text.chatTemplate)) {
    return Effect.fail(badRequest("messages", `this model has no usable chat template (${text.chatTemplate.failure.message})`))
  }
  // Image parts rendered as the chat endpoint renders them; their URLs are not loaded here.
  const messages = templateMessages(request.messages, state.config.media.imagePlaceholder)
  if (Result.isFailure(messages)) return Effect.fail(messages.failure)
  const continueFinal = request.continue_final_message === true
  // Developer messages as the chat endpoint renders them (`DeveloperRole`).
  return Effect.flatMap(DeveloperRole.forTemplate(text.chatTemplate.success, messages.success.messages, undefined), (read) =>
    Effect.matchEffect(
      text.promptTokens({
        messages: read.messages,
        addGenerationPrompt: continueFinal ? false : request.add_generation_prompt ?? true,
        continueFinalMessage: continueFinal
      }),
      {
        onFailure: (error) => Effect.fail(badRequest("messages", `the chat template refused them: ${error.reason.message}`)),
        onSuccess: (ids) => Effect.succeed(tokenized(state, text, ids, request.return_token_strs))
      }
    ))
}

const tokenize = (state: State, text: TextGeneration.Service) => (body: unknown) => {
  if (isChat(body)) return chatTokens(state, text, body)
  const decoded = decodeRequest(state, decodePrompt, body)
  if (Result.isFailure(decoded)) return Effect.fail(decoded.failure)
  const request = decoded.success
  // An empty prompt is zero tokens here (vLLM answers it so), not the refusal generation gives.
  if (request.prompt === "") return Effect.succeed(tokenized(state, text, [], request.return_token_strs))
  const prompt = tokenizePrompt(text.tokenizer, request.prompt, "prompt", request.add_special_tokens ?? true)
  if (Result.isFailure(prompt)) return Effect.fail(prompt.failure)
  return Effect.succeed(tokenized(state, text, prompt.success.ids, request.return_token_strs))
}

const detokenize = (state: State, text: TextGeneration.Service) => (body: unknown) => {
  const decoded = decodeRequest(state, decodeDetokenize, body)
  if (Result.isFailure(decoded)) return Effect.fail(decoded.failure)
  const ids = decoded.success.tokens
  if (ids.length === 0) return Effect.succeed(JsonResponse.json({ prompt: "" }))
  const prompt = tokenPrompt(text.tokenizer, ids, "tokens")
  if (Result.isFailure(prompt)) return Effect.fail(prompt.failure)
  return Effect.succeed(JsonResponse.json({ prompt: prompt.success.text }))
}

/**
 * The handlers of the two routes, by path: the body read within the body limit, then answered.
 *
 * @since 0.1.0
 */
export const handlers = (state: State, text: TextGeneration.Service) => {
  const read = (answer: (body: unknown) => Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError>) =>
  (request: HttpServerRequest.HttpServerRequest) => Effect.flatMap(readJson(request, state.config.maxBodyBytes), answer)
  return { tokenize: read(tokenize(state, text)), detokenize: read(detokenize(state, text)) }
}
