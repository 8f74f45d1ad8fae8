/**
 * What a chat request's `tools`, `tool_choice`, `parallel_tool_calls`, `reasoning_effort` and
 * `chat_template_kwargs` ask for: what the chat template is given, and how the replies are read.
 * Checked before anything is sent; each refusal is a 400 naming the field.
 *
 * - `tools` need a tool-call parser (`--tool-call-parser`): without one the server could not tell
 *   a call from text, and a client would get text where it asked for calls.
 * - `tool_choice`: `auto` (the default with tools) and `none` (calls are not looked for; the tools
 *   still reach the template, as vLLM's default). `required` and a named function are refused: the
 *   engines cannot be made to call a tool, and the server does not pretend they were.
 * - `reasoning_effort`: passed to the template as the variable `reasoning_effort` (templates such
 *   as gpt-oss's read it); `none` also turns Qwen3's thinking off (`enable_thinking: false`) unless
 *   `chat_template_kwargs` says otherwise.
 * - `chat_template_kwargs`: template variables; those the server itself sets (`messages`, `tools`,
 *   `add_generation_prompt`, the special tokens...) are refused.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import type { ChatCompletionRequest } from "../OpenAiSchema.ts"
import type { Resolved } from "../ServerConfig.ts"
import { badRequest, type ServerError } from "../ServerError.ts"
import type { Reading } from "./AssistantReply.ts"

/**
 * What the request's tool and reasoning fields come to.
 *
 * @since 0.1.0
 */
export interface Planned {
  readonly reading: Reading
  /** The template's `tools` (null when none). */
  readonly tools: ReadonlyArray<unknown> | null
  /** Template variables (`chat_template_kwargs`, `reasoning_effort`). */
  readonly variables: Readonly<Record<string, unknown>> | undefined
}

/** Variables the server gives the template itself. */
const reserved: ReadonlySet<string> = new Set([
  "messages", "tools", "documents", "add_generation_prompt", "continue_final_message",
  "bos_token", "eos_token", "unk_token", "pad_token", "raise_exception", "strftime_now"
])

const variablesOf = (request: ChatCompletionRequest): Result.Result<Record<string, unknown> | undefined, ServerError> => {
  const kwargs = request.chat_template_kwargs
  const effort = request.reasoning_effort
  if (kwargs == null && effort == null) return Result.succeed(undefined)
  const out: Record<string, unknown> = {}
  if (effort != null) {
    out["reasoning_effort"] = effort
    if (effort === "none") out["enable_thinking"] = false
  }
  if (kwargs != null) {
    for (const key of Object.keys(kwargs)) {
      if (reserved.has(key)) return Result.fail(badRequest(`chat_template_kwargs.${key}`, "is set by the server"))
      out[key] = kwargs[key]
    }
  }
  return Result.succeed(out)
}

/**
 * The request's tool and reasoning fields, checked against the server's parsers.
 *
 * @since 0.1.0
 */
export const plan = (request: ChatCompletionRequest, config: Resolved): Result.Result<Planned, ServerError> => {
  const tools = request.tools != null && request.tools.length > 0 ? request.tools : null
  const choice = request.tool_choice ?? (tools === null ? "none" : "auto")
  if (typeof choice === "object") {
    const name = choice.function.name
    if (tools === null || !tools.some((tool) => tool.function.name === name)) {
      return Result.fail(badRequest("tool_choice.function.name", `${JSON.stringify(name)} is not one of the request's tools`))
    }
    return Result.fail(badRequest("tool_choice", "a named function is not supported (only \"auto\" and \"none\")"))
  }
  if (choice === "required") return Result.fail(badRequest("tool_choice", "\"required\" is not supported (only \"auto\" and \"none\")"))
  const parser = config.toolCallParser
  if (tools !== null && choice === "auto" && parser === undefined) {
    return Result.fail(badRequest("tools", "this server reads no tool calls (start it with --tool-call-parser)"))
  }
  const variables = variablesOf(request)
  if (Result.isFailure(variables)) return Result.fail(variables.failure)
  const calls = tools !== null && choice === "auto" && parser !== undefined
    ? {
      parser,
      tools: tools.map((tool) => ({ name: tool.function.name, parameters: tool.function.parameters ?? undefined })),
      parallel: request.parallel_tool_calls !== false
    }
    : undefined
  return Result.succeed({ reading: { reasoning: config.reasoningParser, calls }, tools, variables: variables.success })
}
