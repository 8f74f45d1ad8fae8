import { describe, expect, it } from "@effect/vitest"
import { Generation, Vocabulary } from "../src/index.ts"

describe("Vocabulary", () => {
  it("tokenizes known words to their ids and detokenizes back", () => {
    const ids = Vocabulary.tokenize("  the quick\tfox .")
    expect(ids).toEqual([1, 16, 24, Vocabulary.size - 1])
    expect(Vocabulary.detokenize(ids)).toBe("the quick fox .")
  })

  it("gives an unknown word a stable id outside the vocabulary", () => {
    const [id] = Vocabulary.tokenize("zebra")
    expect(id).toBeGreaterThanOrEqual(65536)
    expect(Vocabulary.tokenize("zebra zebra")).toEqual([id, id])
    expect(Vocabulary.detokenize([id!])).toBe(`<${id}>`)
  })

  it("leaves end-of-document out when asked", () => {
    expect(Vocabulary.detokenize([1, Vocabulary.eod, 22], { removeEod: true })).toBe("the cat")
    expect(Vocabulary.detokenize([1, Vocabulary.eod, 22])).toBe("the <|endoftext|> cat")
  })
})

describe("Generation", () => {
  it("depends on the prompt only, and never produces end-of-document", () => {
    const a = Generation.tokens([1, 2, 3], 200)
    expect(Generation.tokens([1, 2, 3], 200)).toEqual(a)
    expect(Generation.tokens([1, 2, 4], 200)).not.toEqual(a)
    expect(a.every((t) => t >= 1 && t < Vocabulary.size)).toBe(true)
    // a prefix of a longer stream is the shorter stream
    expect(Generation.tokens([1, 2, 3], 5)).toEqual(a.slice(0, 5))
  })
})
