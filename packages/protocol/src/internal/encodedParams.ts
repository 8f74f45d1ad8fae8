/**
 * Sampling parameters validated and encoded once per parameters object: an application that
 * reuses one object request after request (a rollout, a server's defaults) pays for
 * `SamplingParams.make` and for the map's msgpack once, not per request.
 *
 * The cache is keyed by the caller's object and holds a snapshot of its own keys and values; a
 * hit needs the object's current keys, in order, and values to be the snapshot's (`===`; the
 * `stop_words` array element by element), so a changed object is validated and encoded afresh
 * and never reuses stale bytes. Only objects whose values are primitives (and `stop_words`, an
 * array of primitives) are cached: a nested extra value could change unseen. The validated value
 * handed out is frozen (with its `stop_words`), and its bytes are `Msgpack.remember`ed, so
 * `Frames` writes them as they are.
 *
 * Why: PERFORMANCE.md#sampling-parameters-encoded-once-per-parameters-object.
 *
 * @since 0.1.0
 * @internal
 */
import * as Result from "effect/Result"
import { floatKeysOf } from "./wireNumbers.ts"
import * as Msgpack from "../Msgpack.ts"
import type { ProtocolError } from "../ProtocolError.ts"
import * as SamplingParams from "../SamplingParams.ts"

interface Entry {
  readonly keys: ReadonlyArray<string>
  readonly values: ReadonlyArray<unknown>
  /** A copy of `stop_words` when it was an array, to compare element by element. */
  readonly stopWords: ReadonlyArray<unknown> | undefined
  /** The answers, once made (the `Result` too: a hit allocates nothing). */
  plain: Result.Success<SamplingParams.SamplingParams, ProtocolError> | undefined
  streaming: Result.Success<SamplingParams.SamplingParams, ProtocolError> | undefined
}

const byInput = new WeakMap<object, Entry>()

const isPrimitive = (v: unknown): boolean => v === null || (typeof v !== "object" && typeof v !== "function")

/** The snapshot of a cacheable input, or `undefined` when it is not cacheable. */
const snapshot = (input: object): Entry | undefined => {
  const proto = Object.getPrototypeOf(input)
  if (proto !== Object.prototype && proto !== null) return undefined
  const keys = Object.keys(input)
  const values: Array<unknown> = []
  let stopWords: Array<unknown> | undefined
  for (const key of keys) {
    const v = (input as Record<string, unknown>)[key]
    if (!isPrimitive(v)) {
      if (key !== "stop_words" || !Array.isArray(v) || !v.every(isPrimitive)) return undefined
      stopWords = v.slice()
    }
    values.push(v)
  }
  return { keys, values, stopWords, plain: undefined, streaming: undefined }
}

/** True when `input` still has exactly the snapshot's keys, in order, and values. */
const matches = (entry: Entry, input: object): boolean => {
  const { keys, values } = entry
  let k = 0
  for (const key in input) {
    if (!Object.hasOwn(input, key)) return false
    if (k >= keys.length || keys[k] !== key) return false
    const v = (input as Record<string, unknown>)[key]
    if (v !== values[k]) return false
    k++
  }
  if (k !== keys.length) return false
  const stopWords = entry.stopWords
  if (stopWords !== undefined) {
    const now = (input as Record<string, unknown>).stop_words as ReadonlyArray<unknown>
    if (now.length !== stopWords.length) return false
    for (let j = 0; j < now.length; j++) if (now[j] !== stopWords[j]) return false
  }
  return true
}

/** The float fields, as the schema declares them and as `Frames` marks them when it encodes. */
const floatFields: ReadonlySet<string> = floatKeysOf(SamplingParams.SamplingParams.ast) ?? new Set()

/** The frozen value and its bytes, as `Frames` would write it (float fields as float64). */
const freeze = (params: SamplingParams.SamplingParams): SamplingParams.SamplingParams => {
  if (Array.isArray(params.stop_words)) Object.freeze(params.stop_words)
  const frozen = Object.freeze(params)
  Msgpack.remember(frozen, Msgpack.encode(new Msgpack.FloatFields(frozen, floatFields)))
  return frozen
}

const build = (
  input: SamplingParams.SamplingParamsInput | null | undefined,
  streaming: boolean
): Result.Result<SamplingParams.SamplingParams, ProtocolError> => {
  const made = SamplingParams.make(input)
  if (Result.isFailure(made) || !streaming) return made
  return Result.succeed(SamplingParams.withStreaming(made.success))
}

const cached = (
  input: SamplingParams.SamplingParamsInput | null | undefined,
  streaming: boolean
): Result.Result<SamplingParams.SamplingParams, ProtocolError> => {
  const made = build(input, streaming)
  if (Result.isFailure(made)) return made
  // A fresh object from `make` (or `withStreaming`'s copy of it): ours to freeze.
  return Result.succeed(freeze(made.success))
}

const defaultPlain = cached(undefined, false)
const defaultStreaming = cached(undefined, true)

/**
 * `SamplingParams.make(input)` (with `streaming` forced on for a stream), from the cache when
 * `input` is an object seen before and unchanged since. The value is frozen; its encoding is
 * remembered for `Frames`.
 *
 * @since 0.1.0
 * @internal
 */
export const make = (
  input: SamplingParams.SamplingParamsInput | null | undefined,
  streaming: boolean
): Result.Result<SamplingParams.SamplingParams, ProtocolError> => {
  if (input === undefined || input === null) return streaming ? defaultStreaming : defaultPlain
  if (typeof input !== "object") return build(input, streaming)
  let entry = byInput.get(input)
  if (entry === undefined || !matches(entry, input)) {
    entry = snapshot(input)
    if (entry === undefined) {
      byInput.delete(input)
      return build(input, streaming)
    }
    byInput.set(input, entry)
  }
  const hit = streaming ? entry.streaming : entry.plain
  if (hit !== undefined) return hit
  const made = cached(input, streaming)
  if (Result.isSuccess(made)) {
    if (streaming) entry.streaming = made
    else entry.plain = made
  }
  return made
}
