/**
 * Text generation over the inference client: a prompt (text, token ids, or a chat rendered with
 * the chat template) in; text, token ids, a finish reason and usage out, at once (`generate`) or
 * as a stream of text deltas and one closing summary (`stream`).
 *
 * What Megatron-LM's own text server does, done here:
 *
 * - the prompt is tokenized (or the chat rendered then tokenized, without adding special tokens
 *   again, as `apply_chat_template` does) and token ids are submitted;
 * - streamed ids go through an incremental detokenizer, and on the final reply its tail,
 *   `generated_tokens[alreadyStreamed:]`, because the engines deliver the last step's tokens only
 *   there;
 * - the text ends at the first eos id (any of the tokenizer's) or stop string; a stream ended that
 *   way, or interrupted, aborts its request on the coordinator (one ABORT);
 * - usage counts prompt, completion and cached tokens (`num_cached_tokens`).
 *
 * @since 0.1.0
 */
import { ClientError, InferenceClient } from "@mcore-effect/client"
import type { SamplingParams } from "@mcore-effect/protocol"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as References from "effect/References"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import type * as Types from "effect/Types"
import * as ChatTemplate from "./ChatTemplate.ts"
import { InvalidArgument, type TextError, textError } from "./TextError.ts"
import * as Tokenizer from "./Tokenizer.ts"
import { intern } from "./internal/internParams.ts"
import { type Plan, Progress, viewOf } from "./internal/progress.ts"
import * as RenderedIds from "./internal/renderedIds.ts"
import { StreamParts } from "./internal/streamParts.ts"

import type {
  ChatPrompt,
  GenerateOptions,
  Generation,
  Prompt,
  StreamPart
} from "./internal/generationTypes.ts"

export type {
  ChatPrompt,
  Finish,
  FinishReason,
  GenerateOptions,
  Generation,
  Prompt,
  StreamPart,
  TextDelta,
  Usage
} from "./internal/generationTypes.ts"

/**
 * The service.
 *
 * @category models
 * @since 0.1.0
 */
export interface Service {
  readonly tokenizer: Tokenizer.Service
  /** The chat template chats are rendered with (a `NoChatTemplate` error when there is none). */
  readonly chatTemplate: Result.Result<ChatTemplate.ChatTemplate, TextError>
  /** The prompt's token ids, as `generate` would submit them. */
  readonly promptTokens: (
    prompt: Prompt,
    options?: Pick<GenerateOptions, "addSpecialTokens"> | undefined
  ) => Effect.Effect<Array<number>, TextError>
  /** Generates and waits for the whole text. Interrupting the wait aborts the request. */
  readonly generate: (
    prompt: Prompt,
    options?: GenerateOptions | undefined
  ) => Effect.Effect<Generation, TextError | ClientError.ClientError>
  /**
   * Generates as a stream: text deltas as tokens arrive (the final reply's tail included), then
   * one `Finish`. Nothing is sent until the stream runs, and nothing at all when the prompt or
   * options are refused. Ending it early (or interrupting it) aborts the request.
   */
  readonly stream: (
    prompt: Prompt,
    options?: GenerateOptions | undefined
  ) => Stream.Stream<StreamPart, TextError | ClientError.ClientError>
}

/**
 * The `TextGeneration` service.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { TextGeneration, Tokenizer } from "@mcore-effect/text"
 * import { Effect, Layer } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const text = yield* TextGeneration.TextGeneration
 *   const result = yield* text.generate(
 *     { messages: [{ role: "user", content: "Name three rivers." }] },
 *     { samplingParams: { num_tokens_to_generate: 64 } }
 *   )
 *   return result.text
 * }).pipe(
 *   Effect.provide(TextGeneration.layer().pipe(
 *     Layer.provide(Tokenizer.layer("/models/qwen3")),
 *     Layer.provide(InferenceClient.layer({ address: "tcp://127.0.0.1:5555", protocol: "main" }))
 *   ))
 * )
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class TextGeneration extends Context.Service<TextGeneration, Service>()("@mcore-effect/text/TextGeneration") {}

const invalid = (name: string, why: string): TextError => textError(new InvalidArgument({ name, why }))

const isTokens = (prompt: Prompt): prompt is { readonly tokens: ReadonlyArray<number> } =>
  typeof prompt === "object" && prompt !== null && Array.isArray((prompt as { readonly tokens?: unknown }).tokens)

const isChat = (prompt: Prompt): prompt is ChatPrompt =>
  typeof prompt === "object" && prompt !== null && "messages" in prompt

const isRequestAborted = (error: ClientError.ClientError | TextError): boolean =>
  error._tag === "ClientError" && error.reason._tag === "RequestAborted"

/**
 * The effect `make` gives (made when run), in a span named `name` when a tracing backend is installed, else as it is: with the
 * built-in native tracer nobody can see the span, and making it costs CPU per request
 * (PERFORMANCE.md#no-span-without-a-tracing-backend).
 */
const traced = <A, E, R>(name: string, make: () => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiber((fiber) =>
    fiber.getRef(References.TracerEnabled) && fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer
      ? Effect.withSpan(make(), name)
      : make()
  )

/**
 * A chat's render options: its own fields but `messages` (given to `render` on their own; in the
 * options too, the render cache's key wrote every message twice:
 * PERFORMANCE.md#messages-kept-out-of-the-render-options), with the generation prompt on by default.
 */
const renderOptions = (chat: ChatPrompt): ChatTemplate.RenderOptions => {
  const options: Record<string, unknown> = {}
  for (const key in chat) {
    if (key !== "messages" && key !== "prefill" && Object.hasOwn(chat, key)) {
      options[key] = (chat as unknown as Record<string, unknown>)[key]
    }
  }
  options["addGenerationPrompt"] = chat.continueFinalMessage === true ? false : chat.addGenerationPrompt ?? true
  return options as ChatTemplate.RenderOptions
}

/**
 * The service over a client and a tokenizer; chats are rendered with `chatTemplate` when given,
 * else with the tokenizer's own.
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  client: InferenceClient.Service,
  tokenizer: Tokenizer.Service,
  options?: { readonly chatTemplate?: ChatTemplate.ChatTemplate | undefined } | undefined
): Effect.Effect<Service> =>
  Effect.gen(function*() {
    const chatTemplate: Result.Result<ChatTemplate.ChatTemplate, TextError> = options?.chatTemplate !== undefined
      ? Result.succeed(options.chatTemplate)
      : yield* Effect.result(ChatTemplate.fromTokenizer(tokenizer))

    const encodeRendered = RenderedIds.make(tokenizer)

    /**
     * The ids of a prompt that is not a chat, at once; `undefined` for a chat (rendered by an
     * effect). A fresh array, but with `keepFrozen`, frozen token ids as they are: they cannot
     * change while a request runs, so a plan holds them without a copy (the server's prompts are
     * frozen; a copy was ~0.27 KB of an open stream's heap for a short chat).
     */
    const idsNow = (
      prompt: Prompt,
      opts: Pick<GenerateOptions, "addSpecialTokens"> | undefined,
      keepFrozen: boolean
    ): Result.Result<ReadonlyArray<number>, TextError> | undefined => {
      if (typeof prompt === "string") {
        return Result.succeed(tokenizer.encode(prompt, { addSpecialTokens: opts?.addSpecialTokens ?? true }))
      }
      if (isChat(prompt)) return undefined
      if (isTokens(prompt)) {
        const refused = refusedIds(prompt.tokens)
        if (refused !== undefined) return Result.fail(refused)
        return Result.succeed(keepFrozen && Object.isFrozen(prompt.tokens) ? prompt.tokens : Array.from(prompt.tokens))
      }
      return Result.fail(invalid("prompt", "expected text, { tokens } or { messages }"))
    }

    /** Why token ids cannot be a prompt of this tokenizer, if they cannot. */
    const refusedIds = (ids: ReadonlyArray<number>): TextError | undefined => {
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i]!
        if (!Number.isSafeInteger(id) || id < 0 || id >= tokenizer.vocabSize) {
          return invalid(`prompt.tokens[${i}]`, `${String(id)} is not an id of the tokenizer (0..${tokenizer.vocabSize - 1})`)
        }
      }
      return undefined
    }

    const promptTokens = (
      prompt: Prompt,
      opts?: Pick<GenerateOptions, "addSpecialTokens"> | undefined
    ): Effect.Effect<Array<number>, TextError> =>
      Effect.suspend(() => {
        const now = idsNow(prompt, opts, false)
        // A fresh array (not `keepFrozen`): the caller's to change.
        if (now !== undefined) return Result.isSuccess(now) ? Effect.succeed(now.success as Array<number>) : Effect.fail(now.failure)
        const chat = prompt as ChatPrompt
        if (Result.isFailure(chatTemplate)) return Effect.fail(chatTemplate.failure)
        const prefill = chat.prefill
        return chatTemplate.success.render(chat.messages, renderOptions(chat)).pipe(
          Effect.map(prefill === undefined || prefill === "" ? encodeRendered : (text) => encodeRendered(text + prefill))
        )
      })

    /** The options' own errors, before anything is tokenized. */
    const refusedOptions = (opts: GenerateOptions | undefined): TextError | undefined => {
      const stop = opts?.stop ?? []
      for (let i = 0; i < stop.length; i++) {
        if (typeof stop[i] !== "string" || stop[i] === "") return invalid(`stop[${i}]`, "must be a non-empty string")
      }
      const top = opts?.topLogProbs
      if (top !== undefined && !(Number.isSafeInteger(top) && top >= 0)) {
        return invalid("topLogProbs", "must be a non-negative integer")
      }
      return undefined
    }

    // Shared by every request whose termination id is one of the tokenizer's eos ids (the default).
    const tokenizerEos: ReadonlySet<number> = new Set(tokenizer.eosTokenIds)
    const noEos: ReadonlySet<number> = new Set()

    const derivedParams = (opts: GenerateOptions | undefined): Types.Mutable<SamplingParams.SamplingParamsInput> => {
      const stop = opts?.stop ?? []
      const top = opts?.topLogProbs
      // Typed as the input, so a field set here is checked too; `extra` passes through as given.
      const params: Types.Mutable<SamplingParams.SamplingParamsInput> = { ...opts?.samplingParams }
      if (params.termination_id === undefined && tokenizer.eosTokenIds.length > 0) {
        params.termination_id = tokenizer.eosTokenIds[0]
      }
      if (stop.length > 0 && params.stop_words === undefined) params.stop_words = [...stop]
      if (opts?.logProbs === true || opts?.promptLogProbs === true || (top !== undefined && top > 0)) {
        params.return_log_probs = true
        if (params.skip_prompt_log_probs === undefined) params.skip_prompt_log_probs = opts?.promptLogProbs !== true
      }
      if (top !== undefined && top > 0) params.top_n_logprobs = top
      return params
    }

    const planOf = (promptIds: ReadonlyArray<number>, opts: GenerateOptions | undefined): Plan => {
      // The same object for the same parameters: the client's cache of validated, encoded
      // parameters is keyed by it (internParams.ts).
      const params = intern(derivedParams(opts))
      const termination = params.termination_id
      // -1: no termination id (vLLM's `ignore_eos`); then no eos ends the text here either.
      const eos = termination === -1
        ? noEos
        : typeof termination === "number" && !tokenizerEos.has(termination)
        ? new Set([...tokenizerEos, termination])
        : tokenizerEos
      const budget = typeof params.num_tokens_to_generate === "number" ? params.num_tokens_to_generate : undefined
      return {
        promptIds,
        params,
        stop: opts?.stop ?? [],
        eos,
        skipSpecialTokens: opts?.skipSpecialTokens ?? true,
        budget,
        submit: opts?.multiModalData == null
          ? { timeout: opts?.timeout, routingKey: opts?.routingKey }
          : { timeout: opts.timeout, multiModalData: opts.multiModalData, routingKey: opts.routingKey }
      }
    }

    // No `Effect.gen`: a stream holds the effect it was made from while it is open, and a
    // generator function made per request brings its own prototype and hidden classes
    // (PERFORMANCE.md#no-effectgen-in-the-streams-plan). The default eos set is shared for the same reason.
    const plan = (prompt: Prompt, opts: GenerateOptions | undefined): Effect.Effect<Plan, TextError> =>
      Effect.suspend(() => withPlan(prompt, opts, Effect.succeed))

    /**
     * `then` with the plan, or the refusal: at once for text and token prompts (no step of the
     * runtime), after the render for a chat. Call it when the effect runs (it tokenizes).
     */
    const withPlan = <A, E, R>(
      prompt: Prompt,
      opts: GenerateOptions | undefined,
      then: (plan: Plan) => Effect.Effect<A, E, R>
    ): Effect.Effect<A, E | TextError, R> => {
      const refused = refusedOptions(opts)
      if (refused !== undefined) return Effect.fail(refused)
      const planned = (promptIds: ReadonlyArray<number>): Effect.Effect<A, E | TextError, R> =>
        promptIds.length === 0 ? Effect.fail(invalid("prompt", "encodes to no tokens")) : then(planOf(promptIds, opts))
      const now = idsNow(prompt, opts, true)
      if (now === undefined) return Effect.flatMap(promptTokens(prompt, opts), planned)
      return Result.isSuccess(now) ? planned(now.success) : Effect.fail(now.failure)
    }

    // Combinators, not `Effect.gen`: each `yield*` is steps of the runtime, and the generator
    // an object, per request (generate is the whole of a non-streaming request's text layer).
    const generate = (prompt: Prompt, opts?: GenerateOptions | undefined) =>
      traced("TextGeneration.generate", () => withPlan(prompt, opts, (p) => {
        const progress = new Progress(tokenizer, p)
        // submitWithId for this client's id; uninterruptible until the wait for the reply starts,
        // so an interruption always lands on that wait, which aborts the request.
        const waited = Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(client.submitWithId(p.promptIds, p.params, p.submit), (submitted) => {
            progress.requestId = submitted.requestId
            return restore(submitted.reply)
          })
        )
        return Effect.matchEffect(waited, {
          onFailure: (error): Effect.Effect<Generation, ClientError.ClientError> =>
            isRequestAborted(error) ? Effect.succeed(progress.result(undefined, true)) : Effect.fail(error),
          onSuccess: (reply) => {
            const view = viewOf(reply, progress.requestId)
            if (view instanceof ClientError.ClientError) return Effect.fail(view)
            progress.feed(view.generatedTokens)
            progress.close()
            return Effect.succeed(progress.result(view, false))
          }
        })
      }))

    // A dialect without partial replies (Megatron-LM's releases): the request is submitted
    // unstreamed and its text arrives as one delta with the final reply, which is a stream a
    // streaming caller reads unchanged; interrupting it still ends the wait for the reply.
    const streams = client.dialect.features.has("streaming")
    const finalOnly = (p: Plan, progress: Progress): Stream.Stream<InferenceClient.StreamEvent, ClientError.ClientError> =>
      Stream.fromEffect(Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(client.submitWithId(p.promptIds, p.params, p.submit), (submitted) => {
          progress.requestId = submitted.requestId
          return Effect.map(restore(submitted.reply), (reply): InferenceClient.StreamEvent => ({ _tag: "Final", reply }))
        })
      ))

    const stream = (prompt: Prompt, opts?: GenerateOptions | undefined): Stream.Stream<StreamPart, TextError | ClientError.ClientError> =>
      Stream.unwrap(Effect.map(plan(prompt, opts), (p) => {
        const progress = new Progress(tokenizer, p)
        return Stream.transformPull(
          streams ? client.stream(p.promptIds, p.params, p.submit) : finalOnly(p, progress),
          (events) => Effect.succeed(new StreamParts(progress, events).next)
        )
      }))

    return { tokenizer, chatTemplate, promptTokens, generate, stream } satisfies Service
  })

/**
 * The service from the `InferenceClient` and `Tokenizer` services; chats are rendered with
 * `chatTemplate` when given, else with the tokenizer's own.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (
  options?: { readonly chatTemplate?: ChatTemplate.ChatTemplate | undefined } | undefined
): Layer.Layer<TextGeneration, never, InferenceClient.InferenceClient | Tokenizer.Tokenizer> =>
  Layer.effect(
    TextGeneration,
    Effect.gen(function*() {
      const client = yield* InferenceClient.InferenceClient
      const tokenizer = yield* Tokenizer.Tokenizer
      return yield* make(client, tokenizer, options)
    })
  )
