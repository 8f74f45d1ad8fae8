/**
 * The piece cache inside `encode` gives exactly what the library gives without it: against
 * Python's vectors, and against an uncached instance of the same tokenizer for any texts in any
 * order, with a cache small enough that entries are evicted all along; a Metaspace pre-tokenizer
 * with `prepend_scheme: "first"` (which tokenizes the first section's pieces differently) keeps
 * its two kinds of pieces apart.
 */
import { Tokenizer as HfTokenizer } from "@huggingface/tokenizers"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as PieceCache from "../../src/internal/pieceCache.ts"
import { Tokenizer } from "../../src/index.ts"
import { qwen3Vectors, sentencePieceDirectory } from "../support/Fixtures.ts"
import { qwen3Directory } from "../support/Setup.ts"

const readJson = (directory: string, name: string): any =>
  JSON.parse(Fs.readFileSync(Path.join(directory, name), "utf8"))

const qwen3Json = readJson(qwen3Directory, "tokenizer.json")
const qwen3Config = readJson(qwen3Directory, "tokenizer_config.json")

const ids = (hf: HfTokenizer, text: string, addSpecialTokens = true): Array<number> =>
  hf.encode(text, { add_special_tokens: addSpecialTokens }).ids

/** Text made of what chats are made of: special tokens, repeated phrases, whitespace, any unicode. */
const chatLike = (specials: ReadonlyArray<string>): fc.Arbitrary<string> =>
  fc.array(
    fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...specials) },
      { weight: 3, arbitrary: fc.constantFrom("system\nYou are helpful.", "user\nHi", "\n", " ", "  hello", "assistant\n", "héllo 世界 👩‍🚀") },
      { weight: 2, arbitrary: fc.string({ unit: "grapheme", maxLength: 12 }) },
      { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 8 }) }
    ),
    { maxLength: 10 }
  ).map((parts) => parts.join(""))

describe("the piece cache", () => {
  it.effect("Qwen3 with the cache on (the default) equals Python's tokenizers, on the first pass and on hits", () =>
    Effect.gen(function*() {
      const tokenizer = yield* Tokenizer.fromFiles({ tokenizer: qwen3Json, config: qwen3Config }, qwen3Directory)
      for (let pass = 0; pass < 2; pass++) {
        for (const vector of qwen3Vectors.encode) expect(tokenizer.encode(vector.text), vector.text).toEqual(vector.ids)
        for (const chat of qwen3Vectors.chats) {
          expect(tokenizer.encode(chat.rendered, { addSpecialTokens: false }), chat.name).toEqual(chat.ids)
        }
      }
    }))

  it("Qwen3: cached equals uncached for any texts in any order, while entries are evicted", () => {
    const uncached = new HfTokenizer(qwen3Json, qwen3Config)
    const cached = new HfTokenizer(qwen3Json, qwen3Config)
    const stats = PieceCache.install(cached, { pieces: 8, maxPieceLength: 24 })!
    expect(stats).toBeDefined()
    const text = chatLike(["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>"])
    fc.assert(
      fc.property(fc.array(text, { minLength: 1, maxLength: 12 }), fc.boolean(), (texts, special) => {
        // Forth then back: the second pass meets pieces held, and pieces evicted since.
        for (const t of [...texts, ...texts.reverse()]) {
          expect(ids(cached, t, special), JSON.stringify(t)).toEqual(ids(uncached, t, special))
        }
      }),
      { numRuns: 150 }
    )
    // The property went through hits, misses and evictions, and pieces too long to hold.
    expect(stats.hits).toBeGreaterThan(20)
    expect(stats.misses).toBeGreaterThan(20)
    // 8 pieces, and ceil(8 / 8) of first sections.
    expect(stats.size()).toBe(9)
    const long = "a river in spring ".repeat(10)
    const misses = stats.misses
    expect(ids(cached, long)).toEqual(ids(uncached, long))
    expect(ids(cached, long)).toEqual(ids(uncached, long))
    expect(stats.misses).toBe(misses)
  })

  it("a repeated piece is a hit; a changed one is tokenized afresh", () => {
    const uncached = new HfTokenizer(qwen3Json, qwen3Config)
    const cached = new HfTokenizer(qwen3Json, qwen3Config)
    const stats = PieceCache.install(cached)!
    const chat = (user: string) => `<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n${user}<|im_end|>\n<|im_start|>assistant\n`
    expect(ids(cached, chat("one"), false)).toEqual(ids(uncached, chat("one"), false))
    const { hits, misses } = stats
    expect(ids(cached, chat("two"), false)).toEqual(ids(uncached, chat("two"), false))
    // Only the user's turn was new: system turn, the newlines and "assistant\n" were held.
    expect(stats.misses - misses).toBe(1)
    expect(stats.hits - hits).toBe(4)
  })

  it("Metaspace with prepend_scheme \"first\": the first section's pieces and the others' are kept apart", () => {
    const json = readJson(sentencePieceDirectory, "tokenizer.json")
    const config = readJson(sentencePieceDirectory, "tokenizer_config.json")
    const metaspace = {
      ...json,
      normalizer: null,
      pre_tokenizer: { type: "Metaspace", replacement: "▁", prepend_scheme: "first", split: true }
    }
    const uncached = new HfTokenizer(metaspace, config)
    const cached = new HfTokenizer(metaspace, config)
    expect(PieceCache.install(cached)).toBeDefined()
    // Same piece text in the first section and after an added token: tokenized differently.
    const first = ids(uncached, "ab</s>", false)
    const later = ids(uncached, "</s>ab", false).slice(1)
    expect(first.slice(0, -1)).not.toEqual(later)
    for (const text of ["ab</s>ab", "</s>ab", "ab", "ab</s>ab</s>ab", "ab"]) {
      expect(ids(cached, text, false), text).toEqual(ids(uncached, text, false))
    }
  })

  it("turned off with 0 pieces", () => {
    const hf = new HfTokenizer(qwen3Json, qwen3Config)
    expect(PieceCache.install(hf, { ...PieceCache.defaults, pieces: 0 })).toBeUndefined()
  })
})
