/**
 * A Responses request read as a chat (`ResponsesInput.read`): items to messages as vLLM makes
 * them (calls merged into the assistant turn before them, reasoning given to the turn after it),
 * tools and `tool_choice` in the chat shape, and the refusals that name the item or field.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as ResponsesInput from "../src/internal/ResponsesInput.ts"

const read = (body: Record<string, unknown>) => ResponsesInput.read({ input: "hi", ...body } as never)

const param = (body: Record<string, unknown>): string | null | undefined => {
  const result = read(body)
  if (Result.isSuccess(result)) return undefined
  const reason = result.failure.reason
  return reason._tag === "BadRequest" ? reason.param : undefined
}

describe("ResponsesInput", () => {
  it("instructions, a text input, and the chat's sampling fields", () => {
    const result = read({ instructions: "Be terse.", max_output_tokens: 5, temperature: 0, top_p: 0.5, stream: true })
    expect(Result.isSuccess(result)).toBe(true)
    const chat = Result.getOrThrow(result)
    expect(chat.messages).toEqual([{ role: "system", content: "Be terse." }, { role: "user", content: "hi" }])
    expect(chat).toMatchObject({ max_completion_tokens: 5, temperature: 0, top_p: 0.5, stream: true })
  })

  it("a turn's text, reasoning and parallel calls become one assistant message; outputs tool messages", () => {
    const chat = Result.getOrThrow(read({
      input: [
        { role: "user", content: [{ type: "input_text", text: "a" }, { type: "input_text", text: "b" }] },
        { type: "reasoning", id: "rs_1", summary: [], content: [{ type: "reasoning_text", text: "think" }] },
        { type: "message", role: "assistant", content: [{ type: "output_text", text: "Let me look.", annotations: [] }], id: "msg_1", status: "completed" },
        { type: "function_call", call_id: "c1", name: "f", arguments: "{}", id: "fc_1", status: "completed" },
        { type: "function_call", call_id: "c2", name: "g", arguments: "{\"x\":1}" },
        { type: "function_call_output", call_id: "c1", output: "one" },
        { type: "function_call_output", call_id: "c2", output: [{ type: "input_text", text: "two" }] },
        { type: "reasoning", id: "rs_2", summary: [{ type: "summary_text", text: "again" }] },
        { type: "function_call", call_id: "c3", name: "f", arguments: "{}" }
      ],
      tools: [{ type: "function", name: "f" }, { type: "function", name: "g", parameters: { type: "object" }, strict: true }],
      tool_choice: { type: "function", name: "g" },
      parallel_tool_calls: false,
      reasoning: { effort: "low" }
    }))
    const call = (id: string, name: string, args: string) => ({ id, type: "function", function: { name, arguments: args } })
    expect(chat.messages).toEqual([
      { role: "user", content: "a\nb" },
      {
        role: "assistant",
        content: "Let me look.",
        reasoning_content: "think",
        tool_calls: [call("c1", "f", "{}"), call("c2", "g", "{\"x\":1}")]
      },
      { role: "tool", tool_call_id: "c1", content: "one" },
      { role: "tool", tool_call_id: "c2", content: "two" },
      { role: "assistant", content: "", reasoning_content: "again", tool_calls: [call("c3", "f", "{}")] }
    ])
    expect(chat.tools).toEqual([
      { type: "function", function: { name: "f" } },
      { type: "function", function: { name: "g", parameters: { type: "object" }, strict: true } }
    ])
    expect(chat).toMatchObject({ tool_choice: { type: "function", function: { name: "g" } }, parallel_tool_calls: false, reasoning_effort: "low" })
  })

  it("refusals name the item or field", () => {
    expect(param({ input: [{ type: "reasoning", summary: [] }] })).toBe("input[0]")
    expect(param({ input: [{ type: "reasoning", summary: [] }, { type: "reasoning", summary: [] }] })).toBe("input[1]")
    expect(param({ input: [{ type: "reasoning", summary: [], encrypted_content: "x" }] })).toBe("input[0].encrypted_content")
    expect(param({ input: [{ role: "tool", content: "x" }] })).toBe("input[0].role")
    expect(param({ input: [{ role: "user", content: "x", name: "n" }] })).toBe("input[0].name")
    expect(param({ input: [{ type: "computer_call_output" }] })).toBe("input[0].type")
    expect(param({ input: [{ type: "function_call_output", call_id: "c", output: [{ type: "input_file" }] }] })).toBe("input[0].output[0].type")
    expect(param({ tools: [{ type: "function", name: "f", extra: 1 }] })).toBe("tools[0].extra")
    expect(param({ tool_choice: "sometimes" })).toBe("tool_choice")
    expect(param({ tool_choice: "required" })).toBeUndefined()
    expect(param({ stream_options: { include_obfuscation: false } })).toBe("stream_options")
    expect(param({ text: { verbosity: "low" } })).toBe("text.verbosity")
    expect(param({ top_logprobs: 2 })).toBe("top_logprobs")
    expect(param({ max_tool_calls: 3 })).toBe("max_tool_calls")
  })
})
