/**
 * `tool_choice` `required` and a named function, without a server: what is written after the
 * prompt for each parser and reasoning parser, the template variables (thinking off unless asked),
 * how the reply is read (the written start and what the model went on with), and when a reply
 * does not meet the choice. The whole path, through the SDK, is in `ForcedToolCalls.test.ts`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { OpenAiSchema, ServerConfig } from "../src/index.ts"
import * as AssistantReply from "../src/internal/tools/AssistantReply.ts"
import * as ToolRequest from "../src/internal/ToolRequest.ts"

const tools = [
  { type: "function" as const, function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } } } } },
  { type: "function" as const, function: { name: "get_time" } }
]

const config = (options: Partial<ServerConfig.ServerOptions>) => {
  return Result.getOrThrow(ServerConfig.resolve({ model: "m", ...options }))
}

const plan = (body: Record<string, unknown>, options: Partial<ServerConfig.ServerOptions>) => {
  const decoded = OpenAiSchema.decode(OpenAiSchema.ChatCompletionRequest)({ messages: [{ role: "user", content: "hi" }], ...body })
  return ToolRequest.plan(Result.getOrThrow(decoded), config(options))
}

const planned = (body: Record<string, unknown>, options: Partial<ServerConfig.ServerOptions>) => Result.getOrThrow(plan(body, options))

const named = { type: "function", function: { name: "get_weather" } }

describe("forced tool_choice: what is written, and how the reply is read", () => {
  it("a named function: the call's start up to its arguments, per parser; required: the opening tag", () => {
    expect(planned({ tools, tool_choice: named }, { toolCallParser: "hermes" }).prefill)
      .toBe('<tool_call>\n{"name": "get_weather", "arguments":')
    expect(planned({ tools, tool_choice: named }, { toolCallParser: "qwen3_coder" }).prefill)
      .toBe("<tool_call>\n<function=get_weather>\n")
    expect(planned({ tools, tool_choice: "required" }, { toolCallParser: "hermes" }).prefill).toBe("<tool_call>\n")
    expect(planned({ tools, tool_choice: "required" }, { toolCallParser: "qwen3_coder" }).prefill).toBe("<tool_call>\n")
    expect(planned({ tools }, { toolCallParser: "hermes" }).prefill).toBeUndefined()
    expect(planned({ tools, tool_choice: "none" }, { toolCallParser: "hermes" }).prefill).toBeUndefined()
  })

  it("made without thinking: enable_thinking false unless chat_template_kwargs sets it; deepseek-r1's block closed first", () => {
    expect(planned({ tools, tool_choice: "required" }, { toolCallParser: "hermes" }).variables).toEqual({ enable_thinking: false })
    expect(planned({ tools, tool_choice: "required", chat_template_kwargs: { enable_thinking: true } }, { toolCallParser: "hermes" }).variables)
      .toEqual({ enable_thinking: true })
    expect(planned({ tools }, { toolCallParser: "hermes" }).variables).toBeUndefined()
    expect(planned({ tools, tool_choice: "required" }, { toolCallParser: "hermes", reasoningParser: "qwen3" }).prefill).toBe("<tool_call>\n")
    expect(planned({ tools, tool_choice: named }, { toolCallParser: "hermes", reasoningParser: "deepseek-r1" }).prefill)
      .toBe('</think>\n\n<tool_call>\n{"name": "get_weather", "arguments":')
  })

  it("refused before anything is sent: required without tools, a name not among them, no parser", () => {
    const refusal = (body: Record<string, unknown>, options: Partial<ServerConfig.ServerOptions>) => {
      const result = plan(body, options)
      return Result.isFailure(result) ? [result.failure.status, (result.failure.reason as { param: string }).param] : "accepted"
    }
    expect(refusal({ tool_choice: "required" }, { toolCallParser: "hermes" })).toEqual([400, "tool_choice"])
    expect(refusal({ tools, tool_choice: { type: "function", function: { name: "other" } } }, { toolCallParser: "hermes" }))
      .toEqual([400, "tool_choice.function.name"])
    expect(refusal({ tools, tool_choice: "required" }, {})).toEqual([400, "tools"])
  })

  it("the reply is the written start and what followed; a named function keeps its first call only", () => {
    const reading = planned({ tools, tool_choice: named }, { toolCallParser: "hermes", reasoningParser: "deepseek-r1" }).reading
    const reply = AssistantReply.read(reading, ' {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>', true)
    expect(reply).toMatchObject({ reasoning: "", content: "", calls: [{ name: "get_weather", arguments: '{"city": "Paris"}' }] })
    expect(AssistantReply.unmet(reading, reply, "stop")).toBeUndefined()
    const required = planned({ tools, tool_choice: "required" }, { toolCallParser: "qwen3_coder" }).reading
    const two = AssistantReply.read(required, "<function=get_time>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nLyon\n</parameter>\n</function>\n</tool_call>", true)
    expect(two.calls).toEqual([{ name: "get_time", arguments: "{}" }, { name: "get_weather", arguments: '{"city":"Lyon"}' }])
    expect(AssistantReply.unmet(required, two, "stop")).toBeUndefined()
  })

  it("a reply that is not the call is not met, saying why", () => {
    const reading = planned({ tools, tool_choice: named }, { toolCallParser: "hermes" }).reading
    const unmet = (text: string, finish = "stop") => AssistantReply.unmet(reading, AssistantReply.read(reading, text, true), finish)
    expect(unmet(" I would rather not.")).toMatch(/^the reply is not a call of "get_weather": what the model wrote after the call's opening does not parse/)
    expect(unmet(' {"city": "Par', "length")).toBe("the reply is not a call of \"get_weather\": the token budget ran out before the call was whole")
    const required = planned({ tools, tool_choice: "required" }, { toolCallParser: "hermes" }).reading
    const other = AssistantReply.read(required, '{"name": "launch", "arguments": {}}\n</tool_call>', true)
    expect(AssistantReply.unmet(required, other, "stop")).toBe("the model called \"launch\", which is not one of the request's tools")
    expect(AssistantReply.unmet(required, AssistantReply.read(required, "Sure!", true), "stop")).toMatch(/^the reply is not a tool call/)
    // Nothing forced: nothing to meet.
    const auto = planned({ tools }, { toolCallParser: "hermes" }).reading
    expect(AssistantReply.unmet(auto, AssistantReply.read(auto, "Sure!", true), "stop")).toBeUndefined()
  })

  it("streamed: the first delta names the function, from the written start; joined, the deltas are the reply", () => {
    const reading = planned({ tools, tool_choice: named }, { toolCallParser: "hermes" }).reading
    const deltas = new AssistantReply.Deltas(reading)
    const out = [...deltas.push(" {\"ci"), ...deltas.push("ty\": \"Paris\"}}\n</tool_"), ...deltas.push("call>"), ...deltas.end()]
    expect(out[0]).toMatchObject({ tool_calls: [{ index: 0, type: "function", function: { name: "get_weather", arguments: "" } }] })
    const args = out.flatMap((d) => (d["tool_calls"] as Array<{ function: { arguments?: string } }> | undefined) ?? []).map((t) => t.function.arguments ?? "").join("")
    expect(args).toBe('{"city": "Paris"}')
    expect(out.some((d) => "content" in d)).toBe(false)
    expect(AssistantReply.unmet(reading, deltas.final(), "stop")).toBeUndefined()
  })
})
