/**
 * The tokenizer against Python's `tokenizers` (fixtures/qwen3.json, word.json: see
 * fixtures/generate.py), and its typed errors for a missing or malformed directory.
 */
import { describe, expect, it } from "@effect/vitest"
import { WordTokenizer } from "@mcore-effect/testkit"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Tokenizer } from "../src/index.ts"
import { qwen3Vectors, wordVectors } from "./support/Fixtures.ts"
import { qwen3, qwen3Directory } from "./support/Setup.ts"

const fixtures = Path.join(import.meta.dirname, "fixtures")

const tempDirectory = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "mcore-text-test-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

describe("Tokenizer", () => {
  it.effect("Qwen3: encode and decode equal Python's tokenizers, byte for byte", () =>
    Effect.gen(function*() {
      const tokenizer = yield* qwen3
      for (const vector of qwen3Vectors.encode) {
        expect(tokenizer.encode(vector.text), vector.text).toEqual(vector.ids)
        expect(tokenizer.decode(vector.ids), vector.text).toBe(vector.decoded)
        expect(tokenizer.decode(vector.ids, { skipSpecialTokens: true }), vector.text).toBe(vector.decodedSkipSpecial)
      }
      for (const vector of qwen3Vectors.prefixes) {
        vector.decoded.forEach((decoded, k) => expect(tokenizer.decode(vector.ids.slice(0, k))).toBe(decoded))
      }
    }))

  it.effect("Qwen3: special tokens, eos ids and the chat template from the directory", () =>
    Effect.gen(function*() {
      const tokenizer = yield* qwen3
      expect(tokenizer.source).toBe(qwen3Directory)
      expect(tokenizer.eosToken).toBe("<|im_end|>")
      expect(tokenizer.bosToken).toBeUndefined()
      expect(tokenizer.eosTokenIds).toEqual([151645])
      expect(tokenizer.specialTokensMap).toMatchObject({ eos_token: "<|im_end|>", pad_token: "<|endoftext|>" })
      expect(tokenizer.isSpecial(151644)).toBe(true)
      expect(tokenizer.isSpecial(9707)).toBe(false)
      expect(tokenizer.tokenToId("<|im_start|>")).toBe(151644)
      expect(tokenizer.vocabSize).toBe(151669)
      expect([...tokenizer.chatTemplates.keys()]).toEqual(["default"])
      expect(tokenizer.decoding.kind).toBe("byteLevel")
      // Unknown ids are left out, an empty list is "".
      expect(tokenizer.decode([])).toBe("")
      expect(tokenizer.decode([9707, 10_000_000, -1, 1879])).toBe("Hello world")
    }))

  it.effect("the testkit's word tokenizer: the committed fixture is what it generates; Python agrees", () =>
    Effect.gen(function*() {
      const directory = Path.join(fixtures, "word_tokenizer")
      expect(JSON.parse(Fs.readFileSync(Path.join(directory, "tokenizer.json"), "utf8"))).toEqual(WordTokenizer.tokenizerJson())
      expect(JSON.parse(Fs.readFileSync(Path.join(directory, "tokenizer_config.json"), "utf8"))).toEqual(
        WordTokenizer.tokenizerConfig()
      )
      const tokenizer = yield* Tokenizer.fromDirectory(directory)
      expect(tokenizer.decoding.kind).toBe("joined")
      expect(tokenizer.eosTokenIds).toEqual([0])
      for (const vector of wordVectors.encode) {
        expect(tokenizer.encode(vector.text)).toEqual(vector.ids)
        expect(tokenizer.decode(vector.ids)).toBe(vector.decoded)
      }
    }))

  it.effect("the testkit writes a loadable tokenizer directory, removed with its scope", () =>
    Effect.gen(function*() {
      const directory = yield* Effect.scoped(
        Effect.gen(function*() {
          const directory = yield* WordTokenizer.directory
          const tokenizer = yield* Tokenizer.fromDirectory(directory)
          expect(tokenizer.decode(tokenizer.encode("the quick fox ."))).toBe("the quick fox .")
          return directory
        })
      )
      expect(Fs.existsSync(directory)).toBe(false)
    }))

  it.effect("loading touches no network: fetch is never called", () =>
    Effect.gen(function*() {
      const fetch = globalThis.fetch
      let calls = 0
      globalThis.fetch = (() => {
        calls++
        return Promise.reject(new Error("no network in tests"))
      }) as typeof globalThis.fetch
      const tokenizer = yield* Tokenizer.fromDirectory(Path.join(fixtures, "word_tokenizer")).pipe(
        Effect.ensuring(Effect.sync(() => (globalThis.fetch = fetch)))
      )
      expect(tokenizer.decode(tokenizer.encode("the fox"))).toBe("the fox")
      expect(calls).toBe(0)
    }))

  it.effect("a missing or malformed directory is a typed error naming the file", () =>
    Effect.gen(function*() {
      const dir = yield* tempDirectory
      const reasonOf = (path: string) => Effect.map(Effect.flip(Tokenizer.fromDirectory(path)), (e) => e.reason)

      const missingDir = yield* reasonOf(Path.join(dir, "nope"))
      expect(missingDir._tag).toBe("FileNotFound")
      expect(missingDir.message).toContain(Path.join(dir, "nope"))

      const missingFile = yield* reasonOf(dir)
      expect(missingFile._tag).toBe("FileNotFound")
      expect(missingFile.message).toContain("tokenizer.json")

      Fs.writeFileSync(Path.join(dir, "tokenizer.json"), "{ not json")
      Fs.writeFileSync(Path.join(dir, "tokenizer_config.json"), "{}")
      const notJson = yield* reasonOf(dir)
      expect(notJson._tag).toBe("MalformedFile")
      expect(notJson.message).toContain(Path.join(dir, "tokenizer.json"))
      expect(notJson.message).toContain("not JSON")

      Fs.writeFileSync(Path.join(dir, "tokenizer.json"), JSON.stringify({ ...WordTokenizer.tokenizerJson(), decoder: { type: "Nope" } }))
      const badDecoder = yield* reasonOf(dir)
      expect(badDecoder._tag).toBe("MalformedFile")
      expect(badDecoder.message).toContain("Nope")

      Fs.writeFileSync(Path.join(dir, "tokenizer.json"), JSON.stringify({ added_tokens: [] }))
      expect((yield* reasonOf(dir)).message).toContain("model")

      Fs.writeFileSync(Path.join(dir, "tokenizer.json"), JSON.stringify(WordTokenizer.tokenizerJson()))
      Fs.writeFileSync(Path.join(dir, "tokenizer_config.json"), JSON.stringify({ chat_template: 7 }))
      const badTemplate = yield* reasonOf(dir)
      expect(badTemplate._tag).toBe("MalformedFile")
      expect(badTemplate.message).toContain("tokenizer_config.json")

      // chat_template.jinja and generation_config.json are read when present.
      Fs.writeFileSync(Path.join(dir, "tokenizer_config.json"), JSON.stringify(WordTokenizer.tokenizerConfig()))
      Fs.writeFileSync(Path.join(dir, "chat_template.jinja"), "{{ messages[0].content }}")
      Fs.writeFileSync(Path.join(dir, "generation_config.json"), JSON.stringify({ eos_token_id: [0, 70] }))
      const tokenizer = yield* Tokenizer.fromDirectory(dir)
      expect(tokenizer.chatTemplates.get("default")).toBe("{{ messages[0].content }}")
      expect(tokenizer.eosTokenIds).toEqual([0, 70])
    }))
})
