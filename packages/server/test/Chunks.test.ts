import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import { ChatChunks } from "../src/internal/answer/ChatChoices.ts"
import type { Chunks } from "../src/internal/answer/Chunks.ts"
import { CompletionChunks } from "../src/internal/answer/CompletionChoices.ts"
import type * as Plan from "../src/internal/Plan.ts"
import * as Sse from "../src/internal/Sse.ts"
import { words } from "./support/Serve.ts"

const tokenizer = Effect.runSync(words)

// The two endpoints' streamed chunks, and their content chunks' choices written out: what every
// record must be, serialized whole.
const kinds = {
  chat: {
    object: "chat.completion.chunk",
    make: (meta: Plan.Meta, includeUsage: boolean): Chunks =>
      new ChatChunks({ _tag: "Chat", tokenizer, logprobs: undefined, reading: undefined }, meta, includeUsage),
    delta: (index: number, content: string) => ({ index, delta: { content }, logprobs: null, finish_reason: null })
  },
  completion: {
    object: "text_completion",
    make: (meta: Plan.Meta, includeUsage: boolean): Chunks =>
      new CompletionChunks({ _tag: "Completion", tokenizer, logprobs: undefined, echo: false }, meta, includeUsage),
    delta: (index: number, text: string) => ({ index, text, logprobs: null, finish_reason: null })
  }
} as const

/** What a record must be: the whole chunk serialized. */
const whole = (object: string, meta: Plan.Meta, includeUsage: boolean, choice: unknown) =>
  Sse.recordText(
    includeUsage
      ? { id: meta.id, object, created: meta.created, model: meta.model, choices: [choice], usage: null }
      : { id: meta.id, object, created: meta.created, model: meta.model, choices: [choice] }
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
        fc.constantFrom(kinds.chat, kinds.completion),
        meta,
        fc.boolean(),
        fc.array(fc.tuple(fc.nat({ max: 3 }), text), { minLength: 1, maxLength: 8 }),
        (kind, meta, includeUsage, deltas) => {
          const chunks = kind.make(meta, includeUsage)
          for (const [index, content] of deltas) {
            expect(chunks.delta(index, content)).toBe(whole(kind.object, meta, includeUsage, kind.delta(index, content)))
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
    const chat = kinds.chat
    const chunks = chat.make(meta, true)
    expect(chunks.opening(0, prompt)).toBe(
      whole(chat.object, meta, true, { index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null })
    )
    expect(chunks.closing(1, finished, prompt)).toBe(whole(chat.object, meta, true, { index: 1, delta: {}, logprobs: null, finish_reason: "stop" }))
    expect(chunks.end(usage)).toBe(
      Sse.recordText({ id: meta.id, object: chat.object, created: meta.created, model: meta.model, choices: [], usage }) + Sse.doneText
    )
    expect(chat.make(meta, false).end(usage)).toBe(Sse.doneText)
    const completion = kinds.completion
    expect(completion.make(meta, false).opening(0, prompt)).toBeUndefined()
    expect(completion.make(meta, false).closing(0, { ...finished, finishReason: "length" }, prompt)).toBe(
      whole(completion.object, meta, false, { index: 0, text: "", logprobs: null, finish_reason: "length" })
    )
  })
})
