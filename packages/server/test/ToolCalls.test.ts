/**
 * Tool calls and reasoning through the official `openai` SDK, with the real Qwen3 tokenizer and
 * chat template: the test engines answer chosen continuations (the testkit's `Continuations`),
 * keyed by what the rendered prompt holds, so a continuation is only given when the template
 * rendered the tools, the tool results or `enable_thinking` as asked. Plain and streamed, with
 * the server over a coordinator and as the coordinator; bad tool fields refused with OpenAI's
 * error shape and nothing sent.
 */
import { describe, expect, it } from "@effect/vitest"
import type { TestCluster } from "@mcore-effect/testkit"
import { Effect } from "effect"
import OpenAI from "openai"
import { isolated, qwen3, script, sdk, serve, type Setup, setups, weatherTool } from "./support/Serve.ts"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const tools = [weatherTool]

const thinking = "\nThe user wants the weather; I will call the tool.\n"
const callText = `<think>${thinking}</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>`

/** The server's options and the scripted engines', for either set-up. */
const options = Effect.map(qwen3, (tokenizer) => ({
  tokenizer: "qwen3" as const,
  server: { toolCallParser: "hermes" as const, reasoningParser: "qwen3" as const },
  cluster: {
    engine: {
      continuations: script(tokenizer, [
        [["<tool_response>", "18 degrees"], "It is 18 degrees in Paris."],
        [["\"get_weather\"", "weather in Paris"], callText],
        [["<think>\n\n</think>", "capital of France"], "Paris."],
        [["capital of France"], "<think>\nEasy.\n</think>\n\nParis."]
      ]),
      defaultTokensToGenerate: 512
    }
  }
}))

/** The server over the test cluster (its handle kept), or as the coordinator. */
const served = Effect.flatMap(options, (o) => serve(o))
const servedBy = (setup: Setup) => Effect.flatMap(options, (o) => setup(o))

/** Requests with fields the SDK's types do not have (`chat_template_kwargs`), not streamed. */
const create = (openai: OpenAI, body: Record<string, unknown>) =>
  promise(() => openai.chat.completions.create(body as never) as Promise<OpenAI.Chat.Completions.ChatCompletion>)

/** SUBMIT_REQUEST messages the engines received so far. */
const submits = (cluster: TestCluster.Handle) =>
  Effect.map(Effect.forEach(cluster.engines, (e) => e.snapshot), (s) => s.reduce((n, x) => n + x.received.filter((m) => m.name === "SUBMIT_REQUEST").length, 0))

describe.each(setups)("tool calls and reasoning through the openai SDK, the server %s", (_name, setup) => {
  it.live("a tool call and its reasoning, plain and streamed; the tool's result rendered back", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* servedBy(setup)
      const openai = sdk(baseURL)
      const messages: Array<OpenAI.Chat.Completions.ChatCompletionMessageParam> = [{ role: "user", content: "What is the weather in Paris?" }]
      const chat = yield* promise(() => openai.chat.completions.create({ model: "test-model", messages, tools }))
      const choice = chat.choices[0]!
      expect(choice.finish_reason).toBe("tool_calls")
      expect(choice.message.content).toBeNull()
      expect((choice.message as unknown as { reasoning_content: string }).reasoning_content).toBe(thinking)
      // Also under vLLM's current name.
      expect((choice.message as unknown as { reasoning: string }).reasoning).toBe(thinking)
      const call = choice.message.tool_calls![0]! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall
      expect(call.type).toBe("function")
      expect(call.id).toMatch(/^call_[0-9a-f]{24}$/)
      expect(call.function.name).toBe("get_weather")
      expect(JSON.parse(call.function.arguments)).toEqual({ city: "Paris" })

      const stream = yield* promise(() => openai.chat.completions.create({ model: "test-model", messages, tools, stream: true }))
      let reasoning = ""
      let content = ""
      let finish: string | null = null
      const calls: Array<{ id: string; name: string; arguments: string }> = []
      yield* promise(async () => {
        for await (const chunk of stream) {
          for (const c of chunk.choices) {
            const delta = c.delta as typeof c.delta & { reasoning_content?: string; reasoning?: string }
            reasoning += delta.reasoning_content ?? ""
            expect(delta.reasoning).toBe(delta.reasoning_content)
            content += delta.content ?? ""
            for (const t of delta.tool_calls ?? []) {
              if (t.id !== undefined) calls.push({ id: t.id, name: t.function!.name!, arguments: t.function!.arguments ?? "" })
              else calls[t.index]!.arguments += t.function!.arguments ?? ""
            }
            finish = c.finish_reason ?? finish
          }
        }
      })
      expect(reasoning).toBe(thinking)
      expect(content).toBe("")
      expect(finish).toBe("tool_calls")
      expect(calls.map(({ arguments: a, name }) => ({ name, arguments: a }))).toEqual([{ name: "get_weather", arguments: call.function.arguments }])

      // The call and its result sent back: the template renders them (the engines answer only then).
      const followUp = yield* promise(() =>
        openai.chat.completions.create({
          model: "test-model",
          tools,
          messages: [
            ...messages,
            { role: "assistant", content: null, tool_calls: [call] },
            { role: "tool", tool_call_id: call.id, content: "18 degrees, sunny" }
          ]
        })
      )
      expect(followUp.choices[0]!.finish_reason).toBe("stop")
      expect(followUp.choices[0]!.message.content).toBe("It is 18 degrees in Paris.")
      expect(followUp.choices[0]!.message.tool_calls).toBeUndefined()
    }).pipe(isolated), 60_000)

  it.live("reasoning_content without tools; enable_thinking off through chat_template_kwargs", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* servedBy(setup)
      const openai = sdk(baseURL)
      const messages: Array<OpenAI.Chat.Completions.ChatCompletionMessageParam> = [{ role: "user", content: "The capital of France?" }]
      const on = yield* promise(() => openai.chat.completions.create({ model: "test-model", messages }))
      expect(on.choices[0]!.message.content).toBe("\n\nParis.")
      expect((on.choices[0]!.message as unknown as { reasoning_content: string }).reasoning_content).toBe("\nEasy.\n")
      const off = yield* create(openai, { model: "test-model", messages, chat_template_kwargs: { enable_thinking: false } })
      expect(off.choices[0]!.message.content).toBe("Paris.")
      expect((off.choices[0]!.message as unknown as { reasoning_content: unknown }).reasoning_content).toBeNull()
      expect((off.choices[0]!.message as unknown as { reasoning: unknown }).reasoning).toBeNull()
      const effort = yield* create(openai, { model: "test-model", messages, reasoning_effort: "none" })
      expect(effort.choices[0]!.message.content).toBe("Paris.")
    }).pipe(isolated), 60_000)

})

describe("tool fields through the openai SDK", () => {
  it.live("bad tool fields: OpenAI's error, naming the field, and nothing sent", () =>
    Effect.gen(function*() {
      const { baseURL, cluster } = yield* served
      const openai = sdk(baseURL)
      const messages: Array<OpenAI.Chat.Completions.ChatCompletionMessageParam> = [{ role: "user", content: "hi" }]
      const refused = (body: Record<string, unknown>) =>
        promise(() =>
          openai.chat.completions.create({ model: "test-model", messages, ...body } as never).then(
            () => undefined,
            (error: unknown) => error
          )
        )
      const before = yield* submits(cluster)
      const cases: Array<readonly [Record<string, unknown>, string]> = [
        [{ tools: [{ type: "nope", function: { name: "f" } }] }, "tools[0].type"],
        [{ tools: [{ type: "function", function: { name: "has space" } }] }, "tools[0].function.name"],
        [{ tools, tool_choice: "sometimes" }, "tool_choice"],
        [{ tools, tool_choice: { type: "function", function: { name: "other" } } }, "tool_choice.function.name"],
        [{ tool_choice: "required" }, "tool_choice"],
        [{ tool_choice: { type: "function", function: { name: "get_weather" } } }, "tool_choice.function.name"],
        [{ chat_template_kwargs: { messages: [] } }, "chat_template_kwargs.messages"],
        [{ chat_template_kwargs: "no" }, "chat_template_kwargs"],
        [{ reasoning_effort: "extreme" }, "reasoning_effort"]
      ]
      for (const [body, param] of cases) {
        const error = yield* refused(body)
        expect(error, JSON.stringify(body)).toBeInstanceOf(OpenAI.BadRequestError)
        expect((error as InstanceType<typeof OpenAI.BadRequestError>).param, JSON.stringify(body)).toBe(param)
        expect((error as InstanceType<typeof OpenAI.BadRequestError>).type).toBe("invalid_request_error")
      }
      expect(yield* submits(cluster)).toBe(before)
    }).pipe(isolated), 60_000)

  it.live("without a tool-call parser, tools are refused by name", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* serve({ tokenizer: "qwen3" })
      const error = yield* promise(() =>
        sdk(baseURL).chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "hi" }], tools }).then(() => undefined, (e: unknown) => e)
      )
      expect(error).toBeInstanceOf(OpenAI.BadRequestError)
      expect((error as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("tools")
    }).pipe(isolated), 60_000)
})
