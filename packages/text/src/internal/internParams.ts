/**
 * One sampling-parameters object per distinct set of parameters (the same keys in the same order,
 * the same values), so that the protocol's cache of validated and encoded parameters, keyed by the
 * object it is handed, answers for every request asking the same thing. `TextGeneration` builds a
 * fresh object per request (the caller's parameters with the termination id, stop words and log
 * probs filled in), which missed that cache every time: each request was validated and encoded
 * again, and while its stream was open it kept its own validated copy, its snapshot and its
 * encoded bytes (PERFORMANCE.md#interned-sampling-parameters-srcinternalinternparamsts).
 *
 * Only parameters whose values are primitives, or `stop_words` as a list of strings, are interned
 * (the protocol caches no others either); the key tells apart every value that could validate
 * differently (`-0`, `NaN`, `null`, `undefined`). An interned object is frozen: it is shared.
 *
 * @since 0.1.0
 * @internal
 */
import type { SamplingParams } from "@mcore-effect/protocol"
import { Lru } from "./Lru.ts"

const interned = new Lru<string, SamplingParams.SamplingParamsInput>(256)

const valueKey = (value: unknown): string | undefined => {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value)
    case "number":
      return Object.is(value, -0) ? "-0" : String(value)
    case "boolean":
      return value ? "t" : "f"
    case "undefined":
      return "u"
    case "bigint":
      return `${value}n`
    default:
      return value === null ? "n" : undefined
  }
}

/** The key of `params`, or `undefined` when a value is not one that can be interned. */
const keyOf = (params: SamplingParams.SamplingParamsInput): string | undefined => {
  let key = ""
  for (const name in params) {
    if (!Object.hasOwn(params, name)) return undefined
    const value = (params as Record<string, unknown>)[name]
    let part: string | undefined
    if (name === "stop_words" && Array.isArray(value)) {
      part = "["
      for (const word of value) {
        if (typeof word !== "string") return undefined
        part += `${JSON.stringify(word)},`
      }
      part += "]"
    } else {
      part = valueKey(value)
      if (part === undefined) return undefined
    }
    key += `${JSON.stringify(name)}:${part};`
  }
  return key
}

/**
 * The interned object with the same parameters as `params` (`params` itself, or a copy when it
 * holds stop words, frozen, the first time), or `params` as it is when it cannot be interned.
 *
 * @since 0.1.0
 * @internal
 */
export const intern = (params: SamplingParams.SamplingParamsInput): SamplingParams.SamplingParamsInput => {
  const key = keyOf(params)
  if (key === undefined) return params
  const known = interned.get(key)
  if (known !== undefined) return known
  // Frozen, and with a list of its own: the list may be the caller's (`samplingParams.stop_words`
  // as given), which must not be frozen under it.
  const held: SamplingParams.SamplingParamsInput = Array.isArray(params.stop_words)
    ? { ...params, stop_words: Object.freeze([...params.stop_words]) }
    : params
  interned.set(key, Object.freeze(held))
  return held
}
