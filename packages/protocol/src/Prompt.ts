/**
 * The prompt of a submission: a string, or token ids.
 *
 * The coordinator never decodes the prompt frame (it forwards it), so the client is the only
 * place that can refuse a bad one before an engine trips on it. Validation is one plain loop
 * over the ids; typed arrays are checked by what their element type can hold and are sent as
 * msgpack int arrays by the encoder, without a copy to a plain array.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Msgpack from "./Msgpack.ts"
import { InvalidPrompt, type ProtocolError, protocolError } from "./ProtocolError.ts"
import { describeValue } from "./internal/values.ts"

/**
 * Token ids: a plain array, or an integer typed array whose elements are ids (`Float64Array`
 * holds every safe integer exactly, so it is accepted too).
 *
 * @category models
 * @since 0.1.0
 */
export type TokenIds =
  | ReadonlyArray<number>
  | Int32Array
  | Uint32Array
  | Int16Array
  | Uint16Array
  | Float64Array

/**
 * @category models
 * @since 0.1.0
 */
export type Prompt = string | TokenIds

/**
 * True for token ids, false for a text prompt.
 *
 * @example
 * ```ts
 * import { Prompt } from "@mcore-effect/protocol"
 *
 * Prompt.isTokenIds([1, 2, 3]) // true
 * Prompt.isTokenIds("Hello") // false
 * ```
 *
 * @category guards
 * @since 0.1.0
 */
export const isTokenIds = (prompt: Prompt): prompt is TokenIds => typeof prompt !== "string"

const isTokenArray = (view: ArrayBufferView): view is TokenIds & ArrayBufferView =>
  view instanceof Int32Array || view instanceof Uint32Array || view instanceof Int16Array ||
  view instanceof Uint16Array || view instanceof Float64Array

/** A local constant, so the hot loop compares against an immediate rather than loading `Number.MAX_SAFE_INTEGER`. */
const MAX_SAFE = 9007199254740991

const fail = (why: string): Result.Result<never, ProtocolError> =>
  Result.fail(protocolError(new InvalidPrompt({ why })))

const badId = (index: number, value: unknown): Result.Result<never, ProtocolError> =>
  fail(`token id at index ${index} is ${describeValue(value, 20)}; token ids are non-negative safe integers`)

const EMPTY =
  "it is empty; a request needs at least one character or token id (an engine has nothing to prefill otherwise)"

/**
 * Checks a prompt: a non-empty string, or non-empty token ids that are all non-negative safe
 * integers (the first bad one is reported with its index and value). An empty prompt (`""`, `[]`,
 * an empty typed array) is refused before anything is sent: an engine would have nothing to
 * prefill and no last token to generate from. A `Uint8Array` is refused (it is bytes, not token
 * ids), as is any other typed array, a nested array, or anything else. The prompt is returned as
 * given: typed arrays stay typed arrays.
 *
 * @example
 * ```ts
 * import { Prompt } from "@mcore-effect/protocol"
 *
 * Prompt.validate("Hello, world") // Success
 * Prompt.validate(new Int32Array([1, 2, 3])) // Success, the same Int32Array
 * Prompt.validate([1, -1]) // Failure: InvalidPrompt, "token id at index 1 is -1; ..."
 * Prompt.validate("") // Failure: InvalidPrompt, "it is empty; ..."
 * ```
 *
 * @category validation
 * @since 0.1.0
 */
export const validate = (input: unknown): Result.Result<Prompt, ProtocolError> => {
  if (typeof input === "string") return input.length === 0 ? fail(EMPTY) : Result.succeed(input)
  if (Array.isArray(input)) {
    const n = input.length
    if (n === 0) return fail(EMPTY)
    for (let i = 0; i < n; i++) {
      const v = input[i]
      // One comparison chain per id: rejects non-numbers, NaN, negatives, fractions and > 2^53 - 1.
      if (!(typeof v === "number" && v >= 0 && v <= MAX_SAFE && Math.floor(v) === v)) {
        return badId(i, v)
      }
    }
    return Result.succeed(input as ReadonlyArray<number>)
  }
  if (ArrayBuffer.isView(input)) {
    if (input.byteLength === 0 && isTokenArray(input)) return fail(EMPTY)
    // Unsigned element types cannot hold a bad id: nothing to scan.
    if (input instanceof Uint32Array || input instanceof Uint16Array) return Result.succeed(input)
    if (input instanceof Int32Array || input instanceof Int16Array) {
      const n = input.length
      for (let i = 0; i < n; i++) {
        if (input[i]! < 0) return badId(i, input[i])
      }
      return Result.succeed(input)
    }
    if (input instanceof Float64Array) {
      const n = input.length
      for (let i = 0; i < n; i++) {
        const v = input[i]!
        if (!(v >= 0 && v <= MAX_SAFE && Math.floor(v) === v)) return badId(i, v)
      }
      return Result.succeed(input)
    }
    if (input instanceof Uint8Array) {
      return fail(
        "a Uint8Array is bytes, not token ids (it would be sent as msgpack bin); " +
          "pass an array, Int32Array, Uint32Array, Int16Array, Uint16Array or Float64Array"
      )
    }
    return fail(
      `a ${input.constructor.name} cannot hold token ids; ` +
        "pass an array, Int32Array, Uint32Array, Int16Array, Uint16Array or Float64Array"
    )
  }
  return fail(`a prompt is a string or an array of token ids, got ${describeValue(input, 20)}`)
}

/**
 * Checks a prompt as {@link validate} does and encodes its frame (a msgpack string, or int
 * array), in one pass over token ids held in a plain array: the same verdict, the same error and
 * the same bytes as validating and then encoding, for half the walks over a long prompt. Typed
 * arrays and text are validated, then encoded.
 *
 * @example
 * ```ts
 * import { Prompt } from "@mcore-effect/protocol"
 *
 * Prompt.frame([1, 2, 3]) // Success: Raw(93 01 02 03)
 * Prompt.frame([1, -1]) // Failure: InvalidPrompt, "token id at index 1 is -1; ..."
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const frame = (input: unknown): Result.Result<Msgpack.Raw, ProtocolError> => {
  if (Array.isArray(input) && input.length > 0) {
    const bytes = Msgpack.encodeTokenIds(input)
    return typeof bytes === "number" ? badId(bytes, input[bytes]) : Result.succeed(new Msgpack.Raw(bytes))
  }
  const valid = validate(input)
  return Result.isFailure(valid) ? Result.fail(valid.failure) : Result.succeed(new Msgpack.Raw(Msgpack.encode(valid.success)))
}

/**
 * The prompt frame as the receiving side decodes it: a string, or an array of non-negative
 * integers (msgpack has no typed arrays; whatever the client held arrives as an array).
 *
 * @example
 * ```ts
 * import { Prompt } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * Schema.decodeUnknownSync(Prompt.PromptWire)([1, 2, 3]) // [1, 2, 3]
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const PromptWire = Schema.Union([Schema.String, Schema.Array(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))])

/**
 * @category models
 * @since 0.1.0
 */
export type PromptWire = typeof PromptWire.Type
