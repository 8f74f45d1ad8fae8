/**
 * The model's context length (`max_model_len`) and what a request may ask of it: the prompt and
 * the tokens to generate must fit. Without this check `max_tokens: 1e15` was accepted and ran
 * until the client gave up, one request holding an engine indefinitely (measured).
 *
 * The default is derived from a Hugging Face model directory as vLLM derives it: the smallest of
 * `config.json`'s length keys (`max_position_embeddings`, `n_positions`, `max_seq_len`, ...),
 * times the RoPE scaling factor when the config has one, capped by `tokenizer_config.json`'s
 * `model_max_length` (transformers writes 1e30 there for "unset": ignored); 2,048 when the
 * directory says nothing, as vLLM falls back.
 *
 * @since 0.1.0
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as Result from "effect/Result"
import { badRequest, type ServerError } from "../ServerError.ts"

/**
 * What vLLM assumes when a model's config names no length.
 *
 * @since 0.1.0
 */
export const FALLBACK = 2048

/** `config.json`'s keys that bound the positions a model can see, as vLLM reads them. */
const configKeys = [
  "max_position_embeddings",
  "n_positions",
  "max_seq_len",
  "seq_length",
  "model_max_length",
  "max_sequence_length",
  "max_seq_length",
  "seq_len"
] as const

/** transformers' "no limit" (`VERY_LARGE_INTEGER`, 1e30) and anything of that kind. */
const isLength = (value: unknown): value is number =>
  typeof value === "number" && Number.isSafeInteger(value) && value > 0

const readJson = (path: string): Record<string, unknown> | undefined => {
  try {
    const parsed: unknown = JSON.parse(Fs.readFileSync(path, "utf8"))
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed as Record<string, unknown> : undefined
  } catch {
    return undefined
  }
}

/** RoPE scaling stretches the trained positions (vLLM multiplies by `factor`, but not for these). */
const ropeFactor = (config: Record<string, unknown>): number => {
  const scaling = config["rope_scaling"]
  if (typeof scaling !== "object" || scaling === null) return 1
  const { factor, rope_type, type } = scaling as Record<string, unknown>
  const kind = rope_type ?? type
  if (kind === "su" || kind === "longrope" || kind === "llama3" || kind === "mrope" || kind === "default") return 1
  return typeof factor === "number" && factor > 1 ? factor : 1
}

/**
 * The context length a model directory declares, or `undefined` when it declares none (no
 * `config.json` length key and no usable `model_max_length`). Reads local files only.
 *
 * @example
 * ```ts
 * import * as ContextLength from "./ContextLength.ts"
 *
 * const limit = ContextLength.fromDirectory("./Qwen3-8B") ?? ContextLength.FALLBACK
 * ```
 *
 * @since 0.1.0
 */
export const fromDirectory = (directory: string): number | undefined => {
  let derived: number | undefined
  const config = readJson(Path.join(directory, "config.json"))
  if (config !== undefined) {
    for (const key of configKeys) {
      const value = config[key]
      if (isLength(value)) derived = derived === undefined ? value : Math.min(derived, value)
    }
    if (derived !== undefined) derived = Math.floor(derived * ropeFactor(config))
  }
  const tokenizerConfig = readJson(Path.join(directory, "tokenizer_config.json"))
  const tokenizerMax = tokenizerConfig?.["model_max_length"]
  if (isLength(tokenizerMax)) derived = derived === undefined ? tokenizerMax : Math.min(derived, tokenizerMax)
  return derived
}

/**
 * The request's fields named in refusals: where the prompt came from (`messages`, `prompt[2]`)
 * and which field asked for the tokens (`max_tokens`, `max_completion_tokens`).
 *
 * @since 0.1.0
 */
export interface Params {
  readonly prompt: string
  readonly maxTokens: string
}

/**
 * The tokens a prompt of `promptTokens` may generate under `limit`: `maxTokens` when it fits,
 * the rest of the context when it is `null` (omitted); otherwise a 400 with vLLM's wording,
 * naming the prompt (when the prompt alone leaves no room) or the field that asked for too much.
 *
 * @example
 * ```ts
 * import * as ContextLength from "./ContextLength.ts"
 *
 * ContextLength.budget(4096, 100, null, { prompt: "messages", maxTokens: "max_tokens" }) // Success: 3996
 * ContextLength.budget(4096, 100, 1e15, { prompt: "messages", maxTokens: "max_tokens" }) // Failure: 400, param max_tokens
 * ```
 *
 * @since 0.1.0
 */
export const budget = (
  limit: number,
  promptTokens: number,
  maxTokens: number | null,
  params: Params
): Result.Result<number, ServerError> => {
  if (promptTokens >= limit) {
    return Result.fail(badRequest(
      params.prompt,
      `This model's maximum context length is ${limit} tokens. However, your request has ${promptTokens} input tokens. ` +
        `Please reduce the length of the input.`
    ))
  }
  const room = limit - promptTokens
  if (maxTokens === null) return Result.succeed(room)
  if (maxTokens > room) {
    return Result.fail(badRequest(
      params.maxTokens,
      `'${params.maxTokens}' is too large: ${maxTokens}. This model's maximum context length is ${limit} tokens and ` +
        `your request has ${promptTokens} input tokens (${maxTokens} > ${limit} - ${promptTokens}).`
    ))
  }
  return Result.succeed(maxTokens)
}

/**
 * The tokens each choice may generate under `limit`, for prompts of `promptLengths` tokens (every
 * prompt of a list; each of its choices asks the same): `maxTokens` as asked, or when it is `null`
 * (omitted) the shortest room any prompt leaves, so that one plan serves every prompt. `params`
 * names the fields of prompt `i` in a refusal.
 *
 * @since 0.2.0
 */
export const tokensToGenerate = (
  limit: number,
  promptLengths: ReadonlyArray<number>,
  maxTokens: number | null,
  params: (index: number) => Params
): Result.Result<number | null, ServerError> => {
  let tokens = maxTokens
  for (let i = 0; i < promptLengths.length; i++) {
    const fits = budget(limit, promptLengths[i]!, maxTokens, params(i))
    if (Result.isFailure(fits)) return Result.fail(fits.failure)
    if (maxTokens === null) tokens = tokens === null ? fits.success : Math.min(tokens, fits.success)
  }
  return Result.succeed(tokens)
}
