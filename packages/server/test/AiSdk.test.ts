/**
 * Vercel's AI SDK against the server, as an application uses it: its default `openai("...")`
 * model (`@ai-sdk/openai`), which speaks OpenAI's Responses API (`POST /v1/responses`), with
 * `generateText`, `streamText` and a tool call it runs and sends back; and its openai-compatible
 * provider (`@ai-sdk/openai-compatible`, chat completions). Real Qwen3 tokenizer and template.
 */
import { createOpenAI } from "@ai-sdk/openai"
import { createOpenAICompatible } from "@ai-sdk/openai-compatible"
import { describe, expect, it } from "@effect/vitest"
import { APICallError, generateText, stepCountIs, streamText, tool } from "ai"
import { Effect } from "effect"
import { z } from "zod"
import { isolated, qwen3, script, sdk, serve } from "./support/Serve.ts"

// The AI SDK logs its warnings to the console (store: false drops reasoning it cannot send back):
// a passing run is quiet.
;(globalThis as { AI_SDK_LOG_WARNINGS?: boolean }).AI_SDK_LOG_WARNINGS = false

const promise = <A>(f: () => PromiseLike<A>) => Effect.promise(async () => await f())

const thinking = "\nThe user wants the weather; I will call the tool.\n"
const call = (city: string) => `<tool_call>\n{"name": "get_weather", "arguments": {"city": "${city}"}}\n</tool_call>`

const served = Effect.gen(function*() {
  const tokenizer = yield* qwen3
  const continuations = script(tokenizer, [
    [["<tool_response>", "18 degrees"], "It is 18 degrees there."],
    // Lyon: a call without reasoning; Paris: reasoning, then the call.
    [["\"get_weather\"", "weather in Lyon"], call("Lyon")],
    [["\"get_weather\"", "weather in Paris"], `<think>${thinking}</think>\n\n${call("Paris")}`]
  ])
  return yield* serve({
    tokenizer: "qwen3",
    server: { toolCallParser: "hermes", reasoningParser: "qwen3" },
    cluster: { engine: { continuations, defaultTokensToGenerate: 512 } }
  })
})

const weather = (cities: Array<string>) =>
  tool({
    description: "The weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => {
      cities.push(city)
      return "18 degrees, sunny"
    }
  })

describe("the AI SDK against the server", () => {
  it.live("openai(...) (the Responses API): generateText and streamText give the chat's text", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* serve({ tokenizer: "qwen3" })
      const model = createOpenAI({ baseURL, apiKey: "unused" })("test-model")
      const prompt = "Name three rivers. 你好 👋"
      const chat = yield* promise(() =>
        sdk(baseURL).chat.completions.create({ model: "test-model", messages: [{ role: "user", content: prompt }], max_tokens: 6 })
      )
      const generated = yield* promise(() => generateText({ model, prompt, maxOutputTokens: 6, maxRetries: 0 }))
      expect(generated.text).toBe(chat.choices[0]!.message.content)
      expect(generated.finishReason).toBe("length")
      expect(generated.usage.inputTokens).toBe(chat.usage!.prompt_tokens)
      expect(generated.usage.outputTokens).toBe(6)
      expect(generated.response.id).toMatch(/^resp_/)

      const streamed = streamText({ model, prompt, maxOutputTokens: 6, maxRetries: 0 })
      const parts: Array<string> = []
      yield* promise(async () => {
        for await (const text of streamed.textStream) parts.push(text)
      })
      expect(parts.length).toBeGreaterThan(1)
      expect(parts.join("")).toBe(generated.text)
      expect(yield* promise(() => streamed.finishReason)).toBe("length")
      expect((yield* promise(() => streamed.usage)).outputTokens).toBe(6)
    }).pipe(isolated), 60_000)

  it.live("openai(...): a tool call run and sent back, generated and streamed; reasoning needs store: false", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* served
      const model = createOpenAI({ baseURL, apiKey: "unused" })("test-model")
      const cities: Array<string> = []
      const tools = { get_weather: weather(cities) }
      const lyon = yield* promise(() =>
        generateText({ model, tools, prompt: "What is the weather in Lyon?", stopWhen: stepCountIs(2), maxRetries: 0 })
      )
      expect(cities).toEqual(["Lyon"])
      expect(lyon.steps).toHaveLength(2)
      expect(lyon.steps[0]!.toolCalls.map((c) => [c.toolName, c.input])).toEqual([["get_weather", { city: "Lyon" }]])
      expect(lyon.text).toBe("It is 18 degrees there.")

      const streamed = streamText({ model, tools, prompt: "What is the weather in Lyon?", stopWhen: stepCountIs(2), maxRetries: 0 })
      expect(yield* promise(() => streamed.text)).toBe("It is 18 degrees there.")
      expect(cities).toEqual(["Lyon", "Lyon"])

      // With reasoning, the AI SDK's default (store: true) sends it back as a reference to a
      // stored item: refused by name, as nothing is stored. With store: false it is left out.
      const refused = yield* promise(() =>
        generateText({ model, tools, prompt: "What is the weather in Paris?", stopWhen: stepCountIs(2), maxRetries: 0 }).then(
          () => undefined,
          (error: unknown) => error
        )
      )
      expect(APICallError.isInstance(refused)).toBe(true)
      expect((refused as APICallError).statusCode).toBe(400)
      expect((refused as APICallError).message).toMatch(/input\[1\]: this server stores no responses/)
      const paris = yield* promise(() =>
        generateText({
          model,
          tools,
          prompt: "What is the weather in Paris?",
          stopWhen: stepCountIs(2),
          maxRetries: 0,
          providerOptions: { openai: { store: false } }
        })
      )
      expect(paris.text).toBe("It is 18 degrees there.")
      expect(paris.steps[0]!.toolCalls.map((c) => c.input)).toEqual([{ city: "Paris" }])
    }).pipe(isolated), 60_000)

  it.live("the openai-compatible provider (chat completions): generateText and streamText", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* serve({ tokenizer: "qwen3" })
      const provider = createOpenAICompatible({ name: "mcore", baseURL, apiKey: "unused", includeUsage: true })
      const model = provider.chatModel("test-model")
      const prompt = "Name three rivers."
      const generated = yield* promise(() => generateText({ model, prompt, maxOutputTokens: 6, maxRetries: 0 }))
      expect(generated.text.length).toBeGreaterThan(0)
      expect(generated.finishReason).toBe("length")
      expect(generated.usage.outputTokens).toBe(6)
      const streamed = streamText({ model, prompt, maxOutputTokens: 6, maxRetries: 0 })
      expect(yield* promise(() => streamed.text)).toBe(generated.text)
      expect((yield* promise(() => streamed.usage)).outputTokens).toBe(6)
    }).pipe(isolated), 60_000)
})
