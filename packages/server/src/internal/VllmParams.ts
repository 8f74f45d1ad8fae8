/**
 * vLLM's extension parameters (what vLLM's OpenAI server takes beyond OpenAI's fields, and what
 * clients written for it send): accepted at their neutral values, mapped where Megatron's engines
 * or this server can honour them, and otherwise a 400 naming the parameter, never ignored.
 *
 * Megatron's `SamplingParams` has no repetition penalty, `min_p`, minimum length, beam search,
 * token allow or deny lists, so those are taken only at the value that changes nothing. Mapped:
 * `ignore_eos` (`termination_id: -1`, and the text layer ends on no eos), `stream_interval`
 * (`streaming_interval`: tokens per streamed partial), `add_special_tokens` (a completions text
 * prompt's encode), `include_stop_str_in_output` and `return_token_ids` (a plain answer's
 * `token_ids`, and `prompt_token_ids` as vLLM writes them).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import type * as Choice from "./Choice.ts"
import type * as Generation from "./Generation.ts"
import type * as Sampling from "./Sampling.ts"
import { badRequest, type ServerError } from "../ServerError.ts"

const optionalNullable = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * The fields, spread into both request schemas.
 *
 * @since 0.1.0
 */
export const fields = {
  repetition_penalty: optionalNullable(Schema.Finite.check(Schema.isGreaterThan(0))),
  length_penalty: optionalNullable(Schema.Finite),
  min_p: optionalNullable(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))),
  min_tokens: optionalNullable(NonNegativeInt),
  use_beam_search: optionalNullable(Schema.Boolean),
  skip_special_tokens: optionalNullable(Schema.Boolean),
  spaces_between_special_tokens: optionalNullable(Schema.Boolean),
  truncate_prompt_tokens: optionalNullable(Schema.Int),
  allowed_token_ids: optionalNullable(Schema.Array(NonNegativeInt)),
  bad_words: optionalNullable(Schema.Array(Schema.String)),
  stop_token_ids: optionalNullable(Schema.Array(NonNegativeInt)),
  prompt_logprobs: optionalNullable(NonNegativeInt),
  priority: optionalNullable(Schema.Int),
  ignore_eos: optionalNullable(Schema.Boolean),
  include_stop_str_in_output: optionalNullable(Schema.Boolean),
  stream_interval: optionalNullable(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  add_special_tokens: optionalNullable(Schema.Boolean),
  return_token_ids: optionalNullable(Schema.Boolean)
}

/**
 * The fields as a request holds them.
 *
 * @since 0.1.0
 */
export type Fields = Schema.Struct<typeof fields>["Type"]

/** Each not-carried parameter with the one value that changes nothing (null and absent too). */
const neutral: ReadonlyArray<readonly [keyof Fields, (value: unknown) => boolean, string]> = [
  ["repetition_penalty", (v) => v === 1, "not supported by the engines (only 1)"],
  ["length_penalty", (v) => v === 1, "not supported by the engines (only 1: no beam search)"],
  ["min_p", (v) => v === 0, "not supported by the engines (only 0)"],
  ["min_tokens", (v) => v === 0, "not supported by the engines (only 0)"],
  ["use_beam_search", (v) => v === false, "beam search is not supported by the engines"],
  ["skip_special_tokens", (v) => v === true, "only true is supported"],
  ["spaces_between_special_tokens", (v) => v === true, "only true is supported"],
  ["truncate_prompt_tokens", () => false, "prompt truncation is not supported"],
  ["allowed_token_ids", (v) => (v as ReadonlyArray<number>).length === 0, "not supported by the engines"],
  ["bad_words", (v) => (v as ReadonlyArray<string>).length === 0, "not supported by the engines"],
  ["stop_token_ids", (v) => (v as ReadonlyArray<number>).length === 0, "not supported (the engines take one termination id)"],
  ["prompt_logprobs", () => false, "not supported here; use /v1/completions with echo and logprobs"],
  ["priority", (v) => v === 0, "request priorities are not supported by the engines"]
]

/**
 * The first extension parameter the request sets to what cannot be honoured, as a 400. `chat`:
 * `add_special_tokens` there is vLLM's "encode the rendered chat with special tokens", only
 * false (the template writes them); `include_stop_str_in_output` and `return_token_ids` are for
 * plain answers only.
 *
 * @since 0.1.0
 */
export const refusal = (request: Fields & { readonly stream?: boolean | null | undefined }, chat: boolean): ServerError | undefined => {
  for (const [name, ok, why] of neutral) {
    const value = request[name]
    if (value != null && !ok(value)) return badRequest(name, why)
  }
  if (chat && request.add_special_tokens === true) {
    return badRequest("add_special_tokens", "only false for chats (the chat template writes the special tokens)")
  }
  if (request.stream === true) {
    if (request.include_stop_str_in_output === true) return badRequest("include_stop_str_in_output", "not supported when streaming")
    if (request.return_token_ids === true) return badRequest("return_token_ids", "not supported when streaming")
  }
  return undefined
}

/**
 * `plan` with what the request's extension parameters ask of the engine: `ignore_eos` as
 * `termination_id: -1`, `stream_interval` as `streaming_interval`.
 *
 * @since 0.1.0
 */
export const applyTo = (plan: Sampling.Plan, request: Fields): Sampling.Plan => {
  if (request.ignore_eos !== true && request.stream_interval == null) return plan
  return {
    ...plan,
    samplingParams: {
      ...plan.samplingParams,
      ...(request.ignore_eos === true ? { termination_id: -1 } : {}),
      ...(request.stream_interval == null ? {} : { streaming_interval: request.stream_interval })
    }
  }
}

/**
 * `endpoint` answering plain responses as the request's extension parameters ask:
 * `include_stop_str_in_output` puts the stop string that ended a choice back at its end;
 * `return_token_ids` adds each choice's `token_ids` and, as vLLM writes them, `prompt_token_ids`
 * (a completions choice's own prompt's; for a chat, on every choice, its one prompt).
 *
 * @since 0.1.0
 */
export const endpointFor = (endpoint: Generation.Endpoint, request: Fields): Generation.Endpoint => {
  const withStop = request.include_stop_str_in_output === true
  const withIds = request.return_token_ids === true
  if (!withStop && !withIds) return endpoint
  return {
    ...endpoint,
    choice: (index, finished, prompt) => {
      const shown: Choice.Finished = withStop && finished.stopString !== undefined
        ? { ...finished, text: finished.text + finished.stopString }
        : finished
      const choice = endpoint.choice(index, shown, prompt) as Record<string, unknown>
      return withIds ? { ...choice, prompt_token_ids: prompt.ids, token_ids: finished.tokens } : choice
    }
  }
}

/**
 * Whether a completions text prompt gets the tokenizer's special tokens (vLLM's default: yes).
 *
 * @since 0.1.0
 */
export const addSpecialTokens = (request: Fields): boolean => request.add_special_tokens !== false
