/**
 * What a chat request's `tools`, `tool_choice`, `parallel_tool_calls`, `reasoning_effort` and
 * `chat_template_kwargs` ask for: what the chat template is given, and how the replies are read.
 * Checked before anything is sent; each refusal is a 400 naming the field.
 *
 * - `tools` need a tool-call parser (`--tool-call-parser`): without one the server could not tell
 *   a call from text, and a client would get text where it asked for calls.
 * - `tool_choice`: `auto` (the default with tools) and `none` (calls are not looked for; the tools
 *   still reach the template, as vLLM's default); `required` and a named function are enforced:
 *   the engines cannot constrain decoding, so the server writes the start of a call after the
 *   prompt (the parser's `opening`: `<tool_call>\n`, and for a named function its name, up to
 *   its arguments), the model continues it, and the reply is read as that start and what
 *   followed. A reply that is not such a call anyway is answered with an error, never passed off
 *   as one (`AssistantReply.unmet`). The forced call is made without thinking: the template is
 *   given `enable_thinking: false` (Qwen3's templates then write an empty think block into the
 *   prompt) unless `chat_template_kwargs` sets it, and with a reasoning parser that expects the
 *   model to close a block the template opened (`deepseek-r1`), the start written closes it
 *   first (`ReasoningParser.skip`).
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
import type { Reading } from "./tools/AssistantReply.ts"

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
  /** Text written after the rendered prompt: a forced call's start (also `reading.prefix`). */
  readonly prefill: string | undefined
}

/** Variables the server gives the template itself. */
const reserved: ReadonlySet<string> = new Set([
  "messages", "tools", "documents", "add_generation_prompt", "continue_final_message",
  "bos_token", "eos_token", "unk_token", "pad_token", "raise_exception", "strftime_now"
])

/** The fields of a chat request read here. */
type ToolFields = Pick<ChatCompletionRequest, "tools" | "tool_choice" | "parallel_tool_calls" | "chat_template_kwargs" | "reasoning_effort">

const variablesOf = (
  request: ToolFields,
  forced: boolean
): Result.Result<Record<string, unknown> | undefined, ServerError> => {
  const kwargs = request.chat_template_kwargs
  const effort = request.reasoning_effort
  if (kwargs == null && effort == null && !forced) return Result.succeed(undefined)
  const out: Record<string, unknown> = {}
  if (effort != null) {
    out["reasoning_effort"] = effort
    if (effort === "none") out["enable_thinking"] = false
  }
  // A forced call is made without thinking (see the module's documentation).
  if (forced) out["enable_thinking"] = false
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
export const plan = (request: ToolFields, config: Resolved): Result.Result<Planned, ServerError> => {
  const tools = request.tools != null && request.tools.length > 0 ? request.tools : null
  const choice = request.tool_choice ?? (tools === null ? "none" : "auto")
  let forced: { readonly name: string | undefined } | undefined
  if (typeof choice === "object") {
    const name = choice.function.name
    if (tools === null || !tools.some((tool) => tool.function.name === name)) {
      return Result.fail(badRequest("tool_choice.function.name", `${JSON.stringify(name)} is not one of the request's tools`))
    }
    forced = { name }
  } else if (choice === "required") {
    if (tools === null) return Result.fail(badRequest("tool_choice", "\"required\" needs tools"))
    forced = { name: undefined }
  }
  const parser = config.toolCallParser
  const looked = tools !== null && (choice === "auto" || forced !== undefined)
  if (looked && parser === undefined) {
    return Result.fail(badRequest("tools", "this server reads no tool calls (start it with --tool-call-parser)"))
  }
  const variables = variablesOf(request, forced !== undefined)
  if (Result.isFailure(variables)) return Result.fail(variables.failure)
  const calls = looked && parser !== undefined
    ? {
      parser,
      tools: tools!.map((tool) => ({ name: tool.function.name, parameters: tool.function.parameters ?? undefined })),
      parallel: request.parallel_tool_calls !== false
    }
    : undefined
  const prefill = forced !== undefined && parser !== undefined
    ? (config.reasoningParser?.skip ?? "") + parser.opening(forced.name)
    : undefined
  const reasoning = config.reasoningParser
  return Result.succeed({
    reading: prefill === undefined ? { reasoning, calls } : { reasoning, calls, prefix: prefill, forced },
    tools,
    variables: variables.success,
    prefill
  })
}
