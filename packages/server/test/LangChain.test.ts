/**
 * LangChain's `ChatOpenAI` (`@langchain/openai`, chat completions) against the server: `invoke`,
 * `stream`, and a stream with usage (`stream_options.include_usage`, the last chunk's
 * `usage_metadata`). Real Qwen3 tokenizer and chat template; the same text each way.
 */
import { describe, expect, it } from "@effect/vitest"
import { HumanMessage, SystemMessage } from "@langchain/core/messages"
import { ChatOpenAI } from "@langchain/openai"
import { Effect } from "effect"
import { isolated, serve } from "./support/Serve.ts"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

describe("LangChain's ChatOpenAI against the server", () => {
  it.live("invoke, stream, and stream with usage", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* serve({ tokenizer: "qwen3" })
      const chat = (streamUsage: boolean) =>
        new ChatOpenAI({ model: "test-model", apiKey: "unused", configuration: { baseURL }, maxRetries: 0, maxTokens: 6, streamUsage })
      const messages = [new SystemMessage("You are terse."), new HumanMessage("Name three rivers. 你好 👋")]

      const invoked = yield* promise(() => chat(false).invoke(messages))
      const text = invoked.content as string
      expect(text.length).toBeGreaterThan(0)
      expect(invoked.response_metadata["finish_reason"]).toBe("length")
      // Typed `never` by this version's message types (their structure generics); it is there.
      const usage = invoked.usage_metadata as unknown as { input_tokens: number; output_tokens: number }
      expect(usage.output_tokens).toBe(6)
      const inputTokens = usage.input_tokens

      const pieces: Array<string> = []
      yield* promise(async () => {
        for await (const chunk of await chat(false).stream(messages)) pieces.push(chunk.content as string)
      })
      expect(pieces.filter((p) => p !== "").length).toBeGreaterThan(1)
      expect(pieces.join("")).toBe(text)

      const withUsage = yield* promise(async () => {
        let usage: { input_tokens: number; output_tokens: number } | undefined
        let joined = ""
        for await (const chunk of await chat(true).stream(messages)) {
          joined += chunk.content as string
          if (chunk.usage_metadata !== undefined) usage = chunk.usage_metadata
        }
        return { joined, usage }
      })
      expect(withUsage.joined).toBe(text)
      expect(withUsage.usage).toMatchObject({ input_tokens: inputTokens, output_tokens: 6, total_tokens: inputTokens + 6 })
    }).pipe(isolated), 60_000)
})
