/**
 * Interned sampling parameters: the same keys, order and values give the same (frozen) object,
 * and anything that could validate or encode differently gives another; what the protocol does
 * not cache either (a nested value) is handed back as it is.
 */
import { describe, expect, it } from "@effect/vitest"
import { SamplingParams } from "@mcore-effect/protocol"
import * as fc from "fast-check"
import { isDeepStrictEqual } from "node:util"
import { intern } from "../../src/internal/internParams.ts"

const value = fc.oneof(
  fc.constantFrom(0, -0, NaN, Infinity, null, undefined, true, false, "0", "", "NaN", "null"),
  fc.double(),
  fc.integer(),
  fc.string()
)
const params = fc.dictionary(fc.constantFrom("temperature", "top_k", "top_p", "termination_id", "x"), value)

describe("internParams", () => {
  it("gives one frozen object per distinct set of parameters", () => {
    const a = intern({ temperature: 1, num_tokens_to_generate: 8, stop_words: ["\n"] })
    const b = intern({ temperature: 1, num_tokens_to_generate: 8, stop_words: ["\n"] })
    expect(b).toBe(a)
    expect(Object.isFrozen(a)).toBe(true)
    expect(Object.isFrozen(a.stop_words)).toBe(true)
    expect(intern({ num_tokens_to_generate: 8, temperature: 1, stop_words: ["\n"] })).not.toBe(a)
    expect(intern({ temperature: 1, num_tokens_to_generate: 8, stop_words: ["\n", ""] })).not.toBe(a)
    expect(intern({ temperature: 1, num_tokens_to_generate: 8 })).not.toBe(a)
  })

  it("never freezes the caller's list of stop words", () => {
    const words = ["</s>"]
    const held = intern({ temperature: 0.25, stop_words: words })
    expect(Object.isFrozen(words)).toBe(false)
    expect(held.stop_words).toStrictEqual(words)
    expect(Object.isFrozen(held.stop_words)).toBe(true)
  })

  it("gives the same object only for the same keys in the same order with the same values", () => {
    fc.assert(fc.property(params, params, (x, y) => {
      const same = isDeepStrictEqual(Object.entries(x), Object.entries(y))
      expect(intern({ ...x }) === intern({ ...y })).toBe(same)
    }))
  })

  it("leaves alone what cannot be interned", () => {
    const nested = { temperature: 1, extra: { a: 1 } }
    expect(intern(nested)).toBe(nested)
    expect(Object.isFrozen(nested)).toBe(false)
    const words = { stop_words: ["a", 1 as unknown as string] }
    expect(intern(words)).toBe(words)
  })

  it("validates as the object it stands for", () => {
    const input = { temperature: 0.5, top_k: 3, num_tokens_to_generate: 4 }
    expect(SamplingParams.make(intern({ ...input }))).toStrictEqual(SamplingParams.make(input))
  })
})
