/**
 * The keys a caller may write beyond the sampling parameters' known fields: `extra`'s engine
 * parameters (checked so that Python can set each as an attribute, and msgpack can hold each
 * value), and the "did you mean" for a key that is neither.
 *
 * @since 0.2.0
 * @internal
 */
import * as Result from "effect/Result"
import * as Msgpack from "../Msgpack.ts"
import {
  InvalidSamplingParams,
  NotEncodable,
  type ProtocolError,
  protocolError,
  UnknownSamplingParam
} from "../ProtocolError.ts"
import { closest } from "./closest.ts"
import { describeValue, isPlainObject } from "./values.ts"

/**
 * Extra keys ride along after the known ones, and the Python side sets each as an attribute. So
 * an extra key is an ASCII identifier that is not private (`_x`, and with it `__class__` and
 * `__proto__`). Integer-like keys are excluded too: JavaScript would move them ahead of the known
 * keys and change the frame's bytes.
 */
export const EXTRA_KEY = /^[A-Za-z][A-Za-z0-9_]*$/

/** Names that are methods of the Python `SamplingParams`: setting them would break the engine. */
const PYTHON_METHODS: ReadonlySet<string> = new Set(["serialize", "deserialize", "add_attributes"])

/** Other APIs' names for known fields, for "did you mean" (keys compared without case or `_`). */
const ALIASES: Readonly<Record<string, string>> = {
  max_tokens: "num_tokens_to_generate",
  max_new_tokens: "num_tokens_to_generate",
  max_completion_tokens: "num_tokens_to_generate",
  stop: "stop_words",
  stream: "streaming"
}

export const unknownKey = (key: string, knownKeys: ReadonlyArray<string>): Result.Result<never, ProtocolError> =>
  Result.fail(protocolError(
    new UnknownSamplingParam({ field: key, didYouMean: closest(key, [...knownKeys, "extra"], ALIASES) })
  ))

const fail = (field: string, why: string): Result.Result<never, ProtocolError> =>
  Result.fail(protocolError(new InvalidSamplingParams({ field, why })))

/**
 * Checks `extra` and copies its keys into `out` after the known ones, in input order: a map,
 * no known field, keys Python can set as attributes, values msgpack can hold. `undefined` when
 * every key went in; the failure otherwise (`out` is then thrown away).
 */
export const addExtra = (
  out: Record<string, unknown>,
  extra: unknown,
  known: ReadonlySet<string>
): Result.Result<never, ProtocolError> | undefined => {
  if (!isPlainObject(extra)) {
    return fail("extra", `must be an object of extra engine parameters, got ${describeValue(extra)}`)
  }
  for (const key of Object.keys(extra)) {
    if (known.has(key)) {
      return fail(
        `extra.${key}`,
        "is a SamplingParams field: set it at the top level, where it is typed and checked, not in extra"
      )
    }
    const value = extra[key]
    if (value === undefined) continue
    if (!EXTRA_KEY.test(key) || PYTHON_METHODS.has(key)) {
      return fail(
        `extra.${key}`,
        "is not usable as an extra key: the Python side sets extra keys as attributes, so a key must be " +
          "an ASCII identifier starting with a letter and not a SamplingParams method"
      )
    }
    try {
      Msgpack.encode(value)
    } catch (cause) {
      const ours = cause instanceof Msgpack.NotEncodableException
      return Result.fail(protocolError(
        new NotEncodable({
          what: `sampling_params.extra.${key}`,
          path: ours ? cause.path : "",
          why: ours ? cause.reason : String(cause)
        })
      ))
    }
    out[key] = value
  }
  return undefined
}
