/**
 * The model's context length: a request whose prompt and `max_tokens` do not fit is a 400 naming
 * the field, with nothing sent to the coordinator (its request counter does not move); an omitted
 * `max_tokens` on a chat is the rest of the context. Through the official `openai` SDK with
 * Qwen3's tokenizer and template; the default derived from a model directory as vLLM derives it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import OpenAI from "openai"
import * as ContextLength from "../src/internal/ContextLength.ts"
import { isolated, qwen3Directory, refusal, sdk, serve } from "./support/Serve.ts"

const user = (content: string) => [{ role: "user" as const, content }]

describe("context length", () => {
  it.live("max_tokens beyond the context is a 400 naming it, nothing sent; the default is the tokenizer's model_max_length", () =>
    Effect.gen(function*() {
      const { baseURL, cluster } = yield* serve({ tokenizer: "qwen3" })
      const openai = sdk(baseURL)
      const before = (yield* cluster.coordinator.snapshot).nextRequestId
      for (const stream of [false, true]) {
        const error = yield* refusal(() =>
          openai.chat.completions.create({ model: "test-model", messages: user("hi"), max_tokens: 1e15, stream })
        )
        expect(error).toBeInstanceOf(OpenAI.BadRequestError)
        expect(error.param).toBe("max_tokens")
        expect(error.type).toBe("invalid_request_error")
        // Qwen3's tokenizer_config.json: model_max_length 131072.
        expect(error.message).toContain("maximum context length is 131072 tokens")
      }
      const completion = yield* refusal(() =>
        openai.completions.create({ model: "test-model", prompt: "hi", max_tokens: 131_072 })
      )
      expect(completion.param).toBe("max_tokens")
      const named = yield* refusal(() =>
        openai.chat.completions.create({ model: "test-model", messages: user("hi"), max_completion_tokens: 1e9 })
      )
      expect(named.param).toBe("max_completion_tokens")
      expect((yield* cluster.coordinator.snapshot).nextRequestId).toBe(before)
    }).pipe(isolated))

  it.live("--max-model-len: prompts too long refused by name (every prompt of a list); omitted max_tokens is the rest", () =>
    Effect.gen(function*() {
      const limit = 48
      const { baseURL, cluster, tokenizer } = yield* serve({ tokenizer: "qwen3", server: { maxModelLen: limit } })
      const openai = sdk(baseURL)
      const before = (yield* cluster.coordinator.snapshot).nextRequestId
      const long = "the quick brown fox jumps over the lazy dog ".repeat(8)
      const chat = yield* refusal(() => openai.chat.completions.create({ model: "test-model", messages: user(long) }))
      expect(chat.param).toBe("messages")
      expect(chat.message).toContain(`maximum context length is ${limit} tokens`)
      const prompts = ["a short one", long]
      const list = yield* refusal(() => openai.completions.create({ model: "test-model", prompt: prompts, max_tokens: 1 }))
      expect(list.param).toBe("prompt[1]")
      expect(list.message).toContain(`${tokenizer.encode(long).length} input tokens`)
      // Fits alone, not with the tokens asked for.
      const short = tokenizer.encode(prompts[0]!).length
      const both = yield* refusal(() =>
        openai.completions.create({ model: "test-model", prompt: prompts[0]!, max_tokens: limit - short + 1, n: 2 })
      )
      expect(both.param).toBe("max_tokens")
      expect(both.message).toContain(`(${limit - short + 1} > ${limit} - ${short})`)
      expect((yield* cluster.coordinator.snapshot).nextRequestId).toBe(before)

      // Exactly the room left is accepted; omitted on a chat, the room left is what is generated.
      const exact = yield* Effect.promise(() =>
        openai.completions.create({ model: "test-model", prompt: prompts[0]!, max_tokens: limit - short })
      )
      expect(exact.usage!.completion_tokens).toBe(limit - short)
      const rest = yield* Effect.promise(() => openai.chat.completions.create({ model: "test-model", messages: user("hi") }))
      expect(rest.choices[0]!.finish_reason).toBe("length")
      expect(rest.usage!.prompt_tokens + rest.usage!.completion_tokens).toBe(limit)
    }).pipe(isolated))

  it("fromDirectory: config.json's smallest length key with RoPE scaling, capped by model_max_length; 1e30 ignored", () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "mcore-context-"))
    try {
      expect(ContextLength.fromDirectory(dir)).toBeUndefined()
      const write = (name: string, value: unknown) => Fs.writeFileSync(Path.join(dir, name), JSON.stringify(value))
      write("tokenizer_config.json", { model_max_length: 1e30 })
      expect(ContextLength.fromDirectory(dir)).toBeUndefined()
      write("config.json", { max_position_embeddings: 40_960, seq_length: 32_768 })
      expect(ContextLength.fromDirectory(dir)).toBe(32_768)
      write("config.json", { max_position_embeddings: 32_768, rope_scaling: { rope_type: "yarn", factor: 4 } })
      expect(ContextLength.fromDirectory(dir)).toBe(131_072)
      write("tokenizer_config.json", { model_max_length: 65_536 })
      expect(ContextLength.fromDirectory(dir)).toBe(65_536)
      write("config.json", { max_position_embeddings: 8_192, rope_scaling: { rope_type: "llama3", factor: 8 } })
      expect(ContextLength.fromDirectory(dir)).toBe(8_192)
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
    expect(ContextLength.fromDirectory(qwen3Directory)).toBe(131_072)
  })
})
