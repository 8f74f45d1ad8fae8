/**
 * `mcore generate --tokenizer DIR` as a subprocess against `mcore coordinator`, with the word
 * tokenizer the testkit writes for the test engines' vocabulary: text in, text out, streamed,
 * chats, and one-line failures.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { Generation, Vocabulary, WordTokenizer } from "@mcore-effect/testkit"
import { Effect } from "effect"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

const prompt = "the quick fox jumps over the old stone"
const expected = (ids: ReadonlyArray<number>, n: number) => Vocabulary.detokenize(Generation.tokens(ids, n))

describe("mcore generate --tokenizer", () => {
  it.live("prints the text, at once or streamed", () =>
    Effect.gen(function*() {
      const { address, protocol } = yield* Mcore.coordinator(["--step-ms", "2"])
      const tokenizer = yield* WordTokenizer.directory
      const text = `${expected(Vocabulary.tokenize(prompt), 6)}\n`
      expect(yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "--tokenizer", tokenizer, "-n", "6", prompt])).toBe(text)
      expect(yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "--tokenizer", tokenizer, "-n", "6", "--stream", prompt])).toBe(text)
      const json = yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "--tokenizer", tokenizer, "-n", "2", "--stream", "--json", prompt])
      const parts = json.trim().split("\n").map((line) => JSON.parse(line) as { _tag: string; finishReason?: string })
      expect(parts.at(-1)).toMatchObject({ _tag: "Finish", finishReason: "length" })
    }), 120_000)

  it.live("--chat renders the messages with the tokenizer's chat template", () =>
    Effect.gen(function*() {
      const { address, protocol } = yield* Mcore.coordinator()
      const tokenizer = yield* WordTokenizer.directory
      const ids = ["<|user|>", "the", "red", "fox", "<|end|>", "<|assistant|>"].map((t) => WordTokenizer.idOf(t)!)
      const plain = yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "--tokenizer", tokenizer, "--chat", "-n", "3", "the red fox"])
      expect(plain).toBe(`${expected(ids, 3)}\n`)
      const messages = JSON.stringify([{ role: "user", content: "the red fox" }])
      const json = yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "--tokenizer", tokenizer, "--chat", "-n", "3", "--stream", messages])
      expect(json).toBe(`${expected(ids, 3)}\n`)
    }), 120_000)

  it.live("fails in one line: no tokenizer there, --chat without --tokenizer, a role the template refuses", () =>
    Effect.gen(function*() {
      const { address, protocol } = yield* Mcore.coordinator()
      const tokenizer = yield* WordTokenizer.directory
      const missing = yield* Mcore.run(["generate", "-a", address, "--protocol", protocol, "--tokenizer", "/nonexistent/tokenizer", prompt])
      expect(missing.code).toBe(1)
      expect(missing.stderr).toMatch(/^mcore: FileNotFound: cannot read \/nonexistent\/tokenizer: [^\n]*\n$/)
      const noTokenizer = yield* Mcore.run(["generate", "-a", address, "--protocol", protocol, "--chat", prompt])
      expect(noTokenizer.code).toBe(2)
      expect(noTokenizer.stderr).toMatch(/^mcore generate: invalid value "true" for --chat: needs --tokenizer DIR/)
      const robot = yield* Mcore.run(["generate", "-a", address, "--protocol", protocol, "--tokenizer", tokenizer, "--chat", JSON.stringify([{ role: "robot", content: "x" }])])
      expect(robot.code).toBe(1)
      expect(robot.stderr).toMatch(/^mcore: TemplateError: [^\n]*unknown role: robot\n$/)
    }), 120_000)
})
