/**
 * `tool_choice: "required"` and a named function through the official `openai` SDK, with the
 * real Qwen3 tokenizer and chat template: the server writes the call's start after the prompt
 * (checked in what the engines received: after Qwen3's empty think block, as `enable_thinking:
 * false` renders it), the test engines go on with a chosen continuation (the testkit's
 * `Continuations`, keyed by the prompt's end), and the reply is read as that call, plain and
 * streamed (the first streamed delta names the function). A continuation that is not the call is
 * answered with a 500 `tool_choice_not_met`, or, streamed, an error record that ends the stream.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Continuations } from "@mcore-effect/testkit"
import type { Tokenizer } from "@mcore-effect/text"
import { Effect } from "effect"
import OpenAI from "openai"
import { isolated, post, qwen3, sdk, serve, submissions, weatherTool } from "./support/Serve.ts"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const tools: Array<OpenAI.Chat.Completions.ChatCompletionTool> = [weatherTool, {
  type: "function",
  function: { name: "get_time", description: "The time in a city", parameters: { type: "object", properties: { city: { type: "string" } } } }
}]

const noThinking = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
const hermesNamed = `${noThinking}<tool_call>\n{"name": "get_weather", "arguments":`
const openingOnly = `${noThinking}<tool_call>\n`
const coderNamed = `${noThinking}<tool_call>\n<function=get_weather>\n`

/** Continuations by what the decoded prompt ends with (and holds), each ended by `<|im_end|>`. */
const script = (
  tokenizer: Tokenizer.Service,
  entries: ReadonlyArray<readonly [string, string, string]>
): Continuations.Script => {
  const end = tokenizer.eosTokenIds[0]!
  const answers = entries.map(([holds, tail, answer]) => [holds, tail, [...tokenizer.encode(answer, { addSpecialTokens: false }), end]] as const)
  return (ids) => {
    const prompt = tokenizer.decode(ids)
    return answers.find(([holds, tail]) => prompt.includes(holds) && prompt.endsWith(tail))?.[2]
  }
}

const servedWith = (parser: "hermes" | "qwen3_coder") =>
  Effect.gen(function*() {
    const tokenizer = yield* qwen3
    const continuations = script(tokenizer, [
      ["weather in Paris", hermesNamed, ' {"city": "Paris"}}\n</tool_call>'],
      ["weather in Lyon", openingOnly, '{"name": "get_weather", "arguments": {"city": "Lyon"}}\n</tool_call>'],
      ["Say no", hermesNamed, " I would rather not."],
      ["Say no", openingOnly, "Sure, here is the weather: sunny."],
      ["Call launch", openingOnly, '{"name": "launch", "arguments": {}}\n</tool_call>'],
      ["weather in Paris", coderNamed, "<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>"]
    ])
    const served = yield* serve({
      tokenizer: "qwen3",
      server: { toolCallParser: parser, reasoningParser: "qwen3" },
      cluster: { engine: { continuations, defaultTokensToGenerate: 64 } }
    })
    return { ...served, openai: sdk(served.baseURL) }
  })

const user = (content: string): Array<OpenAI.Chat.Completions.ChatCompletionMessageParam> => [{ role: "user", content }]
const named = { type: "function", function: { name: "get_weather" } } as const

/** The decoded prompt of the last submission. */
const lastPrompt = (served: Effect.Success<ReturnType<typeof servedWith>>) =>
  Effect.map(submissions(served.cluster), (all) => served.tokenizer.decode(all[all.length - 1]!.prompt as ReadonlyArray<number>))

/** A streamed chat, accumulated as the SDK's users accumulate it. */
const streamed = (openai: OpenAI, body: OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming) =>
  promise(async () => {
    const stream = await openai.chat.completions.create(body)
    let content = ""
    let finish: string | null = null
    const calls: Array<{ id: string; name: string; arguments: string }> = []
    let firstCallDelta: unknown
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        content += c.delta.content ?? ""
        for (const t of c.delta.tool_calls ?? []) {
          firstCallDelta ??= t
          if (t.id !== undefined) calls.push({ id: t.id, name: t.function!.name!, arguments: t.function!.arguments ?? "" })
          else calls[t.index]!.arguments += t.function!.arguments ?? ""
        }
        finish = c.finish_reason ?? finish
      }
    }
    return { content, finish, calls, firstCallDelta }
  })

describe("forced tool calls through the openai SDK", () => {
  it.live("a named function: its call's start written after the prompt, the model's arguments read as that call, plain and streamed", () =>
    Effect.gen(function*() {
      const served = yield* servedWith("hermes")
      const { openai } = served
      const body = { model: "test-model", messages: user("What is the weather in Paris?"), tools, tool_choice: named }
      const chat = yield* promise(() => openai.chat.completions.create(body))
      expect((yield* lastPrompt(served)).endsWith(hermesNamed)).toBe(true)
      const choice = chat.choices[0]!
      expect(choice.finish_reason).toBe("tool_calls")
      expect(choice.message.content).toBeNull()
      expect((choice.message as unknown as { reasoning_content: unknown }).reasoning_content).toBeNull()
      const call = choice.message.tool_calls![0]! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall
      expect(choice.message.tool_calls).toHaveLength(1)
      expect([call.function.name, JSON.parse(call.function.arguments)]).toEqual(["get_weather", { city: "Paris" }])

      const stream = yield* streamed(openai, { ...body, stream: true })
      expect(stream.firstCallDelta).toMatchObject({ index: 0, type: "function", function: { name: "get_weather", arguments: "" } })
      expect(stream.calls.map((c) => [c.name, c.arguments])).toEqual([["get_weather", call.function.arguments]])
      expect([stream.content, stream.finish]).toEqual(["", "tool_calls"])
    }).pipe(isolated), 60_000)

  it.live("required: the opening tag written, the model's call read, plain and streamed", () =>
    Effect.gen(function*() {
      const served = yield* servedWith("hermes")
      const { openai } = served
      const body = { model: "test-model", messages: user("What is the weather in Lyon?"), tools, tool_choice: "required" as const }
      const chat = yield* promise(() => openai.chat.completions.create(body))
      expect((yield* lastPrompt(served)).endsWith(openingOnly)).toBe(true)
      const call = chat.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall
      expect([call.function.name, JSON.parse(call.function.arguments)]).toEqual(["get_weather", { city: "Lyon" }])
      expect(chat.choices[0]!.finish_reason).toBe("tool_calls")
      const stream = yield* streamed(openai, { ...body, stream: true })
      expect(stream.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([["get_weather", { city: "Lyon" }]])
      expect(stream.finish).toBe("tool_calls")
      // n = 2: each choice checked, each the call.
      const two = yield* promise(() => openai.chat.completions.create({ ...body, n: 2 }))
      expect(two.choices.map((c) => (c.message.tool_calls![0] as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall).function.name))
        .toEqual(["get_weather", "get_weather"])
    }).pipe(isolated), 60_000)

  it.live("qwen3_coder: a named function's start is its function tag; the parameters read as its arguments", () =>
    Effect.gen(function*() {
      const served = yield* servedWith("qwen3_coder")
      const chat = yield* promise(() =>
        served.openai.chat.completions.create({ model: "test-model", messages: user("What is the weather in Paris?"), tools, tool_choice: named })
      )
      expect((yield* lastPrompt(served)).endsWith(coderNamed)).toBe(true)
      const call = chat.choices[0]!.message.tool_calls![0]! as OpenAI.Chat.Completions.ChatCompletionMessageFunctionToolCall
      expect([call.function.name, JSON.parse(call.function.arguments)]).toEqual(["get_weather", { city: "Paris" }])
      const stream = yield* streamed(served.openai, { model: "test-model", messages: user("What is the weather in Paris?"), tools, tool_choice: named, stream: true })
      expect(stream.firstCallDelta).toMatchObject({ function: { name: "get_weather" } })
      expect(stream.calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([["get_weather", { city: "Paris" }]])
    }).pipe(isolated), 60_000)

  it.live("a reply that is not the call: a 500 tool_choice_not_met, never text passed off as a call; streamed, an error record ends the stream", () =>
    Effect.gen(function*() {
      const served = yield* servedWith("hermes")
      const { openai } = served
      const refused = (body: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming) =>
        promise(() => openai.chat.completions.create(body).then(() => undefined, (error: unknown) => error as InstanceType<typeof OpenAI.APIError>))
      const namedError = yield* refused({ model: "test-model", messages: user("Say no."), tools, tool_choice: named })
      expect(namedError).toBeInstanceOf(OpenAI.InternalServerError)
      expect([namedError!.status, namedError!.type, namedError!.code]).toEqual([500, "server_error", "tool_choice_not_met"])
      expect(namedError!.message).toContain("tool_choice function \"get_weather\" was not met: the reply is not a call of \"get_weather\"")
      const requiredError = yield* refused({ model: "test-model", messages: user("Say no."), tools, tool_choice: "required" })
      expect(requiredError!.message).toContain("tool_choice \"required\" was not met: the reply is not a tool call")
      const unknown = yield* refused({ model: "test-model", messages: user("Call launch."), tools, tool_choice: "required" })
      expect(unknown!.message).toContain("the model called \"launch\", which is not one of the request's tools")

      // Streamed: the call's name went out (it was written), then the error, and nothing after it.
      const raw = yield* post(`${served.baseURL}/chat/completions`, {
        model: "test-model", messages: user("Say no."), tools, tool_choice: named, stream: true
      })
      expect(raw.status).toBe(200)
      const records = raw.text.split("\n\n").filter((r) => r.length > 0).map((r) => JSON.parse(r.slice("data: ".length)))
      expect(records.some((r) => r.choices?.[0]?.delta?.tool_calls?.[0]?.function?.name === "get_weather")).toBe(true)
      expect(records.at(-1)).toMatchObject({ error: { type: "server_error", code: "tool_choice_not_met" } })
      expect(records.some((r) => r.choices?.[0]?.finish_reason != null)).toBe(false)
      // n = 2 streamed (the choices merged): the same error ends the stream.
      const rawTwo = yield* post(`${served.baseURL}/chat/completions`, {
        model: "test-model", messages: user("Say no."), tools, tool_choice: "required", stream: true, n: 2
      })
      const lastTwo = rawTwo.text.split("\n\n").filter((r) => r.length > 0).at(-1)!
      expect(JSON.parse(lastTwo.slice("data: ".length))).toMatchObject({ error: { code: "tool_choice_not_met" } })
      // The SDK raises the error record as an APIError while iterating.
      const sdkError = yield* promise(async () => {
        try {
          const stream = await openai.chat.completions.create({ model: "test-model", messages: user("Say no."), tools, tool_choice: named, stream: true })
          for await (const _ of stream) { /* drained */ }
        } catch (error) {
          return error
        }
        return undefined
      })
      expect(sdkError).toBeInstanceOf(OpenAI.APIError)
      expect(String(sdkError)).toContain("tool_choice function \"get_weather\" was not met")
    }).pipe(isolated), 60_000)
})
