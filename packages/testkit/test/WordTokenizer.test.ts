/**
 * The word-level tokenizer's files: ids that match the vocabulary the engines generate from, the
 * special tokens after them, and a directory that exists for its scope only. (That the files load
 * in `@huggingface/tokenizers` and Python's `tokenizers` and detokenize the engines' tokens to
 * their words is tested in packages/text, which depends on those libraries.)
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Vocabulary, WordTokenizer } from "../src/index.ts"

describe("WordTokenizer", () => {
  it("gives every vocabulary word its engine id, and the special tokens the ids after", () => {
    const model = WordTokenizer.tokenizerJson().model as { vocab: Record<string, number>; unk_token: string }
    Vocabulary.words.forEach((word, id) => {
      expect(model.vocab[word]).toBe(id)
      expect(WordTokenizer.idOf(word)).toBe(id)
    })
    WordTokenizer.specialTokens.forEach((token, i) => expect(WordTokenizer.idOf(token)).toBe(Vocabulary.size + i))
    expect(new Set(Object.values(model.vocab)).size).toBe(Vocabulary.size + WordTokenizer.specialTokens.length)
    expect(model.unk_token).toBe("<unk>")
    expect(WordTokenizer.idOf("zebra")).toBeUndefined()
  })

  it("marks eos and the template's tokens special, and names eos as the engines' end-of-document", () => {
    const added = WordTokenizer.tokenizerJson().added_tokens as ReadonlyArray<{ id: number; content: string; special: boolean }>
    expect(added.map((t) => t.id)).toEqual([Vocabulary.eod, ...WordTokenizer.specialTokens.map((t) => WordTokenizer.idOf(t))])
    expect(added.every((t) => t.special)).toBe(true)
    const config = WordTokenizer.tokenizerConfig()
    expect(config.eos_token).toBe(Vocabulary.word(Vocabulary.eod))
    expect(config.clean_up_tokenization_spaces).toBe(false)
    expect(config.chat_template).toBe(WordTokenizer.chatTemplate)
    expect(Object.keys(config.added_tokens_decoder as object)).toEqual(added.map((t) => String(t.id)))
  })

  it.effect("writes a directory that is removed with its scope", () =>
    Effect.gen(function*() {
      const directory = yield* Effect.scoped(
        Effect.gen(function*() {
          const directory = yield* WordTokenizer.directory
          const read = (file: string) => JSON.parse(Fs.readFileSync(Path.join(directory, file), "utf8")) as unknown
          expect(read("tokenizer.json")).toEqual(WordTokenizer.tokenizerJson())
          expect(read("tokenizer_config.json")).toEqual(WordTokenizer.tokenizerConfig())
          return directory
        })
      )
      expect(Fs.existsSync(directory)).toBe(false)
    }))
})
