/**
 * The Python `SamplingParams` as it travels in the metadata frame of a submission.
 *
 * The wire map is the Python object's `__dict__`: its field names are snake_case and its key
 * order is the dataclass order, which the metadata frame's bytes depend on. The fields the
 * dataclass declares `float` (`temperature`, `top_p`: the numbers here that are not integers)
 * go out as float64 even when whole (`1.0` as `cb 3f f0 ..`, not `01`), so frame 0 is the Python
 * client's byte for byte; `Messages.Client.encode` does it, from this schema. Extra keys carry no
 * declaration: a whole number there goes out as an integer. {@link make} is the
 * client's path (defaults, the derived field, plain-loop validation); the {@link SamplingParams}
 * Schema describes the same data for the receiving side and for arbitraries.
 *
 * What a caller writes ({@link SamplingParamsInput}) is stricter than the wire map: like Python's
 * `SamplingParams(**kwargs)`, which raises `TypeError` on a keyword it does not declare, it takes
 * only the known fields, so `{ temprature: 0.5 }` or OpenAI's `{ max_tokens: 16 }` is a type
 * error and, from untyped code, an `UnknownSamplingParam` failure. Engine parameters beyond the
 * dataclass (Python's `add_attributes`) are passed on purpose in `extra`, whose keys join the
 * wire map after the known ones.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { InvalidSamplingParams, type ProtocolError, protocolError } from "./ProtocolError.ts"
import { addExtra, EXTRA_KEY, unknownKey } from "./internal/samplingParamKeys.ts"
import { describeValue } from "./internal/values.ts"

const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** The two rules across fields, which every release's `SamplingParams` has. */
const crossFieldProblem = (p: {
  readonly num_tokens_to_generate: number | null
  readonly num_tokens_total: number | null
  readonly return_prompt_top_n_logprobs: boolean
  readonly top_n_logprobs: number
  readonly skip_prompt_log_probs: boolean
}): string | undefined =>
  p.num_tokens_to_generate !== null && p.num_tokens_total !== null
    ? "num_tokens_to_generate and num_tokens_total cannot both be set"
    : p.return_prompt_top_n_logprobs !== (p.top_n_logprobs > 0 && !p.skip_prompt_log_probs)
    ? "return_prompt_top_n_logprobs must equal top_n_logprobs > 0 && !skip_prompt_log_probs"
    : undefined

/**
 * The known fields, in wire order.
 *
 * @example
 * ```ts
 * import { SamplingParams } from "@mcore-effect/protocol"
 *
 * Object.keys(SamplingParams.KnownFields.fields) // ["temperature", "top_k", ..., "do_kv_handoff"]
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const KnownFields = Schema.Struct({
  temperature: Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0)),
  top_k: NonNegativeInt,
  top_p: Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 })),
  return_log_probs: Schema.Boolean,
  skip_prompt_log_probs: Schema.Boolean,
  return_segments: Schema.Boolean,
  num_tokens_to_generate: Schema.NullOr(NonNegativeInt),
  num_tokens_total: Schema.NullOr(NonNegativeInt),
  termination_id: Schema.NullOr(Schema.Int),
  top_n_logprobs: NonNegativeInt,
  return_prompt_top_n_logprobs: Schema.Boolean,
  add_BOS: Schema.Boolean,
  stop_words: Schema.NullOr(Schema.Array(Schema.String)),
  detokenize_stop_sequence: Schema.Boolean,
  return_prompt_tokens: Schema.Boolean,
  streaming: Schema.Boolean,
  streaming_interval: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  do_kv_handoff: Schema.Boolean
})

/**
 * The sampling parameters map: the known fields plus any extra keys (Python identifiers, values of
 * any msgpack-encodable kind). For decoding on the receiving side: it also checks the two
 * cross-field rules (`num_tokens_to_generate` and `num_tokens_total` never both set;
 * `return_prompt_top_n_logprobs` equal to its derivation). Keys that are not identifiers are not
 * extra keys and are dropped by decoding.
 *
 * @example
 * ```ts
 * import { SamplingParams } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * const decoded = Schema.decodeUnknownSync(SamplingParams.SamplingParams)({
 *   ...SamplingParams.defaults,
 *   seed: 7
 * })
 * decoded.seed // 7
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const SamplingParams = Schema.StructWithRest(KnownFields, [
  Schema.Record(Schema.String.check(Schema.isPattern(EXTRA_KEY)), Schema.Unknown)
]).check(Schema.makeFilter(crossFieldProblem))

/**
 * The sampling parameters map of a Megatron-LM release whose `SamplingParams` has only the first
 * `count` known fields (each release added fields at the end): the same rules, those fields
 * required, any other key an extra one.
 *
 * @example
 * ```ts
 * import { SamplingParams } from "@mcore-effect/protocol"
 *
 * const v017 = SamplingParams.withKnownFields(14) // up to detokenize_stop_sequence
 * ```
 *
 * @category schemas
 * @since 0.2.0
 */
export const withKnownFields = (count: number): Schema.Codec<SamplingParams> => {
  const fields = Object.fromEntries(Object.entries(KnownFields.fields).slice(0, count))
  return Schema.StructWithRest(Schema.Struct(fields), [
    Schema.Record(Schema.String.check(Schema.isPattern(EXTRA_KEY)), Schema.Unknown)
  ]).check(Schema.makeFilter((p) => crossFieldProblem(p as unknown as SamplingParams))) as unknown as Schema.Codec<SamplingParams>
}

/**
 * @category models
 * @since 0.1.0
 */
export type SamplingParams = typeof SamplingParams.Type

type Known = typeof KnownFields.Type

/**
 * What {@link make} takes: any subset of the known fields (`undefined` means "the default"), and
 * nothing else at the top level, so a misspelt or foreign key (`temprature`, `max_tokens`) does not
 * compile, and from untyped code fails with `UnknownSamplingParam` naming the field it resembles.
 *
 * `extra` holds engine parameters the Python dataclass does not declare, passed on purpose (what
 * Python's `SamplingParams.add_attributes` does): its keys go on the wire after the known ones, in
 * the order written, and the engine sets each as an attribute. So an extra key must be an ASCII
 * identifier starting with a letter, not a `SamplingParams` method, and not a known field (set
 * that at the top level, where it is typed and checked); its value may be anything msgpack can
 * hold, and a whole number there goes out as an integer (only `temperature` and `top_p` are
 * declared float). An `undefined` extra value is left out.
 *
 * @example
 * ```ts
 * import { SamplingParams } from "@mcore-effect/protocol"
 *
 * const input: SamplingParams.SamplingParamsInput = {
 *   temperature: 0.7,
 *   num_tokens_to_generate: 64,
 *   extra: { min_length: 4, eod_id: 153 } // engine-specific, on purpose
 * }
 * SamplingParams.make(input) // wire map: the 18 known fields, then min_length, eod_id
 *
 * // @ts-expect-error: a typo does not compile
 * SamplingParams.make({ temprature: 0.5 }) // and fails (UnknownSamplingParam, did you mean temperature?)
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export type SamplingParamsInput =
  & { readonly [K in keyof Known]?: Known[K] | undefined }
  & {
    /** Engine parameters beyond the known fields, sent on purpose (see above). */
    readonly extra?: Readonly<Record<string, unknown>> | undefined
  }

/**
 * The Python defaults, in wire order (frozen; {@link make} returns copies).
 *
 * @example
 * ```ts
 * import { SamplingParams } from "@mcore-effect/protocol"
 *
 * SamplingParams.defaults.streaming_interval // 1
 * ```
 *
 * @category constants
 * @since 0.1.0
 */
export const defaults: SamplingParams = Object.freeze({
  temperature: 1.0,
  top_k: 0,
  top_p: 0.0,
  return_log_probs: false,
  skip_prompt_log_probs: false,
  return_segments: false,
  num_tokens_to_generate: null,
  num_tokens_total: null,
  termination_id: null,
  top_n_logprobs: 0,
  return_prompt_top_n_logprobs: false,
  add_BOS: false,
  stop_words: null,
  detokenize_stop_sequence: false,
  return_prompt_tokens: false,
  streaming: false,
  streaming_interval: 1,
  do_kv_handoff: false
})

const KNOWN_KEYS: ReadonlyArray<string> = Object.keys(defaults)
const KNOWN: ReadonlySet<string> = new Set(KNOWN_KEYS)

const fail = (field: string, why: string): Result.Result<never, ProtocolError> =>
  Result.fail(protocolError(new InvalidSamplingParams({ field, why })))

const isNonNegativeInt = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0

/**
 * Builds the wire map from user input: fills the Python defaults, derives
 * `return_prompt_top_n_logprobs`, validates every known field (plain checks, no Schema pass),
 * refuses any other top-level key, and merges `extra` after the known keys once its keys are
 * checked and its values are msgpack-encodable. The result is a fresh object whose keys are in
 * wire order (known keys, then `extra`'s keys in input order); the input is never mutated.
 * `undefined` means "not given": a known field takes its default, an extra key is left out.
 *
 * Fails with `UnknownSamplingParam` (a top-level key that is not a field, with the field it
 * resembles), `InvalidSamplingParams` (naming the field, `extra.<key>` for an extra key that
 * collides with a known field or that Python cannot set), or `NotEncodable` (an extra value).
 *
 * @example
 * ```ts
 * import { SamplingParams } from "@mcore-effect/protocol"
 * import { Result } from "effect"
 *
 * const params = SamplingParams.make({ temperature: 0.7, top_p: 0.9, num_tokens_to_generate: 32 })
 * if (Result.isSuccess(params)) params.success.streaming_interval // 1
 *
 * SamplingParams.make({ num_tokens_to_generate: 8, num_tokens_total: 64 }) // Failure: InvalidSamplingParams
 * SamplingParams.make({ extra: { seed: 7 } }) // Success: the known fields, then seed: 7
 * SamplingParams.make({ extra: { temperature: 0 } }) // Failure: a known field goes at the top level
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (input?: SamplingParamsInput | null): Result.Result<SamplingParams, ProtocolError> => {
  if (input === undefined || input === null) return Result.succeed({ ...defaults })
  if (typeof input !== "object" || Array.isArray(input)) {
    return fail("sampling_params", `must be an object, got ${describeValue(input)}`)
  }
  const i = input as Record<string, unknown>
  // One pass over the caller's keys, first, so a typo is named before any check of what it left
  // at its default. (Known keys are read by name below; `extra`'s keys are merged at the end.)
  for (const key of Object.keys(i)) {
    if (!KNOWN.has(key) && key !== "extra") return unknownKey(key, KNOWN_KEYS)
  }
  // `undefined` means "not given"; an explicit null is kept (and refused where null is not allowed).
  const get = (key: keyof Known): unknown => {
    const v = i[key]
    return v === undefined ? defaults[key] : v
  }

  const temperature = get("temperature")
  if (typeof temperature !== "number" || !(temperature >= 0) || temperature === Infinity) {
    return fail("temperature", `must be a finite number >= 0, got ${describeValue(temperature)}`)
  }
  const top_k = get("top_k")
  if (!isNonNegativeInt(top_k)) return fail("top_k", `must be a non-negative integer, got ${describeValue(top_k)}`)
  const top_p = get("top_p")
  if (typeof top_p !== "number" || !(top_p >= 0 && top_p <= 1)) {
    return fail("top_p", `must be a number in [0, 1], got ${describeValue(top_p)}`)
  }

  const return_log_probs = get("return_log_probs")
  if (typeof return_log_probs !== "boolean") return notBoolean("return_log_probs", return_log_probs)
  const skip_prompt_log_probs = get("skip_prompt_log_probs")
  if (typeof skip_prompt_log_probs !== "boolean") return notBoolean("skip_prompt_log_probs", skip_prompt_log_probs)
  const return_segments = get("return_segments")
  if (typeof return_segments !== "boolean") return notBoolean("return_segments", return_segments)

  const num_tokens_to_generate = get("num_tokens_to_generate")
  if (num_tokens_to_generate !== null && !isNonNegativeInt(num_tokens_to_generate)) {
    return fail(
      "num_tokens_to_generate",
      `must be a non-negative integer or null, got ${describeValue(num_tokens_to_generate)}`
    )
  }
  const num_tokens_total = get("num_tokens_total")
  if (num_tokens_total !== null && !isNonNegativeInt(num_tokens_total)) {
    return fail("num_tokens_total", `must be a non-negative integer or null, got ${describeValue(num_tokens_total)}`)
  }
  if (num_tokens_to_generate !== null && num_tokens_total !== null) {
    return fail("num_tokens_total", "cannot be set together with num_tokens_to_generate")
  }
  const termination_id = get("termination_id")
  if (termination_id !== null && !Number.isSafeInteger(termination_id)) {
    return fail("termination_id", `must be an integer or null, got ${describeValue(termination_id)}`)
  }
  const top_n_logprobs = get("top_n_logprobs")
  if (!isNonNegativeInt(top_n_logprobs)) {
    return fail("top_n_logprobs", `must be a non-negative integer, got ${describeValue(top_n_logprobs)}`)
  }
  const derived = top_n_logprobs > 0 && !skip_prompt_log_probs
  const given = i.return_prompt_top_n_logprobs
  if (given !== undefined && given !== derived) {
    return fail(
      "return_prompt_top_n_logprobs",
      typeof given === "boolean"
        ? `is derived as top_n_logprobs > 0 && !skip_prompt_log_probs (${derived}); ${given} contradicts it`
        : `must be a boolean, got ${describeValue(given)}`
    )
  }
  const add_BOS = get("add_BOS")
  if (typeof add_BOS !== "boolean") return notBoolean("add_BOS", add_BOS)

  const stopInput = get("stop_words")
  let stop_words: ReadonlyArray<string> | null = null
  if (stopInput !== null) {
    if (!Array.isArray(stopInput)) {
      return fail("stop_words", `must be null or an array of strings, got ${describeValue(stopInput)}`)
    }
    for (let k = 0; k < stopInput.length; k++) {
      if (typeof stopInput[k] !== "string") {
        return fail("stop_words", `must be null or an array of strings; element ${k} is ${describeValue(stopInput[k])}`)
      }
    }
    // A copy, so later changes to the caller's array cannot reach a built request.
    stop_words = stopInput.slice() as Array<string>
  }
  const detokenize_stop_sequence = get("detokenize_stop_sequence")
  if (typeof detokenize_stop_sequence !== "boolean") {
    return notBoolean("detokenize_stop_sequence", detokenize_stop_sequence)
  }
  const return_prompt_tokens = get("return_prompt_tokens")
  if (typeof return_prompt_tokens !== "boolean") return notBoolean("return_prompt_tokens", return_prompt_tokens)
  const streaming = get("streaming")
  if (typeof streaming !== "boolean") return notBoolean("streaming", streaming)
  const streaming_interval = get("streaming_interval")
  if (!Number.isSafeInteger(streaming_interval) || (streaming_interval as number) < 1) {
    return fail("streaming_interval", `must be an integer >= 1, got ${describeValue(streaming_interval)}`)
  }
  const do_kv_handoff = get("do_kv_handoff")
  if (typeof do_kv_handoff !== "boolean") return notBoolean("do_kv_handoff", do_kv_handoff)

  // Built as one literal so the key order is the wire order.
  const out: Record<string, unknown> = {
    temperature,
    top_k,
    top_p,
    return_log_probs,
    skip_prompt_log_probs,
    return_segments,
    num_tokens_to_generate,
    num_tokens_total,
    termination_id,
    top_n_logprobs,
    return_prompt_top_n_logprobs: derived,
    add_BOS,
    stop_words,
    detokenize_stop_sequence,
    return_prompt_tokens,
    streaming,
    streaming_interval,
    do_kv_handoff
  }

  if (i.extra !== undefined) {
    const refused = addExtra(out, i.extra, KNOWN)
    if (refused !== undefined) return refused
  }
  return Result.succeed(out as SamplingParams)
}

const notBoolean = (field: string, value: unknown): Result.Result<never, ProtocolError> =>
  fail(field, `must be a boolean, got ${describeValue(value)}`)

/**
 * The same parameters with `streaming` forced on, as a stream submission sends them (the Python
 * client sets it in place; here the input is left as it was).
 *
 * @example
 * ```ts
 * import { SamplingParams } from "@mcore-effect/protocol"
 *
 * SamplingParams.withStreaming(SamplingParams.defaults).streaming // true
 * ```
 *
 * @category combinators
 * @since 0.1.0
 */
export const withStreaming = (params: SamplingParams): SamplingParams =>
  // Spreading keeps the key order: `streaming` is already in its wire position.
  params.streaming ? params : { ...params, streaming: true }

/**
 * The input that {@link make} turns back into this wire map: the known fields as they are, every
 * other key moved into `extra` (in wire order). For a map that came off the wire or out of a
 * trace (a replay, a coordinator forwarding what it received), where extra keys sit at the top
 * level as Python's `__dict__` has them.
 *
 * @example
 * ```ts
 * import { SamplingParams } from "@mcore-effect/protocol"
 *
 * const input = SamplingParams.toInput({ ...SamplingParams.defaults, seed: 7 })
 * input.extra // { seed: 7 }
 * ```
 *
 * @category converting
 * @since 0.1.0
 */
export const toInput = (params: SamplingParams): SamplingParamsInput => {
  const known: Record<string, unknown> = {}
  let extra: Record<string, unknown> | undefined
  for (const key of Object.keys(params)) {
    if (KNOWN.has(key)) known[key] = params[key]
    else (extra ??= {})[key] = params[key]
  }
  return extra === undefined ? known : { ...known, extra }
}
