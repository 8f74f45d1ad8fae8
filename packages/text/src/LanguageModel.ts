/**
 * An Effect AI provider: `effect/ai`'s `LanguageModel` backed by a Megatron deployment through
 * {@link TextGeneration} (the inference client, the tokenizer and its chat template), so an
 * Effect application calls `LanguageModel.generateText` / `streamText` against it.
 *
 * The prompt's messages are rendered with the chat template (system, user and assistant text;
 * assistant reasoning as `reasoning_content`; a prompt that ends with an assistant message is
 * continued, not answered). What the engines cannot do is refused with an `AiError` naming the
 * option, never ignored: tools and tool calls, files, and JSON response formats
 * (`generateObject`). Sampling parameters, stop strings and template variables come from
 * {@link Config}, set per program or per call with {@link withConfigOverride}.
 *
 * @since 0.1.0
 */
import type { ClientError } from "@mcore-effect/client"
import type { SamplingParams } from "@mcore-effect/protocol"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as AiError from "effect/ai/AiError"
import { IdGenerator } from "effect/ai/IdGenerator"
import * as AiLanguageModel from "effect/ai/LanguageModel"
import type * as Prompt from "effect/ai/Prompt"
import type * as Response from "effect/ai/Response"
import type * as ChatTemplate from "./ChatTemplate.ts"
import type { TextError } from "./TextError.ts"
import * as TextGeneration from "./TextGeneration.ts"

/**
 * What every request of the provider uses (see {@link TextGeneration.GenerateOptions}).
 *
 * @category models
 * @since 0.1.0
 */
export interface ConfigShape {
  /** The engine's sampling parameters (`num_tokens_to_generate`, `temperature`...; engine extras in `extra`). */
  readonly samplingParams?: SamplingParams.SamplingParamsInput | undefined
  readonly stop?: ReadonlyArray<string> | undefined
  /** Leave special tokens out of the text (default true). */
  readonly skipSpecialTokens?: boolean | undefined
  /** Extra chat template variables (Qwen3's `enable_thinking: false`...). */
  readonly templateVariables?: Readonly<Record<string, unknown>> | undefined
  readonly timeout?: Duration.Input | undefined
}

/**
 * The provider's configuration, a context reference (empty by default).
 *
 * @category configuration
 * @since 0.1.0
 */
export const Config: Context.Reference<ConfigShape> = Context.Reference<ConfigShape>(
  "@mcore-effect/text/LanguageModel/Config",
  { defaultValue: () => ({}) }
)

/**
 * Runs `self` with `overrides` merged over the current {@link Config}.
 *
 * @example
 * ```ts
 * import { LanguageModel as Megatron } from "@mcore-effect/text"
 * import { LanguageModel } from "effect/ai"
 *
 * const answer = LanguageModel.generateText({ prompt: "Say hi" }).pipe(
 *   Megatron.withConfigOverride({ samplingParams: { num_tokens_to_generate: 16, temperature: 0 } })
 * )
 * ```
 *
 * @category configuration
 * @since 0.1.0
 */
export const withConfigOverride: {
  (overrides: ConfigShape): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, overrides: ConfigShape): Effect.Effect<A, E, R>
} = function() {
  if (arguments.length === 1) {
    const overrides = arguments[0] as ConfigShape
    return <A, E, R>(self: Effect.Effect<A, E, R>) => override(self, overrides)
  }
  return override(arguments[0], arguments[1])
} as never

const override = <A, E, R>(self: Effect.Effect<A, E, R>, overrides: ConfigShape): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    const config = yield* Config
    return yield* Effect.provideService(self, Config, { ...config, ...overrides })
  })

const MODULE = "@mcore-effect/text/LanguageModel"

const invalidRequest = (method: string, parameter: string, description: string): AiError.AiError =>
  AiError.make({ module: MODULE, method, reason: new AiError.InvalidRequestError({ parameter, description }) })

/** The text layer's and the client's failures as Effect AI reasons. */
const toAiError = (method: string) => (error: TextError | ClientError.ClientError): AiError.AiError => {
  const description = error.message
  const reason: AiError.AiErrorReason = error._tag === "TextError"
    ? new AiError.InvalidUserInputError({ description })
    : error.reason._tag === "InvalidRequest" || error.reason._tag === "InvalidArgument"
    ? new AiError.InvalidRequestError({ description })
    : error.reason._tag === "ConnectTimeout" || error.reason._tag === "CoordinatorLost" ||
        error.reason._tag === "SendFailed" || error.reason._tag === "InvalidAddress"
    ? new AiError.NetworkError({ reason: "TransportError", method: "ZMQ", url: "coordinator", description })
    : new AiError.InternalProviderError({ description })
  return AiError.make({ module: MODULE, method, reason })
}

/** The chat the template renders, from Effect AI's prompt; what it cannot carry is refused. */
const chatOf = (method: string, prompt: Prompt.Prompt): TextGeneration.ChatPrompt | AiError.AiError => {
  const messages: Array<ChatTemplate.Message> = []
  for (const message of prompt.content) {
    switch (message.role) {
      case "system":
        messages.push({ role: "system", content: message.content })
        break
      case "user": {
        let content = ""
        for (const part of message.content) {
          if (part.type !== "text") return invalidRequest(method, "prompt", `${part.type} parts are not supported (text only)`)
          content += part.text
        }
        messages.push({ role: "user", content })
        break
      }
      case "assistant": {
        let content = ""
        let reasoning: string | undefined
        for (const part of message.content) {
          if (part.type === "text") content += part.text
          else if (part.type === "reasoning") reasoning = (reasoning ?? "") + part.text
          else return invalidRequest(method, "prompt", `assistant ${part.type} parts are not supported (tool calls are not)`)
        }
        messages.push(reasoning === undefined ? { role: "assistant", content } : { role: "assistant", content, reasoning_content: reasoning })
        break
      }
      case "tool":
        return invalidRequest(method, "prompt", "tool messages are not supported (tool calls are not)")
    }
  }
  if (messages.length === 0) return invalidRequest(method, "prompt", "the prompt has no messages")
  return { messages, continueFinalMessage: messages[messages.length - 1]!.role === "assistant" }
}

/** Refuses what the provider does not do, before anything is sent. */
const refuseUnsupported = (method: string, options: AiLanguageModel.ProviderOptions): AiError.AiError | undefined => {
  if (options.tools.length > 0) return invalidRequest(method, "tools", "tool calls are not supported by the Megatron provider")
  if (options.responseFormat.type !== "text") {
    return invalidRequest(method, "responseFormat", "only text responses are supported (no JSON schema output)")
  }
  return undefined
}

const finishReason = (reason: TextGeneration.FinishReason): Response.FinishReason =>
  reason === "aborted" ? "other" : reason

const usageOf = (usage: TextGeneration.Usage): typeof Response.Usage.Encoded => ({
  inputTokens: { total: usage.promptTokens, cacheRead: usage.cachedTokens, uncached: usage.promptTokens - usage.cachedTokens },
  outputTokens: { total: usage.completionTokens, text: usage.completionTokens }
})

const finishPart = (generation: TextGeneration.Generation): Response.FinishPartEncoded => ({
  type: "finish",
  reason: finishReason(generation.finishReason),
  usage: usageOf(generation.usage),
  metadata: {
    mcore: {
      requestId: generation.requestId ?? null,
      coordinatorRequestId: generation.coordinatorRequestId ?? null,
      finishReason: generation.finishReason,
      stopString: generation.stopString ?? null
    }
  }
})

const generateOptions = (config: ConfigShape): TextGeneration.GenerateOptions => ({
  samplingParams: config.samplingParams,
  stop: config.stop,
  skipSpecialTokens: config.skipSpecialTokens,
  timeout: config.timeout
})

const prepare = (method: string, options: AiLanguageModel.ProviderOptions) =>
  Effect.gen(function*() {
    const refused = refuseUnsupported(method, options)
    if (refused !== undefined) return yield* Effect.fail(refused)
    const chat = chatOf(method, options.prompt)
    if (chat instanceof AiError.AiError) return yield* Effect.fail(chat)
    const config = yield* Config
    const prompt: TextGeneration.ChatPrompt = { ...chat, variables: config.templateVariables }
    return { prompt, generate: generateOptions(config) }
  })

/**
 * The `LanguageModel` over a {@link TextGeneration.Service}.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (text: TextGeneration.Service): Effect.Effect<AiLanguageModel.LanguageModel> =>
  AiLanguageModel.make({
    generateText: (options) =>
      Effect.gen(function*() {
        const { generate, prompt } = yield* prepare("generateText", options)
        const generation = yield* text.generate(prompt, generate).pipe(Effect.mapError(toAiError("generateText")))
        const parts: Array<Response.PartEncoded> = [{ type: "text", text: generation.text }, finishPart(generation)]
        return parts
      }),
    streamText: (options) =>
      Stream.unwrap(Effect.gen(function*() {
        const { generate, prompt } = yield* prepare("streamText", options)
        const id = yield* (yield* IdGenerator).generateId()
        let started = false
        const partsOf = (part: TextGeneration.StreamPart): Array<Response.StreamPartEncoded> => {
          if (part._tag === "TextDelta") {
            const delta: Response.StreamPartEncoded = { type: "text-delta", id, delta: part.text }
            if (started) return [delta]
            started = true
            return [{ type: "text-start", id }, delta]
          }
          return started ? [{ type: "text-end", id }, finishPart(part)] : [finishPart(part)]
        }
        return text.stream(prompt, generate).pipe(
          Stream.mapError(toAiError("streamText")),
          Stream.map(partsOf),
          Stream.flattenIterable
        )
      }))
  })

/**
 * `effect/ai`'s `LanguageModel` from the {@link TextGeneration.TextGeneration} service.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { LanguageModel as Megatron, TextGeneration, Tokenizer } from "@mcore-effect/text"
 * import { Effect, Layer } from "effect"
 * import { LanguageModel } from "effect/ai"
 *
 * const Model = Megatron.layer.pipe(
 *   Layer.provide(TextGeneration.layer()),
 *   Layer.provide(Tokenizer.layer("/models/qwen3")),
 *   Layer.provide(InferenceClient.layer({ address: "tcp://127.0.0.1:5555", protocol: "main" }))
 * )
 *
 * const program = LanguageModel.generateText({ prompt: "Name a river." }).pipe(
 *   Effect.map((response) => response.text),
 *   Effect.provide(Model)
 * )
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layer: Layer.Layer<AiLanguageModel.LanguageModel, never, TextGeneration.TextGeneration> = Layer.effect(
  AiLanguageModel.LanguageModel,
  Effect.gen(function*() {
    return yield* make(yield* TextGeneration.TextGeneration)
  })
)
