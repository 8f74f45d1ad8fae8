/**
 * `POST /v1/responses` through the official `openai` SDK's `responses.create`, with the real Qwen3
 * tokenizer and chat template: a plain response and the same streamed (the API's events, in
 * sequence), both the text a chat completion of the same messages gets; a function tool call and
 * its reasoning, plain and streamed, sent back with its result (the reasoning and the call rendered
 * back into the prompt); stateful and output-changing fields refused by name with nothing sent.
 */
import { describe, expect, it } from "@effect/vitest"
import type { TestCluster } from "@mcore-effect/testkit"
import { Effect } from "effect"
import OpenAI from "openai"
import { isolated, post, qwen3, refusal, request, script, sdk, serve } from "./support/Serve.ts"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const weather: OpenAI.Responses.FunctionTool = {
  type: "function",
  name: "get_weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false
}

const thinking = "\nThe user wants the weather; I will call the tool.\n"
const callText = `<think>${thinking}</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>`

/** The prompt's end when a call of get_weather is forced (Hermes): the model writes its arguments. */
const forcedWeather = "<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\":"

const served = Effect.gen(function*() {
  const tokenizer = yield* qwen3
  const continuations = script(tokenizer, [
    [["Say no", forcedWeather], " I would rather not."],
    [["weather in Rome", forcedWeather], ' {"city": "Rome"}}\n</tool_call>'],
    // Only when the call's reasoning, the call and its result were all rendered back.
    [["I will call the tool", "<tool_call>", "<tool_response>", "18 degrees"], "It is 18 degrees in Paris."],
    [["\"get_weather\"", "weather in Paris"], callText]
  ])
  return yield* serve({
    tokenizer: "qwen3",
    server: { toolCallParser: "hermes", reasoningParser: "qwen3" },
    cluster: { engine: { continuations, defaultTokensToGenerate: 512 } }
  })
})

/** A usage without its cached tokens (the engines cache prefixes: a prompt sent again is cached). */
const uncached = ({ input_tokens_details: _, ...usage }: OpenAI.Responses.ResponseUsage) => usage

/** SUBMIT_REQUEST messages the engines received so far. */
const submits = (cluster: TestCluster.Handle) =>
  Effect.map(
    Effect.forEach(cluster.engines, (e) => e.snapshot),
    (s) => s.reduce((n, x) => n + x.received.filter((m) => m.name === "SUBMIT_REQUEST").length, 0)
  )

describe("the Responses API through the openai SDK", () => {
  it.live("plain and streamed: the chat's text, the API's events in sequence, usage, store false", () =>
    Effect.gen(function*() {
      const { baseURL, url } = yield* serve({ tokenizer: "qwen3" })
      const openai = sdk(baseURL)
      const input = "Name three rivers. 你好 👋"
      const instructions = "You are terse."
      const chat = yield* promise(() =>
        openai.chat.completions.create({
          model: "test-model",
          messages: [{ role: "system", content: instructions }, { role: "user", content: input }],
          max_tokens: 6
        })
      )
      const plain = yield* promise(() => openai.responses.create({ model: "test-model", input, instructions, max_output_tokens: 6 }))
      expect(plain.object).toBe("response")
      expect(plain.id).toMatch(/^resp_/)
      expect(plain.status).toBe("incomplete")
      expect(plain.incomplete_details).toEqual({ reason: "max_output_tokens" })
      // Not in the SDK's type of a response, but in the API's: nothing is stored.
      expect((plain as unknown as { store: boolean }).store).toBe(false)
      expect(plain.instructions).toBe(instructions)
      expect(plain.output_text).toBe(chat.choices[0]!.message.content)
      expect(plain.output).toHaveLength(1)
      expect(plain.output[0]).toMatchObject({ type: "message", role: "assistant", status: "incomplete" })
      // The engines cache prefixes: the chat's prompt, the same, is cached by now.
      expect(plain.usage).toEqual({
        input_tokens: chat.usage!.prompt_tokens,
        input_tokens_details: { cached_tokens: expect.any(Number) },
        output_tokens: 6,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: chat.usage!.prompt_tokens + 6
      })

      // Message items with text parts, as a conversation is sent; and the stream of its events.
      const stream = yield* promise(() =>
        openai.responses.create({
          model: "test-model",
          input: [
            { role: "system", content: [{ type: "input_text", text: instructions }] },
            { type: "message", role: "user", content: input }
          ],
          max_output_tokens: 6,
          stream: true
        })
      )
      const events: Array<OpenAI.Responses.ResponseStreamEvent> = []
      yield* promise(async () => {
        for await (const event of stream) events.push(event)
      })
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i))
      const types = events.map((e) => e.type)
      expect(types.slice(0, 4)).toEqual(["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"])
      expect(types.slice(-4)).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"])
      const deltas = events.flatMap((e) => e.type === "response.output_text.delta" ? [e.delta] : [])
      expect(deltas.length).toBeGreaterThan(1)
      expect(deltas.join("")).toBe(plain.output_text)
      const last = events.at(-1) as OpenAI.Responses.ResponseIncompleteEvent
      expect(uncached(last.response.usage!)).toEqual(uncached(plain.usage!))
      expect(last.response.output).toHaveLength(1)

      // The SDK's stream helper gives the same final response.
      const final = yield* promise(() =>
        openai.responses.stream({ model: "test-model", input, instructions, max_output_tokens: 6 }).finalResponse()
      )
      expect(final.output_text).toBe(plain.output_text)

      const metrics = yield* request(`${url}/metrics`)
      expect(metrics.text).toMatch(/mcore_server_requests_total\{[^}]*route="\/v1\/responses"[^}]*status="200"[^}]*\} 3/)
    }).pipe(isolated), 60_000)

  it.live("a function call and its reasoning, plain and streamed, sent back with its result", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* served
      const openai = sdk(baseURL)
      const input: Array<OpenAI.Responses.ResponseInputItem> = [{ role: "user", content: "What is the weather in Paris?" }]
      const first = yield* promise(() => openai.responses.create({ model: "test-model", input, tools: [weather] }))
      expect(first.status).toBe("completed")
      expect(first.output.map((item) => item.type)).toEqual(["reasoning", "function_call"])
      const reasoning = first.output[0] as OpenAI.Responses.ResponseReasoningItem
      expect(reasoning.content).toEqual([{ type: "reasoning_text", text: thinking }])
      expect(reasoning.id).toMatch(/^rs_/)
      const call = first.output[1] as OpenAI.Responses.ResponseFunctionToolCall
      expect(call).toMatchObject({ name: "get_weather", status: "completed" })
      expect(call.call_id).toMatch(/^call_[0-9a-f]{24}$/)
      expect(JSON.parse(call.arguments)).toEqual({ city: "Paris" })
      // The tokens between <think> and </think> (single tokens of Qwen3's), as vLLM counts them.
      const tokenizer = yield* qwen3
      expect(first.usage!.output_tokens_details.reasoning_tokens).toBe(tokenizer.encode(thinking, { addSpecialTokens: false }).length)

      // Streamed: the same items, the arguments in deltas.
      const stream = yield* promise(() => openai.responses.create({ model: "test-model", input, tools: [weather], stream: true }))
      const events: Array<OpenAI.Responses.ResponseStreamEvent> = []
      yield* promise(async () => {
        for await (const event of stream) events.push(event)
      })
      const reasoningText = events.flatMap((e) => e.type === "response.reasoning_text.delta" ? [e.delta] : []).join("")
      expect(reasoningText).toBe(thinking)
      const args = events.flatMap((e) => e.type === "response.function_call_arguments.delta" ? [e.delta] : []).join("")
      expect(JSON.parse(args)).toEqual({ city: "Paris" })
      const done = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent
      expect(done.type).toBe("response.completed")
      expect(done.response.output.map((item) => item.type)).toEqual(["reasoning", "function_call"])
      expect((done.response.output[1] as OpenAI.Responses.ResponseFunctionToolCall).arguments).toBe(args)
      expect(uncached(done.response.usage!)).toEqual(uncached(first.usage!))

      // The output sent back with the call's result, as the API's documentation does it.
      const second = yield* promise(() =>
        openai.responses.create({
          model: "test-model",
          tools: [weather],
          input: [
            ...input,
            // What the API's documentation sends back: the output items as they came.
            ...first.output as Array<OpenAI.Responses.ResponseInputItem>,
            { type: "function_call_output", call_id: call.call_id, output: "18 degrees, sunny" }
          ]
        })
      )
      expect(second.output_text).toBe("It is 18 degrees in Paris.")
      expect(second.output.map((item) => item.type)).toEqual(["message"])
    }).pipe(isolated), 60_000)

  it.live("stateful and output-changing fields refused by name, nothing sent", () =>
    Effect.gen(function*() {
      const { baseURL, cluster } = yield* served
      const openai = sdk(baseURL)
      const before = yield* submits(cluster)
      const previous = yield* refusal(() => openai.responses.create({ model: "test-model", input: "hi", previous_response_id: "resp_1" }))
      expect(previous).toBeInstanceOf(OpenAI.BadRequestError)
      expect(previous.param).toBe("previous_response_id")
      expect(previous.message).toMatch(/stores no responses/)
      const cases: Array<readonly [Record<string, unknown>, string]> = [
        [{ store: true }, "store"],
        [{ background: true }, "background"],
        [{ conversation: "conv_1" }, "conversation"],
        [{ prompt: { id: "pmpt_1" } }, "prompt"],
        [{ text: { format: { type: "json_schema", name: "x", schema: {} } } }, "text.format"],
        [{ include: ["message.output_text.logprobs"] }, "include[0]"],
        [{ truncation: "auto" }, "truncation"],
        [{ reasoning: { summary: "auto" } }, "reasoning.summary"],
        [{ tools: [{ type: "web_search" }] }, "tools[0].type"],
        [{ tools: [{ ...weather, name: "has space" }] }, "tools[0].name"],
        [{ tools: [weather], tool_choice: { type: "function", name: "other" } }, "tool_choice.name"],
        [{ tools: [weather], tool_choice: { type: "web_search" } }, "tool_choice.type"],
        [{ input: [{ type: "item_reference", id: "msg_1" }] }, "input[0]"],
        [{ input: [{ role: "user", content: [{ type: "input_image", image_url: "data:," }] }] }, "input[0].content[0].type"],
        [{ input: [{ type: "function_call", call_id: "c", name: "f" }] }, "input[0].arguments"],
        [{ input: [] }, "input"],
        [{ max_output_tokens: 1_000_000 }, "max_output_tokens"],
        [{ temperature: 3 }, "temperature"],
        [{ guided_json: {} }, "guided_json"],
        [{ cache_salt: "s" }, "cache_salt"],
        [{ priority: 1 }, "priority"],
        [{ max_tokenz: 5 }, "max_tokenz"]
      ]
      for (const [body, param] of cases) {
        const error = yield* refusal(() => openai.responses.create({ model: "test-model", input: "hi", ...body } as never))
        expect(error, JSON.stringify(body)).toBeInstanceOf(OpenAI.BadRequestError)
        expect(error.param, JSON.stringify(body)).toBe(param)
      }
      // Fields that cannot change the output are accepted, and named in x-ignored-fields; store
      // false is what every response says.
      const accepted = yield* promise(() =>
        openai.responses.create({
          model: "test-model",
          input: "hi",
          store: false,
          metadata: { team: "a" },
          user: "u",
          safety_identifier: "s",
          prompt_cache_key: "k",
          service_tier: "auto",
          truncation: "disabled",
          text: { format: { type: "text" } },
          max_output_tokens: 2,
          priority: 0
        } as OpenAI.Responses.ResponseCreateParamsNonStreaming).withResponse()
      )
      // The routing keys are taken (and repeated), not ignored.
      expect(accepted.data).toMatchObject({ store: false, metadata: { team: "a" }, status: "incomplete", user: "u", prompt_cache_key: "k" })
      expect(accepted.response.headers.get("x-ignored-fields")).toBe("store, safety_identifier, service_tier, priority")
      const metrics = yield* request(`${baseURL.slice(0, -"/v1".length)}/metrics`)
      expect(metrics.text).toMatch(/mcore_server_ignored_fields_total\{[^}]*field="priority"[^}]*\} 1/)
      expect(yield* submits(cluster)).toBe(before + 1)
    }).pipe(isolated), 60_000)

  it.live("a forced function call: made, or a reply that is not the call refused (streamed: error, then response.failed)", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* served
      const openai = sdk(baseURL)
      const forced = { type: "function", name: "get_weather" } as const
      const rome = yield* promise(() =>
        openai.responses.create({ model: "test-model", input: "What is the weather in Rome?", tools: [weather], tool_choice: forced })
      )
      expect(rome.output.map((item) => item.type)).toEqual(["function_call"])
      expect(JSON.parse((rome.output[0] as OpenAI.Responses.ResponseFunctionToolCall).arguments)).toEqual({ city: "Rome" })

      const body = { model: "test-model", input: "Say no.", tools: [weather], tool_choice: forced }
      const plain = yield* refusal(() => openai.responses.create(body))
      expect(plain).toBeInstanceOf(OpenAI.InternalServerError)
      expect(plain.code).toBe("tool_choice_not_met")

      const raw = yield* post(`${baseURL}/responses`, { ...body, stream: true })
      expect(raw.status).toBe(200)
      const events = raw.text.split("\n\n").filter((r) => r.length > 0).map((record) => {
        const [event, data] = record.split("\n")
        const parsed = JSON.parse(data!.slice("data: ".length))
        expect(event).toBe(`event: ${parsed.type}`)
        return parsed
      })
      expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i))
      expect(events.at(-2)).toMatchObject({ type: "error", code: "tool_choice_not_met", error: { type: "server_error", code: "tool_choice_not_met" } })
      expect(events.at(-1)).toMatchObject({ type: "response.failed", response: { status: "failed", error: { code: "tool_choice_not_met" } } })
      expect(events.some((e) => e.type === "response.completed")).toBe(false)

      // The SDK raises the error event as an APIError while iterating.
      const raised = yield* refusal(async () => {
        for await (const _ of await openai.responses.create({ ...body, stream: true })) { /* drained */ }
      })
      expect(raised).toBeInstanceOf(OpenAI.APIError)
      expect(raised.message).toContain("tool_choice function \"get_weather\" was not met")
    }).pipe(isolated), 60_000)
})
