/**
 * The engine's reply: the Python `DynamicInferenceRequest.serialize()` map of a finished request,
 * and the partial body of a streaming one.
 *
 * Replies arrive at the rate requests finish, so {@link decodeReply} checks the known fields with
 * plain loops and builds the class without a Schema pass; the {@link DynamicInferenceRequest}
 * class and {@link DynamicInferenceRequestFromMap} describe the same data for Schema users and
 * arbitraries. Unknown keys are kept (a newer engine's fields must survive an older client), and
 * every top-level `["tensor", x]` / `["ndarray", {data, dtype}]` wrapper is unwrapped, as Python's
 * own deserializer does for every key.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import { MalformedFrame, type ProtocolError, protocolError } from "./ProtocolError.ts"
import { unwrap } from "./internal/tensorWrappers.ts"
import { describeValue, isPlainObject } from "./internal/values.ts"

/**
 * A request's status, by its Python enum name.
 *
 * @example
 * ```ts
 * import { Reply } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * Schema.is(Reply.Status)("COMPLETED") // true
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const Status = Schema.Literals([
  "WAITING_IN_QUEUE",
  "ACTIVE_AND_GENERATING_TOKENS",
  "ACTIVE_BUT_NOT_GENERATING_TOKENS",
  "COMPLETED",
  "FAILED"
])

/**
 * @category models
 * @since 0.1.0
 */
export type Status = typeof Status.Type

const STATUSES: ReadonlySet<unknown> = new Set(Status.literals)

/**
 * The reply body as it comes off the wire: a map of anything. {@link decodeReply} (or
 * {@link DynamicInferenceRequestFromMap}) turns it into a {@link DynamicInferenceRequest}.
 *
 * @example
 * ```ts
 * import { Reply } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * Schema.decodeUnknownSync(Reply.ReplyMap)({ request_id: 7, anything: [1] })
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const ReplyMap = Schema.Record(Schema.String, Schema.Unknown)

/**
 * @category models
 * @since 0.1.0
 */
export type ReplyMap = typeof ReplyMap.Type

const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const TokenIds = Schema.Array(NonNegativeInt)
const Numbers = Schema.Array(Schema.Number)
const AnyMap = Schema.Record(Schema.String, Schema.Unknown)
const TopNLogprobs = Schema.Array(Schema.Record(Schema.String, Schema.Number))
const Epochs = Schema.Array(Schema.Array(Schema.Int))

/**
 * The known fields, all optional (a test engine, or an older one, may leave any out). Tensor
 * fields hold their unwrapped values.
 */
const fields = {
  request_id: Schema.optionalKey(NonNegativeInt),
  uid: Schema.optionalKey(Schema.NullOr(Schema.String)),
  prompt: Schema.optionalKey(Schema.NullOr(Schema.String)),
  prompt_tokens: Schema.optionalKey(Schema.NullOr(TokenIds)),
  prompt_length: Schema.optionalKey(Schema.NullOr(NonNegativeInt)),
  arrival_time: Schema.optionalKey(Schema.NullOr(Schema.Number)),
  status: Schema.optionalKey(Schema.NullOr(Status)),
  generated_text: Schema.optionalKey(Schema.NullOr(Schema.String)),
  generated_tokens: Schema.optionalKey(Schema.NullOr(TokenIds)),
  generated_length: Schema.optionalKey(Schema.NullOr(NonNegativeInt)),
  generated_log_probs: Schema.optionalKey(Schema.NullOr(Numbers)),
  prompt_log_probs: Schema.optionalKey(Schema.NullOr(Numbers)),
  generated_top_n_logprobs: Schema.optionalKey(Schema.NullOr(TopNLogprobs)),
  prompt_top_n_logprobs: Schema.optionalKey(Schema.NullOr(TopNLogprobs)),
  sampling_params: Schema.optionalKey(Schema.NullOr(AnyMap)),
  ttft: Schema.optionalKey(Schema.NullOr(Schema.Number)),
  tpot: Schema.optionalKey(Schema.NullOr(Numbers)),
  events: Schema.optionalKey(Schema.NullOr(Schema.Array(AnyMap))),
  disaggregated_params: Schema.optionalKey(Schema.NullOr(AnyMap)),
  policy_epoch: Schema.optionalKey(Schema.NullOr(Epochs)),
  kv_cache_epoch: Schema.optionalKey(Schema.NullOr(Epochs)),
  num_cached_tokens: Schema.optionalKey(Schema.NullOr(NonNegativeInt)),
  payload_offloaded: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  payload_stage_metadata: Schema.optionalKey(Schema.NullOr(AnyMap)),
  /** Seconds from submission to this reply; added by the client, never by the engine. */
  latency: Schema.optionalKey(Schema.NullOr(Schema.Number))
}

type KnownKey = keyof typeof fields

/**
 * A finished request as the engine serialized it. The known fields are typed (and optional);
 * every other key of the wire map is kept, unwrapped, in `extra`.
 *
 * @example
 * ```ts
 * import { Msgpack, Reply } from "@mcore-effect/protocol"
 * import { Result } from "effect"
 *
 * const map = Msgpack.decode(Msgpack.encode({
 *   request_id: 7, status: "COMPLETED", prompt_tokens: ["tensor", [1, 2]], future_key: 1
 * }))
 * const reply = Reply.decodeReply(map)
 * if (Result.isSuccess(reply)) {
 *   reply.success.prompt_tokens // [1, 2]
 *   reply.success.extra // { future_key: 1 }
 * }
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export class DynamicInferenceRequest extends Schema.Class<DynamicInferenceRequest>(
  "@mcore-effect/protocol/DynamicInferenceRequest"
)({
  ...fields,
  /** The wire map's keys this client does not know, with tensor wrappers removed. */
  extra: AnyMap
}) {}

// ---------------------------------------------------------------------------------------------
// Plain-loop checks of the known fields, mirroring their Schemas
// ---------------------------------------------------------------------------------------------

type Guard = (u: unknown) => boolean

const isNat: Guard = (u) => Number.isSafeInteger(u) && (u as number) >= 0
const isNumber: Guard = (u) => typeof u === "number"
const isString: Guard = (u) => typeof u === "string"
const isBoolean: Guard = (u) => typeof u === "boolean"
const isMap: Guard = isPlainObject
const nullOr = (g: Guard): Guard => (u) => u === null || g(u)
const natArray: Guard = (u) => {
  if (!Array.isArray(u)) return false
  for (let i = 0; i < u.length; i++) {
    const v = u[i]
    if (!(typeof v === "number" && v >= 0 && v <= Number.MAX_SAFE_INTEGER && Math.floor(v) === v)) return false
  }
  return true
}
const numberArray: Guard = (u) => {
  if (!Array.isArray(u)) return false
  for (let i = 0; i < u.length; i++) if (typeof u[i] !== "number") return false
  return true
}
const arrayOf = (g: Guard): Guard => (u) => {
  if (!Array.isArray(u)) return false
  for (let i = 0; i < u.length; i++) if (!g(u[i])) return false
  return true
}
const numberMap: Guard = (u) => {
  if (!isPlainObject(u)) return false
  for (const k in u) if (typeof u[k] !== "number") return false
  return true
}
const intArray: Guard = (u) => {
  if (!Array.isArray(u)) return false
  for (let i = 0; i < u.length; i++) if (!Number.isSafeInteger(u[i])) return false
  return true
}

const GUARDS: Record<KnownKey, readonly [Guard, string]> = {
  request_id: [isNat, "a non-negative integer"],
  uid: [nullOr(isString), "a string or null"],
  prompt: [nullOr(isString), "a string or null"],
  prompt_tokens: [nullOr(natArray), "token ids or null"],
  prompt_length: [nullOr(isNat), "a non-negative integer or null"],
  arrival_time: [nullOr(isNumber), "a number or null"],
  status: [(u) => u === null || STATUSES.has(u), `one of ${Status.literals.join(", ")}, or null`],
  generated_text: [nullOr(isString), "a string or null"],
  generated_tokens: [nullOr(natArray), "token ids or null"],
  generated_length: [nullOr(isNat), "a non-negative integer or null"],
  generated_log_probs: [nullOr(numberArray), "an array of numbers or null"],
  prompt_log_probs: [nullOr(numberArray), "an array of numbers or null"],
  generated_top_n_logprobs: [nullOr(arrayOf(numberMap)), "an array of token-to-logprob maps or null"],
  prompt_top_n_logprobs: [nullOr(arrayOf(numberMap)), "an array of token-to-logprob maps or null"],
  sampling_params: [nullOr(isMap), "a map or null"],
  ttft: [nullOr(isNumber), "a number or null"],
  tpot: [nullOr(numberArray), "an array of numbers or null"],
  events: [nullOr(arrayOf(isMap)), "an array of event maps or null"],
  disaggregated_params: [nullOr(isMap), "a map or null"],
  policy_epoch: [nullOr(arrayOf(intArray)), "an array of integer pairs or null"],
  kv_cache_epoch: [nullOr(arrayOf(intArray)), "an array of integer pairs or null"],
  num_cached_tokens: [nullOr(isNat), "a non-negative integer or null"],
  payload_offloaded: [nullOr(isBoolean), "a boolean or null"],
  payload_stage_metadata: [nullOr(isMap), "a map or null"],
  latency: [nullOr(isNumber), "a number or null"]
}

const KNOWN: ReadonlySet<string> = new Set(Object.keys(fields))

/** `target[key] = value` that stays a plain own property even for the key `__proto__`. */
const put = (target: Record<string, unknown>, key: string, value: unknown): void => {
  if (key === "__proto__") {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  } else {
    target[key] = value
  }
}

/** Known fields and `extra`, from a wire map, or why the map is not a reply. */
const split = (map: Record<string, unknown>): Record<string, unknown> | string => {
  const out: Record<string, unknown> = {}
  const extra: Record<string, unknown> = {}
  for (const key of Object.keys(map)) {
    const value = unwrap(map[key])
    if (KNOWN.has(key)) {
      const [guard, expected] = GUARDS[key as KnownKey]
      if (!guard(value)) return `field ${key} should be ${expected}, got ${describeValue(value)}`
      out[key] = value
    } else {
      put(extra, key, value)
    }
  }
  out.extra = extra
  return out
}

const malformed = (why: string): Result.Result<never, ProtocolError> =>
  Result.fail(protocolError(new MalformedFrame({ messageTag: "EngineReply", frame: 1, why })))

/**
 * Builds an instance from fields already checked against the class's Schema. The class
 * constructor would parse every field again (PERFORMANCE.md#replies-built-without-a-second-schema-pass);
 * a Schema class instance is its prototype plus its own fields, so this is the same object
 * without that second pass.
 */
const trusted = (props: Record<string, unknown>): DynamicInferenceRequest =>
  Object.assign(Object.create(DynamicInferenceRequest.prototype) as DynamicInferenceRequest, props)

/**
 * Decodes a reply map (frame 1 of ENGINE_REPLY, already msgpack-decoded): unwraps top-level
 * tensor wrappers, checks the known fields, keeps the unknown ones in `extra`. A value that is
 * not a map, or a known field of the wrong type, is a `MalformedFrame` for frame 1.
 *
 * @example
 * ```ts
 * import { Reply } from "@mcore-effect/protocol"
 * import { Result } from "effect"
 *
 * const reply = Reply.decodeReply({ request_id: 7, status: "COMPLETED", generated_tokens: [5, 6, 7] })
 * if (Result.isSuccess(reply)) reply.success.status // "COMPLETED"
 *
 * Reply.decodeReply([1, 2]) // Failure: MalformedFrame (frame 1)
 * ```
 *
 * @category decoding
 * @since 0.1.0
 */
export const decodeReply = (map: unknown): Result.Result<DynamicInferenceRequest, ProtocolError> => {
  if (!isPlainObject(map)) return malformed(`the reply should be a map, got ${describeValue(map)}`)
  const props = split(map)
  return typeof props === "string" ? malformed(props) : Result.succeed(trusted(props))
}

/**
 * The same reply with `latency` (seconds since submission) set, as the client reports it.
 *
 * @example
 * ```ts
 * import { Reply } from "@mcore-effect/protocol"
 * import { Result } from "effect"
 *
 * const reply = Reply.decodeReply({ request_id: 1 })
 * if (Result.isSuccess(reply)) Reply.withLatency(reply.success, 0.25).latency // 0.25
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
export const withLatency = (reply: DynamicInferenceRequest, latency: number): DynamicInferenceRequest =>
  trusted({ ...reply, latency })

/**
 * The class decoded from the raw wire map (and encoded back to one, `extra` merged in), for
 * Schema users: the receiving side of a test peer, arbitraries. It walks every element, so the
 * client's hot path uses {@link decodeReply} instead; both give the same value.
 *
 * @example
 * ```ts
 * import { Reply } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * Schema.decodeUnknownSync(Reply.DynamicInferenceRequestFromMap)({ request_id: 1, shiny: true }).extra
 * // { shiny: true }
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const DynamicInferenceRequestFromMap = ReplyMap.pipe(
  Schema.decodeTo(DynamicInferenceRequest, {
    decode: SchemaGetter.transform((map: ReplyMap) => {
      const known: Record<string, unknown> = {}
      const extra: Record<string, unknown> = {}
      for (const key of Object.keys(map)) {
        const value = unwrap(map[key])
        if (KNOWN.has(key)) known[key] = value
        else put(extra, key, value)
      }
      return { ...known, extra } as typeof DynamicInferenceRequest.Encoded
    }),
    encode: SchemaGetter.transform((encoded: typeof DynamicInferenceRequest.Encoded): ReplyMap => {
      const { extra, ...known } = encoded
      const map: Record<string, unknown> = { ...known }
      for (const key of Object.keys(extra)) put(map, key, extra[key])
      return map
    })
  })
)

/**
 * The partial body of a streaming request: `{request_id, new_tokens}`.
 *
 * @example
 * ```ts
 * import { Reply } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * Schema.decodeUnknownSync(Reply.PartialReply)({ request_id: 7, new_tokens: [9, 10] })
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const PartialReply = Schema.Struct({
  request_id: NonNegativeInt,
  new_tokens: TokenIds,
  /**
   * The log probs of `new_tokens`, one each, when the request asked for them (`return_log_probs`;
   * Megatron main's engine sends them, older engines do not).
   */
  new_log_probs: Schema.optionalKey(Schema.Array(Schema.Finite))
})

/**
 * @category models
 * @since 0.1.0
 */
export type PartialReply = typeof PartialReply.Type

/**
 * Decodes a partial body (frame 1 of ENGINE_REPLY_PARTIAL) with plain checks, as
 * {@link decodeReply} does for a full reply; other keys are ignored.
 *
 * @example
 * ```ts
 * import { Reply } from "@mcore-effect/protocol"
 *
 * Reply.decodePartialReply({ request_id: 7, new_tokens: [9, 10] }) // Success
 * ```
 *
 * @category decoding
 * @since 0.1.0
 */
export const decodePartialReply = (map: unknown): Result.Result<PartialReply, ProtocolError> => {
  if (!isPlainObject(map)) {
    return Result.fail(protocolError(
      new MalformedFrame({ messageTag: "EngineReplyPartial", frame: 1, why: `should be a map, got ${describeValue(map)}` })
    ))
  }
  const { request_id, new_tokens } = map
  if (!isNat(request_id) || !natArray(new_tokens)) {
    return Result.fail(protocolError(
      new MalformedFrame({
        messageTag: "EngineReplyPartial",
        frame: 1,
        why: !isNat(request_id)
          ? `request_id should be a non-negative integer, got ${describeValue(request_id)}`
          : `new_tokens should be token ids, got ${describeValue(new_tokens)}`
      })
    ))
  }
  const logProbs = map["new_log_probs"]
  if (logProbs === undefined || logProbs === null) {
    return Result.succeed({ request_id: request_id as number, new_tokens: new_tokens as ReadonlyArray<number> })
  }
  if (!finiteArray(logProbs)) {
    return Result.fail(protocolError(
      new MalformedFrame({
        messageTag: "EngineReplyPartial",
        frame: 1,
        why: `new_log_probs should be a list of numbers, got ${describeValue(logProbs)}`
      })
    ))
  }
  return Result.succeed({
    request_id: request_id as number,
    new_tokens: new_tokens as ReadonlyArray<number>,
    new_log_probs: logProbs
  })
}

/** A list of finite numbers (Python floats; an int is a float there too). */
const finiteArray = (value: unknown): value is ReadonlyArray<number> => {
  if (!Array.isArray(value)) return false
  for (let i = 0; i < value.length; i++) if (typeof value[i] !== "number" || !Number.isFinite(value[i])) return false
  return true
}
