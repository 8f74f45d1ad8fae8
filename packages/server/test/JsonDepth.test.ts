/**
 * The nesting limit's two readings agree: the scan of the text (`tooDeepText`, before the parse)
 * names the same field as the walk of the parsed value (`tooDeep`), for any JSON value, written
 * compactly or indented, with keys holding quotes, backslashes, brackets and commas; and both
 * stop at the limit whatever the depth past it.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as JsonDepth from "../src/internal/JsonDepth.ts"

// Keys that are not array indices: an object's integer-like keys are visited first by the walk
// (JavaScript's property order), not in the text's order, so with two paths past the limit the
// two readings could name different ones, both right.
const key = fc.string({ maxLength: 4, unit: fc.constantFrom("a", "\"", "\\", "[", "{", ",", ":", "]", "}", " ", "é") })
  .filter((k) => !/^(0|[1-9]\d*)$/.test(k))

const { json } = fc.letrec<{ json: unknown }>((tie) => ({
  json: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), key),
    fc.array(tie("json"), { maxLength: 3 }),
    fc.dictionary(key, tie("json"), { maxKeys: 3 })
  )
}))

describe("the body nesting limit", () => {
  it("the text scan names the field the walk of the parsed value names, at any limit", () => {
    fc.assert(
      fc.property(json, fc.integer({ min: 1, max: 6 }), fc.boolean(), (value, limit, indented) => {
        const text = indented ? JSON.stringify(value, null, 2) : JSON.stringify(value)
        expect(JsonDepth.tooDeepText(text, limit)).toBe(JsonDepth.tooDeep(JSON.parse(text), limit))
      }),
      { numRuns: 2_000 }
    )
  })

  it("at the limit nothing; past it the path to the first level past it, at any depth", () => {
    const limit = JsonDepth.MAX_DEPTH
    const body = (arrays: number) => `{"x":${"[".repeat(arrays)}${"]".repeat(arrays)}}`
    for (const text of [body(limit - 1), body(limit - 2)]) {
      expect(JsonDepth.tooDeepText(text)).toBeUndefined()
      expect(JsonDepth.tooDeep(JSON.parse(text))).toBeUndefined()
    }
    const path = `x${"[0]".repeat(limit - 1)}`
    for (const arrays of [limit, 100_000, 1_000_000]) {
      const text = body(arrays)
      expect(JsonDepth.tooDeepText(text)).toBe(path)
      expect(JsonDepth.tooDeep(JSON.parse(text))).toBe(path)
    }
  })
})
