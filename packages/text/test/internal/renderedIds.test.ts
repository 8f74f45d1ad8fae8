/**
 * The cache of rendered chats' ids answers exactly what the tokenizer gives for the text (without
 * special tokens added), whatever the order of the texts and however small the cache; each answer
 * is a fresh array, so a caller changing it changes no later answer.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as RenderCache from "../../src/internal/renderCache.ts"
import * as RenderedIds from "../../src/internal/renderedIds.ts"
import { Tokenizer } from "../../src/index.ts"
import { qwen3Directory } from "../support/Setup.ts"

describe("the ids of rendered chats", () => {
  it.effect("are the tokenizer's, from the cache or not, and never shared", () =>
    Effect.gen(function*() {
      const tokenizer = yield* Tokenizer.fromDirectory(qwen3Directory)
      // Longer than the longest text held: many short words (one long word is slow to tokenize).
      const longer = "word ".repeat(Math.ceil((RenderCache.defaults.maxKeyLength + 1) / 5))
      const texts = ["<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "héllo 世界", "", " a b  c", longer]
      // The tokenizer's own answer for each text, once.
      const expected = new Map(texts.map((text) => [text, tokenizer.encode(text, { addSpecialTokens: false })]))
      fc.assert(
        fc.property(fc.array(fc.constantFrom(...texts), { maxLength: 30 }), fc.integer({ min: 0, max: 3 }), (order, entries) => {
          const encode = RenderedIds.make(tokenizer, entries)
          for (const text of order) {
            const ids = encode(text)
            expect(ids).toStrictEqual(expected.get(text))
            ids.push(-1)
          }
        }),
        { numRuns: 200 }
      )
    }))
})
