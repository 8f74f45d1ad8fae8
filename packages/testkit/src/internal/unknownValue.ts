/**
 * Small msgpack-encodable JSON-like values: what `SchemaArbitrary` generates for `Schema.Unknown`,
 * `Schema.Any` and object keywords, public as `SchemaArbitrary.unknownValue`.
 *
 * @since 0.1.0
 * @internal
 */
import * as fc from "fast-check"

/** The largest int32: "small" integers are drawn within int32, most of the time. @internal */
export const SMALL_INT = 0x7fff_ffff

/** Map keys: short strings, never `__proto__` (assigning it would set the prototype). @internal */
export const mapKey: fc.Arbitrary<string> = fc
  .oneof(
    { weight: 3, arbitrary: fc.string({ unit: "grapheme-ascii", maxLength: 8 }) },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 4 }) }
  )
  .filter((k) => k !== "__proto__")

const unknownLeaf: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -SMALL_INT - 1, max: SMALL_INT }),
  fc.maxSafeInteger(),
  fc.string({ unit: "grapheme", maxLength: 12 })
)

/**
 * A small msgpack-encodable JSON-like value: `null`, a boolean, a safe integer, a well-formed
 * string, or arrays and string-keyed plain objects of those, nested a few levels. What
 * `Schema.Unknown` and `Schema.Any` generate: such values survive a msgpack round trip unchanged
 * (no floats, no `undefined`, no lone surrogates, no integers beyond 2^53).
 *
 * @example
 * ```ts
 * import { SchemaArbitrary } from "@mcore-effect/testkit/arbitraries"
 * import * as fc from "fast-check"
 *
 * fc.sample(SchemaArbitrary.unknownValue(), 5)
 * ```
 *
 * @since 0.1.0
 */
export const unknownValue = (options?: { readonly maxDepth?: number; readonly maxLength?: number }): fc.Arbitrary<unknown> => {
  const maxDepth = options?.maxDepth ?? 3
  const maxLength = Math.min(options?.maxLength ?? 4, 4)
  const build = (depth: number): fc.Arbitrary<unknown> =>
    depth <= 0
      ? unknownLeaf
      : fc.oneof(
        { weight: 4, arbitrary: unknownLeaf },
        { weight: 1, arbitrary: fc.array(build(depth - 1), { maxLength }) },
        { weight: 1, arbitrary: entriesToObject(fc.uniqueArray(fc.tuple(mapKey, build(depth - 1)), { selector: (e) => e[0], maxLength })) }
      )
  return build(maxDepth)
}

/** A plain object of `entries` (keys unique). @internal */
export const entriesToObject = (entries: fc.Arbitrary<Array<[string, unknown]>>): fc.Arbitrary<Record<string, unknown>> =>
  entries.map((es) => {
    const out: Record<string, unknown> = {}
    for (const [k, v] of es) out[k] = v
    return out
  })
