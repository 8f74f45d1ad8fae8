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
import * as Result from "effect/Result"
import type { VllmFields } from "../OpenAiSchema.ts"
import { badRequest, type ServerError } from "../ServerError.ts"

/** Each not-carried parameter with the one value that changes nothing (null and absent too). */
const neutral: ReadonlyArray<readonly [keyof VllmFields, (value: unknown) => boolean, string]> = [
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
 * What a request's extension parameters ask, once they are known to be honoured.
 *
 * @since 0.2.0
 */
export interface Asked {
  /** `ignore_eos`: the engine's `termination_id: -1`, and the text layer ends on no eos. */
  readonly ignoreEos: boolean
  /** `stream_interval`: the engine's `streaming_interval` (tokens per streamed partial). */
  readonly streamInterval: number | undefined
  /** `add_special_tokens`: a completions text prompt is encoded with them (vLLM's default). */
  readonly addSpecialTokens: boolean
  /** `include_stop_str_in_output`: a plain choice ends with the stop string that ended it. */
  readonly includeStopString: boolean
  /**
   * `return_token_ids`: a plain choice carries its `token_ids` and, as vLLM writes them,
   * `prompt_token_ids` (a completions choice's own prompt's; for a chat, its one prompt).
   */
  readonly returnTokenIds: boolean
}

/** What a request without extension parameters asks: one value for all of them. */
const neutralAsked: Asked = {
  ignoreEos: false,
  streamInterval: undefined,
  addSpecialTokens: true,
  includeStopString: false,
  returnTokenIds: false
}

/**
 * The request's extension parameters read, or the 400 of the first one it sets to what cannot be
 * honoured. `chat`: `add_special_tokens` there is vLLM's "encode the rendered chat with special
 * tokens", only false (the template writes them); `include_stop_str_in_output` and
 * `return_token_ids` are for plain answers only.
 *
 * @since 0.2.0
 */
export const read = (
  request: VllmFields & { readonly stream?: boolean | null | undefined },
  chat: boolean
): Result.Result<Asked, ServerError> => {
  for (const [name, ok, why] of neutral) {
    const value = request[name]
    if (value != null && !ok(value)) return Result.fail(badRequest(name, why))
  }
  if (chat && request.add_special_tokens === true) {
    return Result.fail(badRequest("add_special_tokens", "only false for chats (the chat template writes the special tokens)"))
  }
  const includeStopString = request.include_stop_str_in_output === true
  const returnTokenIds = request.return_token_ids === true
  if (request.stream === true) {
    if (includeStopString) return Result.fail(badRequest("include_stop_str_in_output", "not supported when streaming"))
    if (returnTokenIds) return Result.fail(badRequest("return_token_ids", "not supported when streaming"))
  }
  const ignoreEos = request.ignore_eos === true
  const streamInterval = request.stream_interval ?? undefined
  const addSpecialTokens = request.add_special_tokens !== false
  if (!ignoreEos && streamInterval === undefined && addSpecialTokens && !includeStopString && !returnTokenIds) {
    return Result.succeed(neutralAsked)
  }
  return Result.succeed({ ignoreEos, streamInterval, addSpecialTokens, includeStopString, returnTokenIds })
}
