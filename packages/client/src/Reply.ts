/**
 * What the client hands back: a finished request's {@link Reply}, and the {@link StreamEvent}s of
 * a streamed one ({@link Tokens} as they are generated, then one {@link Final}).
 *
 * Two request ids meet a user here. `requestId` (on {@link Tokens}, `Submitted` and
 * `BatchReply`) is this client's own id for the request: the one in the message envelope, the one
 * `abort` takes. The reply map's `request_id` is the coordinator's id for it (a counter of its
 * own, numbering every client's requests), which is what the engines log.
 *
 * @since 0.1.0
 */
import { Reply as ProtocolReply } from "@mcore-effect/protocol"

/**
 * The raw reply map (`deserialize: false`, the default), as the engine serialized it, plus
 * `latency`: seconds from submission, a float.
 *
 * @since 0.1.0
 * @category models
 */
export interface RawReply {
  readonly latency: number
  readonly [key: string]: unknown
}

/**
 * A finished request: the raw reply map with `latency` when the client was built with
 * `deserialize: false` (the default), the typed `DynamicInferenceRequest` (also with `latency`)
 * when `deserialize: true`. Tell them apart with {@link isDeserialized}.
 *
 * @since 0.1.0
 * @category models
 */
export type Reply = RawReply | ProtocolReply.DynamicInferenceRequest

/**
 * True for a typed reply (a client built with `deserialize: true`).
 *
 * @example
 * ```ts
 * import { Reply } from "@mcore-effect/client"
 *
 * const generated = (reply: Reply.Reply): ReadonlyArray<number> =>
 *   Reply.isDeserialized(reply)
 *     ? reply.generated_tokens ?? [] // a DynamicInferenceRequest
 *     : (reply.generated_tokens as ReadonlyArray<number> | undefined) ?? [] // the raw map
 * ```
 *
 * @since 0.1.0
 * @category guards
 */
export const isDeserialized = (reply: Reply): reply is ProtocolReply.DynamicInferenceRequest =>
  reply instanceof ProtocolReply.DynamicInferenceRequest

/**
 * The request a reply is about. Megatron-LM core_v0.16's coordinator replies with the engine's
 * request *record*, `{"requests": [request, ...], "latency": ...}`, and `submit` hands that
 * record over as it came, as Megatron's own 0.16 client gets it. A record holds one request per
 * checkpoint: when the engine evicts a request it appends a new one whose prompt is the old
 * prompt and what it generated, so each holds only the tokens generated since. This merges them
 * as Megatron's `DynamicInferenceRequestRecord.merge()` does: the first request's prompt, prompt
 * tokens and parameters, the generated tokens (log probs, top-n, tpot, events) of all of them in
 * order, their texts joined (nil if one has none), the last one's status, and the record's
 * `latency` (the client's, seconds from submission). Any other reply is returned as it is; a
 * typed reply (`deserialize: true`) is already the merged request.
 *
 * @example
 * ```ts
 * import { Reply } from "@mcore-effect/client"
 *
 * Reply.requestOf({ requests: [{ request_id: 0, generated_tokens: [5] }], latency: 0.2 })
 * // { request_id: 0, generated_tokens: [5], latency: 0.2 }
 * Reply.requestOf({ request_id: 0, generated_tokens: [5], latency: 0.2 }) // the same map
 * ```
 *
 * @since 0.2.0
 * @category getters
 */
export const requestOf = (reply: Reply): Reply => {
  if (isDeserialized(reply)) return reply
  return (recordRequest(reply) ?? reply) as Reply
}

const isMap = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array)

/** The lists `merge()` concatenates across checkpoints (nil when the first request's is). */
const mergedLists = ["generated_tokens", "generated_log_probs", "generated_top_n_logprobs", "tpot", "events"] as const

/**
 * A record's requests merged into one request map with the record's `latency`, or `undefined`
 * when the map is not a record (a request map has no `requests` key; a record has no
 * `generated_tokens`, and every element of its `requests` is a map).
 *
 * @since 0.2.0
 * @category getters
 * @internal
 */
export const recordRequest = (map: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined => {
  const requests = map.requests
  if (!Array.isArray(requests) || requests.length === 0 || "generated_tokens" in map || !requests.every(isMap)) return undefined
  const first = requests[0] as Record<string, unknown>
  if (requests.length === 1) return { ...first, latency: map.latency }
  const merged: Record<string, unknown> = { ...first }
  for (const key of mergedLists) {
    if (first[key] === null || first[key] === undefined) continue
    const values: Array<unknown> = []
    for (const r of requests as Array<Record<string, unknown>>) {
      const list = r[key]
      if (Array.isArray(list)) values.push(...list)
    }
    merged[key] = values
  }
  const texts = (requests as Array<Record<string, unknown>>).map((r) => r.generated_text)
  merged.generated_text = texts.every((t) => typeof t === "string") ? texts.join("") : null
  if (Array.isArray(merged.generated_tokens)) merged.generated_length = merged.generated_tokens.length
  merged.status = (requests[requests.length - 1] as Record<string, unknown>).status
  merged.latency = map.latency
  return merged
}

/**
 * New tokens of a streamed request (`ENGINE_REPLY_PARTIAL`), in order.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tokens {
  readonly _tag: "Tokens"
  /** This client's id for the request (what `abort` takes). */
  readonly requestId: number
  readonly newTokens: ReadonlyArray<number>
  /** The log probs of `newTokens`, when the request asked for them and the engine sent them. */
  readonly newLogProbs?: ReadonlyArray<number> | undefined
}

/**
 * The last event of a streamed request (`ENGINE_REPLY`): its reply, exactly once.
 *
 * @since 0.1.0
 * @category models
 */
export interface Final<R = Reply> {
  readonly _tag: "Final"
  readonly reply: R
}

/**
 * One event of a streamed request: {@link Tokens}, any number of times, in order; then exactly
 * one {@link Final}; then the stream ends.
 *
 * @since 0.1.0
 * @category models
 */
export type StreamEvent<R = Reply> = Tokens | Final<R>
