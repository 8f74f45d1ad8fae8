/**
 * The faster ByteLevel step maps every text as the library's own does: Qwen3's pre-tokenizer (a
 * Split then a ByteLevel without its regex) and GPT-2's (a ByteLevel with its regex and a prefix
 * space), patched against unpatched instances, on any unicode, ASCII control characters included.
 */
import { Tokenizer as HfTokenizer } from "@huggingface/tokenizers"
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as ByteLevel from "../../src/internal/byteLevel.ts"
import { qwen3Directory } from "../support/Setup.ts"

const readJson = (name: string): any => JSON.parse(Fs.readFileSync(Path.join(qwen3Directory, name), "utf8"))
const json = readJson("tokenizer.json")
const config = readJson("tokenizer_config.json")

const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: fc.integer({ min: 0, max: 127 }).map((c) => String.fromCharCode(c)), maxLength: 40 }),
  fc.constantFrom("Hello world", " leading", "tabs\tand\nnewlines\r\n", "naïve café 世界 👩‍🚀", "\u0000\u007f")
)

const pair = (tokenizerJson: unknown) => {
  const plain = new HfTokenizer(tokenizerJson as object, config)
  const fast = new HfTokenizer(tokenizerJson as object, config)
  const found = ByteLevel.install((fast as unknown as { pre_tokenizer: unknown }).pre_tokenizer)
  const pre = (hf: HfTokenizer) => (hf as unknown as { pre_tokenizer: (t: string, o: object) => Array<string> }).pre_tokenizer
  return { plain, fast, found, pre }
}

describe("the faster ByteLevel step", () => {
  it("Qwen3 (Split, then ByteLevel without its regex): the same pre-tokens and ids for any text", () => {
    const { fast, found, plain, pre } = pair(json)
    expect(found).toBe(1)
    fc.assert(
      fc.property(text, (t) => {
        expect(pre(fast)(t, { section_index: 0 })).toEqual(pre(plain)(t, { section_index: 0 }))
        expect(fast.encode(t).ids).toEqual(plain.encode(t).ids)
      }),
      { numRuns: 400 }
    )
  })

  it("GPT-2's ByteLevel (its regex, a prefix space): the same pre-tokens for any text", () => {
    const { fast, found, plain, pre } = pair({
      ...json,
      pre_tokenizer: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true }
    })
    expect(found).toBe(1)
    fc.assert(
      fc.property(text, (t) => {
        expect(pre(fast)(t, {})).toEqual(pre(plain)(t, {}))
      }),
      { numRuns: 400 }
    )
  })

  it("finds nothing to change in a tokenizer without a ByteLevel pre-tokenizer", () => {
    expect(ByteLevel.install(null)).toBe(0)
    expect(ByteLevel.install({ tokenizers: [] })).toBe(0)
  })
})
