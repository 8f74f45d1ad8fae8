/**
 * The common shape of the two request bodies, recognised in plain code: a body that has it is
 * one the Schema decode ({@link OpenAiSchema.decode}) accepts, unchanged, so it is taken as it
 * is; any other body, valid or not, goes to the Schema decode, which stays the authority for every
 * verdict it gives and for every error (a 400 naming the field). The check accepts only what it
 * knows the schemas accept: the fields real clients send (the sampling fields, `messages` with
 * text or text parts, `prompt` as text, texts or token ids, `logprobs`, `echo`...); a rarer field
 * (`tools`, `logit_bias`, `metadata`...), a value of an unexpected type, or an object that is not
 * plain sends the body to Schema.
 *
 * Why: the Schema decode of the benchmark's chat body is a visible share of the server's CPU per
 * request under load, this check a small part of it (PERFORMANCE.md#common-shape). A fast-check property
 * (`test/CommonShape.test.ts`) holds its verdicts and results to the Schema decode's.
 *
 * @since 0.1.0
 */
import { MAX_CHOICES, MAX_STOP, MAX_TOP_K } from "../OpenAiSchema.ts"

type Check = (value: unknown) => boolean

const isString: Check = (v) => typeof v === "string"
const isBoolean: Check = (v) => typeof v === "boolean"
const isInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v)
const intAtLeast = (min: number): Check => (v) => isInt(v) && v >= min
const intBetween = (min: number, max: number): Check => (v) => isInt(v) && v >= min && v <= max
const finiteBetween = (min: number, max: number): Check => (v) =>
  typeof v === "number" && Number.isFinite(v) && v >= min && v <= max
const nullOr = (check: Check): Check => (v) => v === null || check(v)

/**
 * An object as `JSON.parse` makes one (its prototype `Object.prototype`). Stricter than the
 * protocol's `Values.isPlainObject`, which takes `Object.create(null)` too: such a body is left
 * to the Schema decode, whose verdict on it this check does not claim to know.
 */
const isJsonObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && Object.getPrototypeOf(v) === Object.prototype

const isArray = (v: unknown): v is ReadonlyArray<unknown> => Array.isArray(v)

/** Every element passes `check` (a hole does not: it reads as `undefined`). */
const arrayOf = (check: Check, minLength: number, maxLength = Infinity): Check => (v) => {
  if (!isArray(v) || v.length < minLength || v.length > maxLength) return false
  for (let i = 0; i < v.length; i++) if (!check(v[i])) return false
  return true
}

/**
 * A plain object whose every key is one of `fields` and passes its check, with the `required`
 * keys present.
 */
const struct = (fields: Record<string, Check>, required: ReadonlyArray<string> = []): Check => {
  const checks = new Map(Object.entries(fields))
  return (v) => {
    if (!isJsonObject(v)) return false
    for (let i = 0; i < required.length; i++) if (!Object.hasOwn(v, required[i]!)) return false
    for (const key in v) {
      if (!Object.hasOwn(v, key)) return false
      const check = checks.get(key)
      if (check === undefined || !check(v[key])) return false
    }
    return true
  }
}

/** The fields both endpoints take, those clients send (the schemas' `sampling`, in part). */
const sampling: Record<string, Check> = {
  model: isString,
  max_tokens: nullOr(intAtLeast(0)),
  temperature: nullOr(finiteBetween(0, 2)),
  top_p: nullOr(finiteBetween(0, 1)),
  top_k: nullOr(intBetween(-1, MAX_TOP_K)),
  n: nullOr(intBetween(1, MAX_CHOICES)),
  stream: nullOr(isBoolean),
  stream_options: nullOr(struct({ include_usage: nullOr(isBoolean), continuous_usage_stats: nullOr(isBoolean) })),
  stop: nullOr((v) => isString(v) || arrayOf(isString, 0, MAX_STOP)(v)),
  seed: nullOr(isInt),
  presence_penalty: nullOr(finiteBetween(-2, 2)),
  frequency_penalty: nullOr(finiteBetween(-2, 2))
}

const roles: ReadonlySet<unknown> = new Set(["system", "developer", "user", "assistant", "tool"])

const contentPart = struct({ type: isString, text: isString }, ["type"])

const message = struct({
  role: (v) => roles.has(v),
  content: (v) => v === null || isString(v) || arrayOf(contentPart, 0)(v),
  name: isString,
  tool_call_id: isString,
  refusal: nullOr(isString)
}, ["role"])

/**
 * True when `body` has the common shape of a chat completions request, so the Schema decode of
 * `OpenAiSchema.ChatCompletionRequest` accepts it as it is.
 *
 * @example
 * ```ts
 * import * as CommonShape from "./CommonShape.ts"
 *
 * CommonShape.isChatCompletionRequest({ model: "m", messages: [{ role: "user", content: "hi" }] }) // true
 * CommonShape.isChatCompletionRequest({ messages: [], tools: [] }) // false: left to Schema
 * ```
 *
 * @since 0.1.0
 */
export const isChatCompletionRequest: (body: unknown) => boolean = struct({
  ...sampling,
  messages: arrayOf(message, 1),
  max_completion_tokens: nullOr(intAtLeast(0)),
  logprobs: nullOr(isBoolean),
  top_logprobs: nullOr(intBetween(0, 20))
}, ["messages"])

const tokenId = intAtLeast(0)

/**
 * True when `body` has the common shape of a completions request (`prompt` as a text, a list of
 * texts or token ids), so the Schema decode of `OpenAiSchema.CompletionRequest` accepts it as it
 * is.
 *
 * @since 0.1.0
 */
export const isCompletionRequest: (body: unknown) => boolean = struct({
  ...sampling,
  prompt: (v) => isString(v) || arrayOf(isString, 1)(v) || arrayOf(tokenId, 1)(v),
  logprobs: nullOr(intBetween(0, 20)),
  echo: nullOr(isBoolean),
  best_of: nullOr(intAtLeast(1)),
  suffix: nullOr(isString)
}, ["prompt"])
