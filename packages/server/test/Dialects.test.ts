/**
 * The server over the testkit speaking each Megatron-LM dialect, called with the official
 * `openai` SDK: chat and completions, streamed or not, come out the same; where the dialect has
 * partial replies a stream comes in pieces, where it has none (the releases) in one chunk with the
 * final reply, never as an error; and nothing goes to the coordinator that its dialect lacks (the
 * testkit coordinator keeps every message it had to refuse).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Dialect } from "@mcore-effect/protocol"
import { Effect } from "effect"
import OpenAI from "openai"
import { isolated, serve } from "./support/Serve.ts"

const messages = [{ role: "user" as const, content: "the quick fox" }]

const streamedChat = (openai: OpenAI) =>
  Effect.promise(async () => {
    const stream = await openai.chat.completions.create({ model: "test-model", messages, max_tokens: 6, stream: true })
    const pieces: Array<string> = []
    let finish: string | null = null
    for await (const chunk of stream) {
      const choice = chunk.choices[0]
      if (choice?.delta.content) pieces.push(choice.delta.content)
      if (choice?.finish_reason) finish = choice.finish_reason
    }
    return { pieces, finish }
  })

const cases: ReadonlyArray<readonly [Dialect.Name, "pieces" | "one chunk"]> = [
  ["main", "pieces"],
  ["pr-6497", "pieces"],
  ["core_v0.19", "one chunk"],
  ["core_v0.17", "one chunk"],
  // Its replies are request records: the text layer reads the request inside.
  ["core_v0.16", "one chunk"]
]

describe("the server in Megatron-LM's dialects", () => {
  for (const [protocol, streams] of cases) {
    it.live(`${protocol}: chat and completions, streamed (${streams}) or not, the same text; nothing refused`, () =>
      Effect.gen(function*() {
        const { baseURL, cluster } = yield* serve({ cluster: { protocol, engine: { stepMs: 2 } }, client: { protocol } })
        const openai = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 })
        const plain = yield* Effect.promise(() => openai.chat.completions.create({ model: "test-model", messages, max_tokens: 6 }))
        const text = plain.choices[0]!.message.content!
        expect(text.length).toBeGreaterThan(0)
        const { finish, pieces } = yield* streamedChat(openai)
        expect(pieces.join("")).toBe(text)
        expect(finish).toBe(plain.choices[0]!.finish_reason)
        if (streams === "one chunk") expect(pieces).toHaveLength(1)
        else expect(pieces.length).toBeGreaterThan(1)

        const completion = yield* Effect.promise(() => openai.completions.create({ model: "test-model", prompt: "the quick fox", max_tokens: 5 }))
        const streamed = yield* Effect.promise(async () => {
          let joined = ""
          for await (const chunk of await openai.completions.create({ model: "test-model", prompt: "the quick fox", max_tokens: 5, stream: true })) {
            joined += chunk.choices[0]?.text ?? ""
          }
          return joined
        })
        expect(streamed).toBe(completion.choices[0]!.text)
        expect((yield* cluster.coordinator.snapshot).rejected).toEqual([])
      }).pipe(isolated))
  }
})
