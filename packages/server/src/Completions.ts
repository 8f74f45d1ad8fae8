/**
 * `POST /v1/completions`: a prompt as text, a list of texts, token ids or a list of token-id
 * lists; `n` choices per prompt (choice `p * n + j` is the `j`th of prompt `p`); `echo` repeats
 * the prompt before the completion; `logprobs: k` gives each token's log prob and, per token,
 * the token and its top `k` (with `echo`, the prompt's too, the first token's being `null` as
 * OpenAI and vLLM write it).
 *
 * @since 0.1.0
 */
import type { Tokenizer } from "@mcore-effect/text"
import * as Effect from "effect/Effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as Choice from "./Choice.ts"
import * as CommonShape from "./CommonShape.ts"
import * as ContextLength from "./ContextLength.ts"
import * as Generation from "./Generation.ts"
import * as IgnoredFields from "./IgnoredFields.ts"
import * as OpenAiSchema from "./OpenAiSchema.ts"
import { readRequest, tokenizePrompt, tokenPrompt } from "./Prompts.ts"
import type * as Routes from "./Routes.ts"
import * as Sampling from "./Sampling.ts"
import * as TopLogprobs from "./TopLogprobs.ts"
import * as VllmParams from "./VllmParams.ts"
import { badRequest, type ServerError } from "./ServerError.ts"

const decode = OpenAiSchema.decode(OpenAiSchema.CompletionRequest, CommonShape.isCompletionRequest)

/** vLLM's other fields: ignored when they change nothing, else refused (`IgnoredFields`). */
const fieldPolicy = IgnoredFields.policy(Object.keys(OpenAiSchema.CompletionRequest.fields), IgnoredFields.completionFields)

/** OpenAI's default `max_tokens` for completions. */
const DEFAULT_MAX_TOKENS = 16

const prompts = (
  tokenizer: Tokenizer.Service,
  input: OpenAiSchema.CompletionRequest["prompt"],
  addSpecialTokens: boolean
): Result.Result<Array<Choice.Prompt>, ServerError> => {
  if (typeof input === "string") return Result.map(tokenizePrompt(tokenizer, input, "prompt", addSpecialTokens), (p) => [p])
  const first = input[0]
  if (typeof first === "number") {
    return Result.map(tokenPrompt(tokenizer, input as ReadonlyArray<number>, "prompt"), (p) => [p])
  }
  const out: Array<Choice.Prompt> = []
  for (let i = 0; i < input.length; i++) {
    const item = input[i]!
    const prompt = typeof item === "string"
      ? tokenizePrompt(tokenizer, item, `prompt[${i}]`, addSpecialTokens)
      : tokenPrompt(tokenizer, item as ReadonlyArray<number>, `prompt[${i}]`)
    if (Result.isFailure(prompt)) return Result.fail(prompt.failure)
    out.push(prompt.success)
  }
  return Result.succeed(out)
}

/**
 * OpenAI's completions log probs for `ids`, whose texts start at `offset`: one entry per token in
 * each list; a token without a log prob (the prompt's first, with `echo`) has `null` in both
 * `token_logprobs` and `top_logprobs`, as vLLM writes it. `top` is the engine's alternatives per
 * token, `k` the request's `logprobs`.
 */
const logprobsOf = (
  tokenizer: Tokenizer.Service,
  ids: ReadonlyArray<number>,
  logprobs: ReadonlyArray<number | null | undefined>,
  top: ReadonlyArray<Readonly<Record<string, number>> | null | undefined>,
  k: number,
  offset: number
): OpenAiSchema.CompletionLogprobs => {
  const tokens: Array<string> = []
  const values: Array<number | null> = []
  const tops: Array<Record<string, number> | null> = []
  const offsets: Array<number> = []
  let at = offset
  for (let i = 0; i < ids.length; i++) {
    const token = tokenizer.decode([ids[i]!])
    const value = logprobs[i]
    tokens.push(token)
    values.push(value ?? null)
    // The token and its top `k` (vLLM's `logprobs + 1`).
    tops.push(value == null ? null : TopLogprobs.record(token, value, top[i], k + 1))
    offsets.push(at)
    at += token.length
  }
  return { tokens, token_logprobs: values, top_logprobs: tops, text_offset: offsets }
}

/** Where the text after `lp`'s tokens starts. */
const endOf = (lp: OpenAiSchema.CompletionLogprobs, start: number): number => {
  const last = lp.tokens.length - 1
  return last < 0 ? start : lp.text_offset[last]! + lp.tokens[last]!.length
}

/** `list`'s first `length` items, `undefined` past its end: positions stay aligned. */
const padded = <A>(list: ReadonlyArray<A> | undefined, length: number): Array<A | undefined> =>
  Array.from({ length }, (_, i) => list?.[i])

/**
 * A choice's log probs, `k` the request's `logprobs`; without echo, its tokens' texts start at
 * `offset` (what went out before).
 */
const choiceLogprobs = (
  tokenizer: Tokenizer.Service,
  finished: Choice.Finished,
  prompt: Choice.Prompt,
  echo: boolean,
  k: number,
  offset = 0
): OpenAiSchema.CompletionLogprobs => {
  const generated = finished.logprobs ?? []
  const top = finished.topLogprobs ?? []
  if (!echo) return logprobsOf(tokenizer, finished.tokens, generated, top, k, offset)
  // The prompt's first token has no log prob (nothing precedes it); the others' are aligned to
  // their tokens even when the engine sent fewer.
  const rest = prompt.ids.length - 1
  const ids = [...prompt.ids, ...finished.tokens]
  const values = [null, ...padded(finished.promptLogprobs, rest), ...generated]
  const tops = [null, ...padded(finished.promptTopLogprobs, rest), ...top]
  return logprobsOf(tokenizer, ids, values, tops, k, 0)
}

/**
 * The route's handler: plain code up to the generation (see `ChatCompletions.handle`).
 *
 * @since 0.1.0
 */
export const handle = (
  generation: Routes.Generation
): Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError, Scope.Scope> => {
  const { state, text } = generation
  const decoded = readRequest(generation, fieldPolicy, decode)
  if (Result.isFailure(decoded)) return Effect.fail(decoded.failure)
  const request = decoded.success
  if (request.suffix != null && request.suffix !== "") return Effect.fail(badRequest("suffix", "not supported"))
  const refused = VllmParams.refusal(request, false)
  if (refused !== undefined) return Effect.fail(refused)
  const n = request.n ?? 1
  if (request.best_of != null && request.best_of > n) {
    return Effect.fail(badRequest("best_of", "only best_of <= n is supported (the engines do not rank choices)"))
  }
  const echo = request.echo === true
  const logprobs = request.logprobs ?? undefined
  const maxTokens = request.max_tokens ?? DEFAULT_MAX_TOKENS
  const planned = Sampling.plan(request, {
    maxTokens,
    logprobs,
    promptLogprobs: echo && logprobs !== undefined
  })
  if (Result.isFailure(planned)) return Effect.fail(planned.failure)
  const plan = VllmParams.applyTo(planned.success, request)
  const tokenizer = text.tokenizer
  const tokenized = prompts(tokenizer, request.prompt, VllmParams.addSpecialTokens(request))
  if (Result.isFailure(tokenized)) return Effect.fail(tokenized.failure)
  const all = tokenized.success
  if (all.length * n > OpenAiSchema.MAX_CHOICES) {
    return Effect.fail(badRequest("n", `n times the prompts must be at most ${OpenAiSchema.MAX_CHOICES}`))
  }
  const single = typeof request.prompt === "string" || typeof request.prompt[0] === "number"
  const fitted = ContextLength.fit(plan, state.maxModelLen, all.map((p) => p.ids.length), maxTokens, (i) => ({
    prompt: single ? "prompt" : `prompt[${i}]`,
    maxTokens: "max_tokens"
  }))
  if (Result.isFailure(fitted)) return Effect.fail(fitted.failure)
  const endpoint = VllmParams.endpointFor(endpointOf(tokenizer, logprobs, echo), request)
  return Generation.respond(generation, Choice.context(text, state, fitted.success), all, fitted.success, endpoint)
}

/**
 * The endpoint's shapes, made outside `handle`, as `ChatCompletions` makes its own: a streamed
 * response holds its format until the last chunk, and closures made in `handle` would hold
 * everything of `handle` they share a context with (the request, its body and plan).
 */
const endpointOf = (tokenizer: Tokenizer.Service, logprobs: number | undefined, echo: boolean): Generation.Endpoint => {
  // Streamed per chunk where the engines' partials carry them: not with top log probs (partials
  // carry no top tokens) nor with echo (the prompt's come with the final reply); then all of
  // them come with the closing chunk, as before.
  const perChunk = logprobs === 0 && !echo
  // Per choice, where the next streamed token's text starts in the completion (`text_offset`).
  const offsets: Array<number> = []
  const logprobsFor = (finished: Choice.Finished, prompt: Choice.Prompt, index?: number) =>
    logprobs === undefined
      ? null
      : choiceLogprobs(tokenizer, finished, prompt, echo, logprobs, index === undefined ? 0 : offsets[index] ?? 0)
  return {
    idPrefix: "cmpl-",
    object: "text_completion",
    format: {
      chunkObject: "text_completion",
      opening: echo ? (index, prompt) => ({ index, text: prompt.text, logprobs: null, finish_reason: null }) : undefined,
      delta: (index, text) => ({ index, text, logprobs: null, finish_reason: null }),
      closing: (index, finished, prompt) => ({
        index,
        text: "",
        logprobs: logprobsFor(finished, prompt, index),
        finish_reason: finished.finishReason
      }),
      deltaLogprobs: perChunk
        ? (index, text, tokens, values) => {
          const start = offsets[index] ?? 0
          // `logprobs: 0` (`perChunk` is only then): each token's entry is the token alone.
          const lp = logprobsOf(tokenizer, tokens, values, [], 0, start)
          offsets[index] = endOf(lp, start)
          return { index, text, logprobs: lp, finish_reason: null }
        }
        : undefined
    },
    choice: (index, finished, prompt) => ({
      index,
      text: echo ? prompt.text + finished.text : finished.text,
      logprobs: logprobsFor(finished, prompt),
      finish_reason: finished.finishReason
    })
  }
}
