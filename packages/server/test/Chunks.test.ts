import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Chunks, type Generation, Sse } from "../src/index.ts"

// The two endpoints' content chunks (ChatCompletions.ts, Completions.ts).
const chat: Generation.Format = {
  chunkObject: "chat.completion.chunk",
  opening: (index) => ({ index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }),
  delta: (index, content) => ({ index, delta: { content }, logprobs: null, finish_reason: null }),
  closing: (index) => ({ index, delta: {}, logprobs: null, finish_reason: "stop" })
}
const completion: Generation.Format = {
  chunkObject: "text_completion",
  opening: undefined,
  delta: (index, text) => ({ index, text, logprobs: null, finish_reason: null }),
  closing: (index) => ({ index, text: "", logprobs: null, finish_reason: "length" })
}

/** What a record must be: the whole chunk serialized. */
const whole = (format: Generation.Format, meta: Generation.Meta, includeUsage: boolean, choice: unknown) =>
  Sse.recordText(
    includeUsage
      ? { id: meta.id, object: format.chunkObject, created: meta.created, model: meta.model, choices: [choice], usage: null }
      : { id: meta.id, object: format.chunkObject, created: meta.created, model: meta.model, choices: [choice] }
  )

// Any UTF-16 (lone surrogates, control characters, quotes, backslashes), and the stand-in text
// Chunks looks for, which a model name may hold.
const text = fc.oneof(
  fc.string({ unit: "binary" }),
  fc.string({ unit: fc.constantFrom("\"", "\\", "\n", "\u0000", "\u2028", "\uD800", "\uDC00", "\uFFFF", "a", "é", "😀") }),
  fc.constant("\uFFFF\u0000mcore-effect delta\u0000\uFFFF")
)
const meta = fc.record({ id: fc.string(), created: fc.nat(), model: text })

describe("Chunks", () => {
  it("a content record is the whole chunk serialized, for any text, model, index and usage setting", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(chat, completion),
        meta,
        fc.boolean(),
        fc.array(fc.tuple(fc.nat({ max: 3 }), text), { minLength: 1, maxLength: 8 }),
        (format, meta, includeUsage, deltas) => {
          const chunks = Chunks.make(format, meta, includeUsage)
          for (const [index, content] of deltas) {
            expect(chunks.delta(index, content)).toBe(whole(format, meta, includeUsage, format.delta(index, content)))
          }
        }
      ),
      { numRuns: 500 }
    )
  })

  it("opening, closing and end records are the whole chunks serialized", () => {
    const meta = { id: "chatcmpl-1", created: 1, model: "m" }
    const prompt = { ids: [1], text: "p" }
    const finished = {
      text: "x",
      tokens: [1],
      finishReason: "stop" as const,
      promptTokens: 1,
      completionTokens: 1,
      cachedTokens: 0,
      logprobs: undefined,
      topLogprobs: undefined,
      promptLogprobs: undefined,
      promptTopLogprobs: undefined
    }
    const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, prompt_tokens_details: { cached_tokens: 0 } }
    const chunks = Chunks.make(chat, meta, true)
    expect(chunks.opening(0, prompt)).toBe(whole(chat, meta, true, chat.opening!(0, prompt)))
    expect(chunks.closing(1, finished, prompt)).toBe(whole(chat, meta, true, chat.closing(1, finished, prompt)))
    expect(chunks.end(usage)).toBe(
      Sse.recordText({ id: meta.id, object: chat.chunkObject, created: meta.created, model: meta.model, choices: [], usage }) + Sse.doneText
    )
    expect(Chunks.make(chat, meta, false).end(usage)).toBe(Sse.doneText)
    expect(Chunks.make(completion, meta, false).opening(0, prompt)).toBeUndefined()
  })
})
