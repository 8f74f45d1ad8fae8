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
import * as CommonShape from "./CommonShape.ts"
import * as ContextLength from "./ContextLength.ts"
import type { Handler } from "./Handler.ts"
import * as IgnoredFields from "./IgnoredFields.ts"
import * as Plan from "./Plan.ts"
import * as OpenAiSchema from "../OpenAiSchema.ts"
import { readRequest, tokenizePrompt, tokenPrompt } from "./Prompts.ts"
import { respond } from "./Respond.ts"
import * as RoutingKey from "./RoutingKey.ts"
import * as Sampling from "./Sampling.ts"
import * as VllmParams from "./VllmParams.ts"
import { badRequest, type ServerError } from "../ServerError.ts"

const decode = OpenAiSchema.decode(OpenAiSchema.CompletionRequest, CommonShape.isCompletionRequest)

/** vLLM's other fields: ignored when they change nothing, else refused (`IgnoredFields`). */
const fieldPolicy = IgnoredFields.policy(Object.keys(OpenAiSchema.CompletionRequest.fields), IgnoredFields.completionFields)

/** OpenAI's default `max_tokens` for completions. */
const DEFAULT_MAX_TOKENS = 16

const prompts = (
  tokenizer: Tokenizer.Service,
  input: OpenAiSchema.CompletionRequest["prompt"],
  addSpecialTokens: boolean
): Result.Result<Array<Plan.Prompt>, ServerError> => {
  if (typeof input === "string") return Result.map(tokenizePrompt(tokenizer, input, "prompt", addSpecialTokens), (p) => [p])
  const first = input[0]
  if (typeof first === "number") {
    return Result.map(tokenPrompt(tokenizer, input as ReadonlyArray<number>, "prompt"), (p) => [p])
  }
  const out: Array<Plan.Prompt> = []
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
 * The route's handler: plain code up to the generation (see `ChatCompletions.handle`): the
 * request's plan made, then answered (`Respond`).
 *
 * @since 0.1.0
 */
export const handle = (
  handler: Handler
): Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError, Scope.Scope> => {
  const { state, text } = handler.shared
  const decoded = readRequest(handler, fieldPolicy, decode)
  if (Result.isFailure(decoded)) return Effect.fail(decoded.failure)
  const request = decoded.success
  if (request.suffix != null && request.suffix !== "") return Effect.fail(badRequest("suffix", "not supported"))
  const vllm = VllmParams.read(request, false)
  if (Result.isFailure(vllm)) return Effect.fail(vllm.failure)
  const n = request.n ?? 1
  if (request.best_of != null && request.best_of > n) {
    return Effect.fail(badRequest("best_of", "only best_of <= n is supported (the engines do not rank choices)"))
  }
  const echo = request.echo === true
  const logprobs = request.logprobs ?? undefined
  const maxTokens = request.max_tokens ?? DEFAULT_MAX_TOKENS
  const sampling = Sampling.read(request, logprobs, echo && logprobs !== undefined)
  if (Result.isFailure(sampling)) return Effect.fail(sampling.failure)
  const tokenizer = text.tokenizer
  const tokenized = prompts(tokenizer, request.prompt, vllm.success.addSpecialTokens)
  if (Result.isFailure(tokenized)) return Effect.fail(tokenized.failure)
  const all = tokenized.success
  if (all.length * n > OpenAiSchema.MAX_CHOICES) {
    return Effect.fail(badRequest("n", `n times the prompts must be at most ${OpenAiSchema.MAX_CHOICES}`))
  }
  const single = typeof request.prompt === "string" || typeof request.prompt[0] === "number"
  const tokens = ContextLength.tokensToGenerate(state.maxModelLen, all.map((p) => p.ids.length), maxTokens, (i) => ({
    prompt: single ? "prompt" : `prompt[${i}]`,
    maxTokens: "max_tokens"
  }))
  if (Result.isFailure(tokens)) return Effect.fail(tokens.failure)
  const answer: Plan.CompletionAnswer = { _tag: "Completion", tokenizer, logprobs, echo }
  return respond(handler, Plan.make(sampling.success, vllm.success, tokens.success, all, undefined, answer, RoutingKey.of(handler)))
}
