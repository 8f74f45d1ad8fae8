/**
 * The one error type of the protocol package. Callers match on `reason._tag`; each reason is a
 * small tagged class that says exactly what was wrong, and `message` is derived from it.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A header value that is not in the protocol's table.
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownHeader extends Schema.Class<UnknownHeader>("@mcore-effect/protocol/UnknownHeader")({
  _tag: Schema.tag("UnknownHeader"),
  value: Schema.Unknown
}) {
  get message(): string {
    return `unknown header ${formatValue(this.value)}`
  }
}

/**
 * A message with the wrong number of frames for its header (SUBMIT is exactly five, the KV
 * handoff exactly three, a reply exactly two).
 *
 * @category errors
 * @since 0.1.0
 */
export class ArityMismatch extends Schema.Class<ArityMismatch>("@mcore-effect/protocol/ArityMismatch")({
  _tag: Schema.tag("ArityMismatch"),
  messageTag: Schema.String,
  expected: Schema.Number,
  actual: Schema.Number
}) {
  get message(): string {
    return `${this.messageTag} takes ${this.expected} frame(s), got ${this.actual}`
  }
}

/**
 * A frame that is not what its position in the message requires.
 *
 * @category errors
 * @since 0.1.0
 */
export class MalformedFrame extends Schema.Class<MalformedFrame>("@mcore-effect/protocol/MalformedFrame")({
  _tag: Schema.tag("MalformedFrame"),
  messageTag: Schema.NullOr(Schema.String),
  frame: Schema.Number,
  why: Schema.String
}) {
  get message(): string {
    return `${this.messageTag ?? "message"} frame ${this.frame}: ${this.why}`
  }
}

/**
 * A prompt that is neither a string nor a list of non-negative safe-integer token ids.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidPrompt extends Schema.Class<InvalidPrompt>("@mcore-effect/protocol/InvalidPrompt")({
  _tag: Schema.tag("InvalidPrompt"),
  why: Schema.String
}) {
  get message(): string {
    return `invalid prompt: ${this.why}`
  }
}

/**
 * Sampling parameters that a Python `SamplingParams` would refuse, or that contradict each other.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidSamplingParams extends Schema.Class<InvalidSamplingParams>(
  "@mcore-effect/protocol/InvalidSamplingParams"
)({
  _tag: Schema.tag("InvalidSamplingParams"),
  field: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `invalid sampling params: ${this.field} ${this.why}`
  }
}

/**
 * A sampling-parameter key that is not a field of the Python `SamplingParams` (`temprature`,
 * OpenAI's `max_tokens`), refused before anything is sent, as Python's `SamplingParams(**kwargs)`
 * refuses it. `didYouMean` is the known field it resembles, when one does. An engine parameter
 * meant on purpose goes in `extra` (see `SamplingParams.SamplingParamsInput`).
 *
 * @example
 * ```ts
 * import { SamplingParams } from "@mcore-effect/protocol"
 * import { Result } from "effect"
 *
 * const made = SamplingParams.make(JSON.parse('{"temprature": 0.5}'))
 * if (Result.isFailure(made) && made.failure.reason._tag === "UnknownSamplingParam") {
 *   made.failure.reason.didYouMean // "temperature"
 * }
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class UnknownSamplingParam extends Schema.Class<UnknownSamplingParam>(
  "@mcore-effect/protocol/UnknownSamplingParam"
)({
  _tag: Schema.tag("UnknownSamplingParam"),
  field: Schema.String,
  didYouMean: Schema.NullOr(Schema.String)
}) {
  get message(): string {
    const hint = this.didYouMean === null ? "" : ` (did you mean ${this.didYouMean}?)`
    return `invalid sampling params: ${formatValue(this.field)} is not a SamplingParams field${hint}; ` +
      "to send an extra engine parameter on purpose, put it in `extra`"
  }
}

/**
 * A `multi_modal_data` key other than `image` and `video` (audio included).
 *
 * @category errors
 * @since 0.1.0
 */
export class UnsupportedModality extends Schema.Class<UnsupportedModality>(
  "@mcore-effect/protocol/UnsupportedModality"
)({
  _tag: Schema.tag("UnsupportedModality"),
  modality: Schema.String
}) {
  get message(): string {
    return `unsupported modality "${this.modality}": only image and video are supported`
  }
}

/**
 * Media whose shape is not one the engines accept (bytes, a list of bytes, or a tensor map).
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidMedia extends Schema.Class<InvalidMedia>("@mcore-effect/protocol/InvalidMedia")({
  _tag: Schema.tag("InvalidMedia"),
  modality: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `invalid ${this.modality} media: ${this.why}`
  }
}

/**
 * A KV handoff whose `kv_meta` is not a map or whose `src_block_ids` are not block ids.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidKvHandoff extends Schema.Class<InvalidKvHandoff>("@mcore-effect/protocol/InvalidKvHandoff")({
  _tag: Schema.tag("InvalidKvHandoff"),
  field: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `invalid KV handoff: ${this.field} ${this.why}`
  }
}

/**
 * A value with no msgpack form a Python peer can read (a function, a symbol, a class instance,
 * a cycle, an integer beyond 64 bits).
 *
 * @category errors
 * @since 0.1.0
 */
export class NotEncodable extends Schema.Class<NotEncodable>("@mcore-effect/protocol/NotEncodable")({
  _tag: Schema.tag("NotEncodable"),
  what: Schema.String,
  path: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `${this.what} is not msgpack-encodable: ${this.why}${this.path === "" ? "" : ` at ${this.path}`}`
  }
}

/**
 * Something the configured protocol dialect cannot carry (streaming on Megatron-LM core_v0.19,
 * media on PR 6497, ...): refused before anything is sent, never silently dropped, since the
 * coordinator of that dialect would either die on the message or ignore what it asks for.
 *
 * @category errors
 * @since 0.2.0
 */
export class UnsupportedByDialect extends Schema.Class<UnsupportedByDialect>(
  "@mcore-effect/protocol/UnsupportedByDialect"
)({
  _tag: Schema.tag("UnsupportedByDialect"),
  dialect: Schema.String,
  feature: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `the ${this.dialect} protocol does not support ${this.feature}: ${this.why}`
  }
}

/**
 * Every reason a protocol operation can fail.
 *
 * @category errors
 * @since 0.1.0
 */
export const ProtocolErrorReason = Schema.Union([
  UnknownHeader,
  ArityMismatch,
  MalformedFrame,
  InvalidPrompt,
  InvalidSamplingParams,
  UnknownSamplingParam,
  UnsupportedModality,
  InvalidMedia,
  InvalidKvHandoff,
  NotEncodable,
  UnsupportedByDialect
])

/**
 * @category errors
 * @since 0.1.0
 */
export type ProtocolErrorReason = typeof ProtocolErrorReason.Type

/**
 * A failure to build or to read a protocol message. Match on `reason._tag`.
 *
 * @example
 * ```ts
 * import { Messages, ProtocolError } from "@mcore-effect/protocol"
 * import { Result } from "effect"
 *
 * const decoded = Messages.Coordinator.decode([new Uint8Array([0x91, 0x63])])
 * if (Result.isFailure(decoded) && decoded.failure.reason._tag === "UnknownHeader") {
 *   console.log(decoded.failure.message) // "UnknownHeader: unknown header 99"
 * }
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class ProtocolError extends Schema.TaggedError<ProtocolError>("@mcore-effect/protocol/ProtocolError")(
  "ProtocolError",
  { reason: ProtocolErrorReason }
) {
  override get message(): string {
    return `${this.reason._tag}: ${this.reason.message}`
  }
}

/**
 * Wraps a reason in a {@link ProtocolError}.
 *
 * @category constructors
 * @since 0.1.0
 */
export const protocolError = (reason: ProtocolErrorReason): ProtocolError => new ProtocolError({ reason })

/**
 * A received value, shown in a message: JSON-like, and short whatever arrived (a hostile peer can
 * send a megabyte, or arrays nested hundreds deep, as a header). Never throws.
 */
const formatValue = (value: unknown): string => {
  const text = preview(value, 0)
  return text.length > 100 ? `${text.slice(0, 97)}...` : text
}

const preview = (value: unknown, depth: number): string => {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}...` : value)
    case "bigint":
      return `${value}`
    case "object": {
      if (value === null) return "null"
      if (value instanceof Uint8Array) return `<${value.byteLength} bytes>`
      const items = Array.isArray(value) ? value : Object.entries(value)
      if (depth >= 3) return Array.isArray(value) ? "[...]" : "{...}"
      const shown = items.slice(0, 6).map((item) =>
        Array.isArray(value) ? preview(item, depth + 1) : `${JSON.stringify(item[0])}:${preview(item[1], depth + 1)}`
      )
      if (items.length > 6) shown.push("...")
      return Array.isArray(value) ? `[${shown.join(",")}]` : `{${shown.join(",")}}`
    }
    default:
      return String(value)
  }
}
