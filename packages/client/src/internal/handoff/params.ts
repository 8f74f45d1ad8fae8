/**
 * What a disaggregated request may carry, and what a prefill reply must carry for its decode: the
 * checks made before any frame goes out, the two requests' sampling parameters, and the reading
 * of the prefill reply's `disaggregated_params` (Megatron-LM main, d98e8a64dd,
 * `disaggregation/inference_state_handoff.py`).
 *
 * @since 0.2.0
 * @internal
 */
import type { Prompt, SamplingParams, WireTypes } from "@mcore-effect/protocol"
import {
  type ClientError,
  clientError,
  HandoffMetadataMalformed,
  HandoffMetadataMissing,
  PrefillRefused
} from "../../ClientError.ts"
import type { SubmitOptions } from "../../ClientService.ts"
import { isDeserialized, type Reply, requestOf } from "../../Reply.ts"
import { invalidArgument } from "../arguments.ts"


/**
 * Why a request cannot be disaggregated (`undefined`: it can), before anything is sent:
 *
 * - a text prompt: the decode engine tokenizes nothing, and dies on a text prompt
 *   (`add_request_with_kv_handoff` hashes `torch.tensor(prompt)`), so the caller tokenizes;
 * - log probs of any kind: the decode import raises `NotImplementedError` for them (`:709`),
 *   outside any `try`, which ends the decode engine;
 * - `num_tokens_total`: the prefill must be sent `num_tokens_to_generate: 0`, which Megatron
 *   refuses beside `num_tokens_total`; the decode's budget is `num_tokens_to_generate`;
 * - media: SUBMIT_REQUEST_WITH_KV carries none.
 */
export const refusal = (
  prompt: Prompt.Prompt,
  params: SamplingParams.SamplingParamsInput | undefined,
  options: SubmitOptions | undefined
): ClientError | undefined => {
  if (typeof prompt === "string") {
    return invalidArgument("prompt", "a disaggregated request takes token ids: the decode engine refuses a text prompt (tokenize it first)")
  }
  if (options?.multiModalData !== undefined && options.multiModalData !== null) {
    return invalidArgument("multiModalData", "a disaggregated request carries no media (SUBMIT_REQUEST_WITH_KV has none)")
  }
  if (params === undefined) return undefined
  if (params.return_log_probs === true) {
    return invalidArgument("return_log_probs", "log probs are not handed off: Megatron's decode import refuses them by ending its engine")
  }
  if (params.top_n_logprobs !== undefined && params.top_n_logprobs > 0) {
    return invalidArgument("top_n_logprobs", "log probs are not handed off: Megatron's decode import refuses them by ending its engine")
  }
  if (params.return_prompt_top_n_logprobs === true) {
    return invalidArgument("return_prompt_top_n_logprobs", "log probs are not handed off")
  }
  if (params.num_tokens_total !== undefined && params.num_tokens_total !== null) {
    return invalidArgument("num_tokens_total", "a disaggregated request's budget is num_tokens_to_generate")
  }
  if (params.do_kv_handoff === true) return invalidArgument("do_kv_handoff", "set by the disaggregated client itself")
  return undefined
}

/**
 * The prefill's parameters: the user's (the prefill engine samples the first token), with
 * `do_kv_handoff` and no token to generate, as PR 6675's Dynamo integration sends them.
 *
 * The same object for the same user's parameters object, kept while it still has the same keys and values:
 * the protocol validates and encodes a parameters object once (`encodedParams.ts`, keyed by the
 * object), so a fresh copy per request cost that validation and encoding on every prefill.
 */
export const prefillParams = (params: SamplingParams.SamplingParamsInput | undefined): SamplingParams.SamplingParamsInput => {
  if (params === undefined) return NO_PARAMS
  if (params === last.input && derivedFrom(last.derived, params)) return last.derived
  const fresh = { ...params, do_kv_handoff: true, num_tokens_to_generate: 0 }
  last.input = params
  last.derived = fresh
  return fresh
}

const NO_PARAMS: SamplingParams.SamplingParamsInput = Object.freeze({ do_kv_handoff: true, num_tokens_to_generate: 0 })

/**
 * The last parameters object seen and its prefill's: one entry, not a `WeakMap` (a server makes
 * a parameters object per request, and a map's insertion per request cost more than the copy).
 */
const last: { input: object | undefined; derived: SamplingParams.SamplingParamsInput } = { input: undefined, derived: NO_PARAMS }

/** True when `derived` is still `{ ...params, do_kv_handoff: true, num_tokens_to_generate: 0 }`. */
const derivedFrom = (derived: object, params: object): boolean => {
  const d = derived as Record<string, unknown>
  const p = params as Record<string, unknown>
  let count = 2
  for (const key in p) {
    if (key === "do_kv_handoff" || key === "num_tokens_to_generate") continue
    if (!Object.hasOwn(p, key) || d[key] !== p[key]) return false
    count++
  }
  for (const key in d) if (--count < 0) return false
  return count === 0
}

/**
 * A pin the prefill engine holds for the decode: its id on the prefill coordinator (what
 * RELEASE_KV takes), its blocks, and what the decode is sent.
 */
export interface Pin {
  readonly requestId: number
  readonly blockIds: ReadonlyArray<number>
  readonly kvMeta: WireTypes.KvMeta
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array)

const isId = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0

const isToken = (t: unknown): boolean => typeof t === "number" && Number.isSafeInteger(t)

const isIdArray = (v: unknown): v is ReadonlyArray<number> => Array.isArray(v) && v.every(isId)

/**
 * What a prefill reply hands off: the pin, or the typed error, with the pin's id when it could be
 * read (its blocks are then released at once: no decode will read them).
 */
export type Reading =
  | { readonly _tag: "Pin"; readonly pin: Pin }
  | { readonly _tag: "Refused"; readonly error: ClientError; readonly pinned: number | undefined }

/**
 * Reads a prefill reply (`address` and `requestId`, the prefill client's, for the errors): a
 * `FAILED` request is `PrefillRefused`; no `disaggregated_params` is `HandoffMetadataMissing`;
 * a `request_id` that is not an id, `block_ids` that are not ids (or none), a `kv_meta` that is
 * not a map or whose `resume_tokens` (the sampled token and the MTP proposals, `:702`) are not a
 * non-empty list of token ids is `HandoffMetadataMalformed`. `kv_meta` is passed on verbatim.
 */
export const readPin = (reply: Reply, address: string, requestId: number): Reading => {
  const map = (isDeserialized(reply) ? reply : requestOf(reply)) as unknown as Readonly<Record<string, unknown>>
  const params = map.disaggregated_params
  const pinned = isMap(params) && isId(params.request_id) ? params.request_id : undefined
  if (map.status === "FAILED") {
    const events = Array.isArray(map.events) ? map.events : []
    const last = events.length > 0 ? events[events.length - 1] : undefined
    const why = isMap(last) && last.payload !== undefined ? `FAILED: ${JSON.stringify(last.payload)}` : "its request FAILED"
    return refused(clientError(new PrefillRefused({ address, why })), pinned)
  }
  if (params === undefined || params === null) {
    return refused(clientError(new HandoffMetadataMissing({ address, requestId })), pinned)
  }
  if (!isMap(params)) return malformed(address, requestId, pinned, "not a map")
  if (pinned === undefined) return malformed(address, requestId, pinned, `request_id is ${describe(params.request_id)}, not a request id`)
  const blockIds = params.block_ids
  if (!isIdArray(blockIds) || blockIds.length === 0) return malformed(address, requestId, pinned, `block_ids is ${describe(blockIds)}, not a non-empty list of block ids`)
  const kvMeta = params.kv_meta
  if (!isMap(kvMeta)) return malformed(address, requestId, pinned, `kv_meta is ${describe(kvMeta)}, not a map`)
  const resume = kvMeta.resume_tokens
  if (!Array.isArray(resume) || resume.length === 0 || !resume.every(isToken)) {
    return malformed(address, requestId, pinned, `kv_meta.resume_tokens is ${describe(resume)}, not the sampled token (and MTP proposals)`)
  }
  return { _tag: "Pin", pin: { requestId: pinned, blockIds, kvMeta } }
}

// Functions of their own, not closures in `readPin`: it runs on every prefill reply, and these
// only on a refusal.
const refused = (error: ClientError, pinned: number | undefined): Reading => ({ _tag: "Refused", error, pinned })

const malformed = (address: string, requestId: number, pinned: number | undefined, why: string): Reading =>
  refused(clientError(new HandoffMetadataMalformed({ address, requestId, why })), pinned)

const describe = (v: unknown): string => {
  if (v === undefined) return "absent"
  if (v === null) return "null"
  if (Array.isArray(v)) return v.length === 0 ? "an empty list" : "a list with a non-id"
  return typeof v === "object" ? "a map" : `${typeof v} ${String(v).slice(0, 40)}`
}
