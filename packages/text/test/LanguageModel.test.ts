/**
 * Effect AI's LanguageModel backed by the test cluster, through the text layer with the word
 * tokenizer: generateText and streamText answer with the engines' words, usage and finish reason
 * mapped; what the provider cannot do is refused with an AiError before anything is sent.
 */
import { describe, expect, it } from "@effect/vitest"
import { Generation, Vocabulary, WordTokenizer } from "@mcore-effect/testkit"
import { Effect, Schema, Stream } from "effect"
import { LanguageModel, Tool, type Toolkit } from "effect/ai"
import { LanguageModel as Megatron } from "../src/index.ts"
import { quiet, setup } from "./support/Setup.ts"

const idsOf = (tokens: ReadonlyArray<string>) => tokens.map((t) => WordTokenizer.idOf(t) ?? WordTokenizer.idOf("<unk>")!)

describe("LanguageModel (Effect AI) over the test cluster", () => {
  it.live("generateText: the chat rendered, the engines' words back, usage and finish reason mapped", () =>
    Effect.gen(function*() {
      const { text } = yield* setup()
      const model = yield* Megatron.make(text)
      const response = yield* model.generateText({
        prompt: [{ role: "system", content: "be quick" }, { role: "user", content: "the red fox" }]
      }).pipe(Megatron.withConfigOverride({ samplingParams: { num_tokens_to_generate: 4 } }))
      const promptIds = idsOf(["<|system|>", "be", "quick", "<|end|>", "<|user|>", "the", "red", "fox", "<|end|>", "<|assistant|>"])
      expect(response.text).toBe(Vocabulary.detokenize(Generation.tokens(promptIds, 4)))
      expect(response.finishReason).toBe("length")
      expect(response.usage.inputTokens.total).toBe(promptIds.length)
      expect(response.usage.outputTokens.total).toBe(4)
    }).pipe(quiet))

  it.live("a prompt ending with an assistant message is continued, not answered", () =>
    Effect.gen(function*() {
      const { text } = yield* setup()
      const model = yield* Megatron.make(text)
      const response = yield* model.generateText({
        prompt: [{ role: "user", content: "one two" }, { role: "assistant", content: "three" }]
      }).pipe(Megatron.withConfigOverride({ samplingParams: { num_tokens_to_generate: 2 } }))
      const promptIds = idsOf(["<|user|>", "one", "two", "<|end|>", "<|assistant|>", "three"])
      expect(response.text).toBe(Vocabulary.detokenize(Generation.tokens(promptIds, 2)))
    }).pipe(quiet))

  it.live("streamText: text-start, deltas that add up to the text, text-end, finish", () =>
    Effect.gen(function*() {
      const { text } = yield* setup({ engine: { stepMs: 2 } })
      const model = yield* Megatron.make(text)
      const parts = yield* Stream.runCollect(model.streamText({ prompt: "the quick fox" })).pipe(
        Megatron.withConfigOverride({ samplingParams: { num_tokens_to_generate: 6 } })
      )
      const types = parts.map((p) => p.type)
      expect(types[0]).toBe("text-start")
      expect(types.slice(-2)).toEqual(["text-end", "finish"])
      expect(types.slice(1, -2).every((t) => t === "text-delta")).toBe(true)
      const streamed = parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")
      const promptIds = idsOf(["<|user|>", "the", "quick", "fox", "<|end|>", "<|assistant|>"])
      expect(streamed).toBe(Vocabulary.detokenize(Generation.tokens(promptIds, 6)))
      const finish = parts[parts.length - 1]!
      expect(finish.type === "finish" && finish.reason).toBe("length")
    }).pipe(quiet))

  it.live("tools, JSON output and file parts are refused with an AiError; nothing is sent", () =>
    Effect.gen(function*() {
      const { cluster, text } = yield* setup()
      const model = yield* Megatron.make(text)
      const tool = Tool.make("GetWeather", { parameters: Schema.Struct({ city: Schema.String }), success: Schema.String })
      const toolkit = { tools: { GetWeather: tool }, handle: () => Effect.die("not called") } as unknown as Toolkit.WithHandler<{
        GetWeather: typeof tool
      }>
      const withTools = yield* Effect.flip(model.generateText({ prompt: "hi", toolkit }))
      expect(withTools.reason._tag).toBe("InvalidRequestError")
      expect(withTools.message).toContain("tools")
      const json = yield* Effect.flip(model.generateObject({ prompt: "hi", schema: Schema.Struct({ a: Schema.String }) }))
      expect(json.message).toContain("responseFormat")
      const file = yield* Effect.flip(model.generateText({
        prompt: [{ role: "user", content: [{ type: "file", mediaType: "image/png", data: new Uint8Array([1]) }] }]
      }))
      expect(file.message).toContain("file parts are not supported")
      const engine = yield* cluster.engines[0]!.snapshot
      expect(engine.received.filter((m) => m.name === "SUBMIT_REQUEST")).toHaveLength(0)
    }).pipe(quiet))
})
