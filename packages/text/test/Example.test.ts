/**
 * The README's example (examples/quickstart.ts) runs, and gives the engines' words.
 */
import { describe, expect, it } from "@effect/vitest"
import { Generation, Vocabulary, WordTokenizer } from "@mcore-effect/testkit"
import { Effect } from "effect"
import { program } from "../examples/quickstart.ts"
import { quiet } from "./support/Setup.ts"

describe("the README example", () => {
  it.live("runs: a chat, a stream and a LanguageModel call, each the engines' words", () =>
    Effect.gen(function*() {
      const silenced = console.log
      console.log = () => {}
      const result = yield* program.pipe(Effect.ensuring(Effect.sync(() => (console.log = silenced))))
      const chatIds = ["<|system|>", "be", "quick", "<|end|>", "<|user|>", "the", "red", "fox", "<|end|>", "<|assistant|>"].map(
        (t) => WordTokenizer.idOf(t) ?? WordTokenizer.idOf("<unk>")!
      )
      expect(result.chat).toBe(Vocabulary.detokenize(Generation.tokens(chatIds, 8)))
      const streamed = Vocabulary.detokenize(Generation.tokens(Vocabulary.tokenize("the quick fox"), 12))
      expect(result.streamed).toBe(streamed.includes(" river") ? streamed.slice(0, streamed.indexOf(" river")) : streamed)
      const lmIds = ["<|user|>", "one", "two", "three", "<|end|>", "<|assistant|>"].map((t) => WordTokenizer.idOf(t)!)
      expect(result.languageModel).toBe(Vocabulary.detokenize(Generation.tokens(lmIds, 6)))
    }).pipe(quiet))
})
