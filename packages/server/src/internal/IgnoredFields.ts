/**
 * The top-level fields of a request body this server accepts without acting on them, and the
 * rest of vLLM's fields: what cannot change the answer or its isolation is taken and ignored,
 * out loud; what could is a 400 naming it unless it is at the value that changes nothing; a name
 * nobody knows (a typo like `max_tokenz`) is a 400.
 *
 * Ignored fields are stripped before the endpoint's Schema decode, listed in the response's
 * `x-ignored-fields` header, logged once per name per process (a warning) and counted in
 * `mcore_server_ignored_fields_total{field}`, whose label is the field's name when it is one of
 * this module's lists or of the endpoint's {@link Policy}, and `other` otherwise (a bounded set,
 * whatever clients send). {@link sift} is the one step an endpoint takes (the Responses endpoint
 * too, with a policy of its own).
 *
 * The lists come from vLLM's `ChatCompletionRequest` and `CompletionRequest`
 * (`vllm/entrypoints/openai/{chat_completion,completion}/protocol.py`) and OpenAI's request
 * fields; the server README says why each is where it is.
 *
 * @since 0.1.0
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as Result from "effect/Result"
import { badRequest, type ServerError } from "../ServerError.ts"
import type { State } from "./ServerState.ts"

/** A predicate on a field's value: true when it changes nothing. */
type Neutral = (value: unknown) => boolean

const isNull: Neutral = (v) => v === null
const nullOr = (...values: ReadonlyArray<unknown>): Neutral => (v) => v === null || values.includes(v)
const nullOrEmptyObject: Neutral = (v) =>
  v === null || (typeof v === "object" && !Array.isArray(v) && Object.keys(v as object).length === 0)

/**
 * Fields that change neither what is generated nor who may see it: accepted with any value
 * (`store` only when not `true`: nothing is stored, so a client asking for it must know).
 *
 * - `request_id` (vLLM's; the response's id comes from the `x-request-id` header here),
 * - `metadata`, `safety_identifier` (labels for the caller's own records),
 * - `store` (false or null), `service_tier`, `prompt_cache_retention` (OpenAI's billing and
 *   storage),
 * - `verbosity` (OpenAI's; vLLM's protocol has no such field, so vLLM's answer never depends on it).
 *
 * @since 0.1.0
 */
export const ignorable: ReadonlyMap<string, { readonly refused?: (value: unknown) => string | undefined }> = new Map<
  string,
  { readonly refused?: (value: unknown) => string | undefined }
>([
  ["request_id", {}],
  ["metadata", {}],
  ["store", { refused: (v) => v === true ? "nothing is stored by this server (only false or null)" : undefined }],
  ["service_tier", {}],
  ["safety_identifier", {}],
  ["prompt_cache_retention", {}],
  ["verbosity", {}]
])

/**
 * vLLM's fields that would change the output or isolate tenants, with the values that change
 * nothing (null and vLLM's default): at one of those they are ignored (and listed), at any other
 * a 400 naming them says why.
 */
const vllmShared: ReadonlyArray<readonly [string, Neutral, string]> = [
  ["structured_outputs", isNull, "structured outputs (guided decoding) are not supported by the engines"],
  ["guided_json", isNull, "guided decoding is not supported by the engines"],
  ["guided_regex", isNull, "guided decoding is not supported by the engines"],
  ["guided_choice", isNull, "guided decoding is not supported by the engines"],
  ["guided_grammar", isNull, "guided decoding is not supported by the engines"],
  ["guided_decoding_backend", isNull, "guided decoding is not supported by the engines"],
  ["guided_whitespace_pattern", isNull, "guided decoding is not supported by the engines"],
  ["structural_tag", isNull, "guided decoding is not supported by the engines"],
  ["logits_processors", nullOr(), "logits processors are not supported by the engines"],
  ["cache_salt", isNull, "prefix-cache salting is not supported: the engines' prefix cache is shared by every request"],
  ["kv_transfer_params", nullOrEmptyObject, "KV transfer (disaggregated serving) is not supported"],
  ["vllm_xargs", nullOrEmptyObject, "vLLM's custom extension arguments are not supported"],
  ["return_tokens_as_token_ids", nullOr(false), "not supported (tokens are returned as text)"],
  ["max_repetition_pattern_size", nullOr(0), "repetition detection is not supported by the engines (only 0)"],
  ["min_repetition_pattern_size", nullOr(0), "repetition detection is not supported by the engines (only 0)"],
  ["repetition_min_count", nullOr(0), "repetition detection is not supported by the engines (only 0)"]
]

const chatOnly: ReadonlyArray<readonly [string, Neutral, string]> = [
  ["echo", nullOr(false), "not supported for chats (echo is a /v1/completions parameter here)"],
  ["chat_template", isNull, "a per-request chat template is not supported (the server's is used; see --chat-template)"],
  ["add_generation_prompt", nullOr(true), "only true is supported"],
  ["continue_final_message", nullOr(false), "not supported for generation (only on /tokenize)"],
  ["documents", isNull, "documents for the chat template are not supported"],
  ["mm_processor_kwargs", nullOrEmptyObject, "processor arguments are not supported (the engine preprocesses images)"],
  ["include_reasoning", nullOr(true), "only true is supported (the reasoning is always returned when a reasoning parser is set)"],
  ["best_of", nullOr(1), "only 1 is supported for chats"]
]

const completionOnly: ReadonlyArray<readonly [string, Neutral, string]> = [
  ["prompt_embeds", isNull, "prompt embeddings are not supported"],
  ["response_format", (v) => v === null || (typeof v === "object" && (v as { type?: unknown }).type === "text" && Object.keys(v as object).length === 1), "only {\"type\": \"text\"} is supported"]
]

/**
 * What an endpoint does with the top-level fields of its body.
 *
 * @since 0.1.0
 */
export interface Policy {
  /** The fields the endpoint's Schema decodes. */
  readonly known: ReadonlySet<string>
  /** Fields taken only at values that change nothing, and why any other is refused. */
  readonly neutralOnly: ReadonlyMap<string, readonly [Neutral, string]>
}

/**
 * A policy: the endpoint decodes `known` (e.g. the keys of its Schema struct's `fields`),
 * ignores {@link ignorable} and refuses `neutralOnly`'s fields at any but their neutral values.
 * `known` wins over the other lists, so an endpoint that supports a field takes it.
 *
 * @since 0.1.0
 */
export const policy = (
  known: Iterable<string>,
  neutralOnly: ReadonlyArray<readonly [string, Neutral, string]> = []
): Policy => ({
  known: new Set(known),
  neutralOnly: new Map(neutralOnly.map(([name, neutral, why]) => [name, [neutral, why] as const]))
})

/**
 * vLLM's chat-only fields this server does not act on, with their neutral values (for
 * {@link policy}).
 *
 * @since 0.1.0
 */
export const chatFields: ReadonlyArray<readonly [string, Neutral, string]> = [...vllmShared, ...chatOnly]

/**
 * vLLM's completions-only fields this server does not act on (for {@link policy}).
 *
 * @since 0.1.0
 */
export const completionFields: ReadonlyArray<readonly [string, Neutral, string]> = [...vllmShared, ...completionOnly]

/** Every name of this module's lists: the metric's labels (anything else is `other`). */
const labels: ReadonlySet<string> = new Set([
  ...ignorable.keys(),
  ...chatFields.map(([name]) => name),
  ...completionFields.map(([name]) => name)
])

/**
 * The metric label of an ignored field's name: the name when it is one of this module's lists
 * or of `policy`'s (fixed when the server starts), `other` otherwise: a bounded label set,
 * whatever clients send.
 *
 * @since 0.1.0
 */
export const label = (name: string, policy?: Policy | undefined): string =>
  labels.has(name) || policy?.neutralOnly.has(name) === true ? name : "other"

/** Most names in the header, and most characters of each. */
const MAX_NAMES = 16
const MAX_NAME_LENGTH = 64

/**
 * The `x-ignored-fields` header's value for `names`: each name reduced to `[A-Za-z0-9_.-]`
 * (anything else becomes `_`) and cut at 64 characters, at most 16 names then `...`: whatever
 * a client sends, the header stays one short line of safe characters.
 *
 * @example
 * ```ts
 * import * as IgnoredFields from "./IgnoredFields.ts"
 *
 * IgnoredFields.headerValue(["metadata", "x\r\nSet-Cookie: a"]) // "metadata, x__Set-Cookie__a"
 * ```
 *
 * @since 0.1.0
 */
export const headerValue = (names: ReadonlyArray<string>): string => {
  const shown = names.slice(0, MAX_NAMES).map((name) => name.slice(0, MAX_NAME_LENGTH).replace(/[^A-Za-z0-9_.-]/g, "_"))
  if (names.length > MAX_NAMES) shown.push("...")
  return shown.join(", ")
}

/** A name as a 400 quotes it: JSON-escaped by the body, cut so a huge name is not echoed whole. */
const quoted = (name: string): string => name.length > MAX_NAME_LENGTH ? `${name.slice(0, MAX_NAME_LENGTH)}...` : name

/**
 * The body without the fields `policy` ignores, and their names; or the 400 for the first field
 * refused (at a value that changes the output, or unknown).
 *
 * @since 0.1.0
 */
export const split = (
  policy: Policy,
  body: unknown
): Result.Result<{ readonly body: unknown; readonly ignored: ReadonlyArray<string> }, ServerError> => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return Result.succeed({ body, ignored: [] })
  const record = body as Record<string, unknown>
  let ignored: Array<string> | undefined
  for (const key in record) {
    if (policy.known.has(key) || !Object.hasOwn(record, key)) continue
    const value = record[key]
    const quiet = ignorable.get(key)
    if (quiet !== undefined) {
      const why = quiet.refused?.(value)
      if (why !== undefined) return Result.fail(badRequest(key, why))
      ;(ignored ??= []).push(key)
      continue
    }
    const neutral = policy.neutralOnly.get(key)
    if (neutral === undefined) {
      return Result.fail(badRequest(
        quoted(key),
        "unknown parameter (refused rather than ignored, so that a misspelt parameter is never silently dropped; the server README lists what is accepted)"
      ))
    }
    if (!neutral[0](value)) return Result.fail(badRequest(key, neutral[1]))
    ;(ignored ??= []).push(key)
  }
  if (ignored === undefined) return Result.succeed({ body, ignored: [] })
  const kept: Record<string, unknown> = {}
  for (const key in record) if (Object.hasOwn(record, key) && !ignored.includes(key)) kept[key] = record[key]
  return Result.succeed({ body: kept, ignored })
}

/** Names (labels) already logged by this process. */
const logged = new Set<string>()

/**
 * What ignoring `names` in answer to `request` takes: the `x-ignored-fields` header on its
 * response (set on the Node response now, so every answer carries it, streamed or refused),
 * the counter (labelled by {@link label} with `policy`), and a warning the first time this
 * process ignores each label.
 *
 * @since 0.1.0
 */
export const report = (
  state: State,
  request: HttpServerRequest.HttpServerRequest,
  names: ReadonlyArray<string>,
  policy?: Policy | undefined
): void => {
  if (names.length === 0) return
  NodeHttpServerRequest.toServerResponse(request).setHeader("x-ignored-fields", headerValue(names))
  for (const name of names) {
    const key = label(name, policy)
    state.metrics.ignoredField(key)
    if (logged.has(key)) continue
    logged.add(key)
    state.metrics.log(Effect.logWarning(
      `ignored request field ${JSON.stringify(key === "other" ? headerValue([name]) : key)} (it changes nothing here; listed in x-ignored-fields; logged once)`
    ))
  }
}

/**
 * The one step an endpoint takes: {@link split} its body by `policy`, {@link report} what was
 * ignored, and hand on the rest (to its Schema decode), or the 400.
 *
 * @example
 * ```ts
 * import * as IgnoredFields from "./IgnoredFields.ts"
 * import { Result } from "effect"
 *
 * const policy = IgnoredFields.policy(["model", "input"], IgnoredFields.chatFields)
 * // in a handler: const body = IgnoredFields.sift(policy, state, request, rawBody)
 * const split = IgnoredFields.split(policy, { input: "hi", metadata: {}, cache_salt: null })
 * if (Result.isSuccess(split)) split.success.ignored // ["metadata", "cache_salt"]
 * ```
 *
 * @since 0.1.0
 */
export const sift = (
  policy: Policy,
  state: State,
  request: HttpServerRequest.HttpServerRequest,
  body: unknown
): Result.Result<unknown, ServerError> => {
  const split_ = split(policy, body)
  if (Result.isFailure(split_)) return split_
  report(state, request, split_.success.ignored, policy)
  return Result.succeed(split_.success.body)
}
