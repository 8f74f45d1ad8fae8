/**
 * A chat answered, once its request is read: what `POST /v1/chat/completions` and `POST
 * /v1/responses` share, so that both render, sample, admit, parse and check a chat the same way.
 * From the request's chat fields and its messages as the template takes them: vLLM's extension
 * fields (`VllmParams`) and the sampling fields (`Sampling`) read, the tools and reasoning
 * (`ToolRequest`), the messages rendered with the chat template (developer messages as
 * system ones when it has no such role, `DeveloperRole`; images loaded and sent as the request's
 * media), the context length checked (`ContextLength`), then the request's one `Plan`, shaped by
 * the answer the caller makes from the request's reading of replies, answered by `Respond`.
 *
 * @since 0.2.0
 */
import type { Media } from "@mcore-effect/protocol"
import type { ChatTemplate, Tokenizer } from "@mcore-effect/text"
import * as Effect from "effect/Effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import type * as ChatMessages from "./ChatMessages.ts"
import * as ContextLength from "./ContextLength.ts"
import * as DeveloperRole from "./DeveloperRole.ts"
import type { Handler } from "./Handler.ts"
import type * as OpenAiSchema from "../OpenAiSchema.ts"
import * as Plan from "./Plan.ts"
import * as Respond from "./Respond.ts"
import * as RoutingKey from "./RoutingKey.ts"
import * as Sampling from "./Sampling.ts"
import { badRequest, type ServerError } from "../ServerError.ts"
import * as VllmParams from "./VllmParams.ts"
import * as ChatImages from "./media/ChatImages.ts"
import type * as AssistantReply from "./tools/AssistantReply.ts"
import * as ToolRequest from "./ToolRequest.ts"

/**
 * A chat request's fields but its messages (read before, into the template's messages).
 *
 * @since 0.2.0
 */
export type ChatFields = Omit<OpenAiSchema.ChatCompletionRequest, "messages">

/**
 * How an endpoint answers a chat (a constant per endpoint: nothing is made per request here): the
 * names its errors give the prompt and the token budget (`messages` and `max_tokens`, or `input`
 * and `max_output_tokens`), its request's messages as the template takes them (the server's image
 * placeholder given), and its answer (`Plan.Answer`, data), made from the request, its top log probs per token (when
 * asked for) and how its replies are read.
 *
 * @since 0.2.0
 */
export interface Shape<R extends ChatFields> {
  readonly names: (request: R) => ContextLength.Params
  readonly read: (request: R, imagePlaceholder: string | undefined) => Result.Result<ChatMessages.TemplateMessages, ServerError>
  readonly answer: (
    request: R,
    tokenizer: Tokenizer.Service,
    logprobs: number | undefined,
    reading: AssistantReply.Reading
  ) => Plan.Answer
}

/**
 * Answers a chat whose body was read: plain code up to the prompt's tokens (the checks are
 * synchronous, and each step of an `Effect.gen` is a step of the runtime per request), then the
 * generation.
 *
 * @since 0.2.0
 */
export const answer = <R extends ChatFields>(
  handler: Handler,
  request: R,
  shape: Shape<R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError, Scope.Scope> => {
  const { state, text } = handler.shared
  const extensions = VllmParams.read(request, true)
  if (Result.isFailure(extensions)) return Effect.fail(extensions.failure)
  const vllm = extensions.success
  const names = shape.names(request)
  const logprobs = request.logprobs === true ? request.top_logprobs ?? 0 : undefined
  const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? null
  const sampled = Sampling.read(request, logprobs, false)
  if (Result.isFailure(sampled)) return Effect.fail(sampled.failure)
  const sampling = sampled.success
  const tokenizer = text.tokenizer
  if (Result.isFailure(text.chatTemplate)) {
    return Effect.fail(badRequest(names.prompt, `this model has no usable chat template (${text.chatTemplate.failure.message}); use /v1/completions`))
  }
  const media = state.config.media
  const read = shape.read(request, media.imagePlaceholder)
  if (Result.isFailure(read)) return Effect.fail(read.failure)
  const { images, messages, withoutImages } = read.success
  const tooling = ToolRequest.plan(request, state.config)
  if (Result.isFailure(tooling)) return Effect.fail(tooling.failure)
  const { prefill, reading, tools, variables } = tooling.success
  const noDialect = ChatImages.dialectRefusal(images, state.dialect)
  if (noDialect !== undefined) return Effect.fail(noDialect)
  const answer = shape.answer(request, tokenizer, logprobs, reading)
  const template = text.chatTemplate.success
  // Developer messages as system ones when the template has no such role (`DeveloperRole`).
  if (DeveloperRole.hasDeveloper(messages)) {
    return Effect.flatMap(
      DeveloperRole.forTemplate(template, messages, withoutImages),
      (read) => render(read.messages, read.withoutImages)
    )
  }
  return render(messages, withoutImages)

  function render(messages: Array<ChatTemplate.Message>, withoutImages: Array<ChatTemplate.Message> | undefined) {
    const prompt = tools === null && variables === undefined && prefill === undefined
      ? { messages, addGenerationPrompt: true }
      : { messages, addGenerationPrompt: true, tools, variables, prefill }
    const respond = (multiModalData: Media.MultiModalData | undefined) =>
      Effect.matchEffect(text.promptTokens(prompt), {
        onFailure: (error) => Effect.fail(badRequest(names.prompt, `the chat template refused them: ${error.reason.message}`)),
        onSuccess: (ids) => {
          if (ids.length === 0) return Effect.fail(badRequest(names.prompt, "render to an empty prompt"))
          const tokens = ContextLength.tokensToGenerate(state.maxModelLen, [ids.length], maxTokens, () => names)
          if (Result.isFailure(tokens)) return Effect.fail(tokens.failure)
          const prompts = [{ ids, text: "" }]
          return Respond.respond(handler, Plan.make(sampling, vllm, tokens.success, prompts, multiModalData, answer, RoutingKey.of(handler)))
        }
      })
    if (images.length === 0) return respond(undefined)
    // Images: the template must render them, and every one load, before anything is sent.
    const rendered = withoutImages === undefined
      ? Effect.void
      : ChatImages.rendersImages(template, messages, withoutImages, { addGenerationPrompt: true, tools, variables }, images[0]!)
    return Effect.flatMap(
      Effect.andThen(rendered, ChatImages.load(images, media)),
      (bytes) => respond({ image: bytes })
    )
  }
}
