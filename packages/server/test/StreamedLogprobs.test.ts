/**
 * Streamed chat log probs per chunk: the test engines' partials carry `new_log_probs` (as
 * Megatron main's engine sends them), so each content chunk carries its tokens' log probs and the
 * closing chunk only those still unsent (the final reply's tail); accumulated by the official
 * `openai` SDK they are the unstreamed answer's. With `top_logprobs` (partials carry no top
 * tokens) they all come in the closing chunk, as before.
 */
import { describe, expect, it } from "@effect/vitest"
import { Generation, Vocabulary } from "@mcore-effect/testkit"
import { Effect } from "effect"
import OpenAI from "openai"
import { isolated, serve } from "./support/Serve.ts"

const messages = [{ role: "user" as const, content: "the quick fox" }]

const chunksOf = (openai: OpenAI, extra: Record<string, unknown>) =>
  Effect.promise(async () => {
    const stream = await openai.chat.completions.create({
      model: "test-model",
      messages,
      max_tokens: 8,
      logprobs: true,
      stream: true,
      ...extra
    } as never) as unknown as AsyncIterable<OpenAI.ChatCompletionChunk>
    const chunks: Array<OpenAI.ChatCompletionChunk> = []
    for await (const chunk of stream) chunks.push(chunk)
    return chunks
  })

describe("streamed log probs", () => {
  it.live("per chunk where the partials carry them; the SDK accumulates the unstreamed answer's", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* serve({ cluster: { engine: { stepMs: 5 } } })
      const openai = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 })
      const plain = yield* Effect.promise(() =>
        openai.chat.completions.create({ model: "test-model", messages, max_tokens: 8, logprobs: true })
      )
      const expected = plain.choices[0]!.logprobs!.content!
      expect(expected).toHaveLength(8)
      expect(expected.map((e) => e.logprob)).toEqual(plain.choices[0]!.logprobs!.content!.map((e) => Generation.logProbOf(Vocabulary.words.indexOf(e.token.trim()))))

      const chunks = yield* chunksOf(openai, {})
      const withContent = chunks.filter((c) => (c.choices[0]?.delta.content ?? "") !== "")
      // Every content chunk from a partial carries its tokens' log probs.
      const carrying = withContent.filter((c) => (c.choices[0]!.logprobs?.content?.length ?? 0) > 0)
      expect(carrying.length).toBeGreaterThan(0)
      const streamed = chunks.flatMap((c) => c.choices[0]?.logprobs?.content ?? [])
      expect(streamed).toEqual(expected)
      // Not sent twice: the closing chunk has only what no delta carried.
      const closing = chunks.find((c) => c.choices[0]?.finish_reason != null)!
      expect(closing.choices[0]!.logprobs?.content?.length ?? 0).toBeLessThan(expected.length)

      const runner = openai.chat.completions.stream({ model: "test-model", messages, max_tokens: 8, logprobs: true })
      const final = yield* Effect.promise(() => runner.finalChatCompletion())
      expect(final.choices[0]!.logprobs!.content).toEqual(expected)
    }).pipe(isolated))

  it.live("with top_logprobs: all in the closing chunk (the partials carry no top tokens)", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* serve()
      const openai = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 })
      const chunks = yield* chunksOf(openai, { top_logprobs: 2 })
      const carrying = chunks.filter((c) => (c.choices[0]?.logprobs?.content?.length ?? 0) > 0)
      expect(carrying).toHaveLength(1)
      expect(carrying[0]!.choices[0]!.finish_reason).not.toBeNull()
      expect(carrying[0]!.choices[0]!.logprobs!.content).toHaveLength(8)
    }).pipe(isolated))
  it.live("completions: per chunk too, the text offsets running on; joined they are the unstreamed answer's", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* serve({ cluster: { engine: { stepMs: 5 } } })
      const openai = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 })
      const request = { model: "test-model", prompt: "the quick fox", max_tokens: 8, logprobs: 0 } as const
      const plain = yield* Effect.promise(() => openai.completions.create(request))
      const expected = plain.choices[0]!.logprobs!
      expect(expected.tokens).toHaveLength(8)
      const chunks = yield* Effect.promise(async () => {
        const out: Array<OpenAI.Completion> = []
        for await (const chunk of await openai.completions.create({ ...request, stream: true })) out.push(chunk)
        return out
      })
      const withText = chunks.filter((c) => (c.choices[0]?.text ?? "") !== "")
      expect(withText.filter((c) => (c.choices[0]!.logprobs?.tokens?.length ?? 0) > 0).length).toBeGreaterThan(0)
      const joined = (key: "tokens" | "token_logprobs" | "text_offset") =>
        chunks.flatMap((c) => (c.choices[0]?.logprobs?.[key] ?? []) as Array<unknown>)
      expect(joined("tokens")).toEqual(expected.tokens)
      expect(joined("token_logprobs")).toEqual(expected.token_logprobs)
      expect(joined("text_offset")).toEqual(expected.text_offset)
      expect(chunks.map((c) => c.choices[0]?.text ?? "").join("")).toBe(plain.choices[0]!.text)
    }).pipe(isolated))
})
