/**
 * A Responses request read as a chat: its refusals first (what would need a stored response, or
 * change the output in a way this server cannot honour, is a 400 naming the field; nothing is
 * stored here, so `store` absent — the API's default, true — is answered as not stored, `store:
 * false`, and `store: true` is refused by `IgnoredFields`), then its `instructions` and `input` items as chat messages, its function tools and
 * `tool_choice` in the chat shape, and its sampling fields: what `ChatAnswer` answers, as it
 * answers a chat completion.
 *
 * Items become messages as vLLM makes them: `instructions` a first system message, a text input
 * one user message, a message item a message of its role (text parts joined with newlines, as a
 * chat's), `function_call` items the tool calls of an assistant message (merged into the
 * assistant message before them, and with each other), `function_call_output` a tool message, and
 * a `reasoning` item's text the `reasoning_content` of the assistant turn after it (what the chat
 * templates render back, as they do a chat's: `ChatMessages` gives it under both names).
 *
 * @since 0.2.0
 */
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import type { ChatFields } from "./ChatAnswer.ts"
import type * as OpenAiSchema from "../OpenAiSchema.ts"
import { decode } from "../OpenAiSchema.ts"
import { badRequest, type ServerError } from "../ServerError.ts"
import type * as ToolSchema from "./tools/ToolSchema.ts"
import {
  FunctionCallItem,
  FunctionCallOutputItem,
  FunctionChoice,
  FunctionTool,
  MessageItem,
  ReasoningItem,
  type ResponsesRequest,
  TextPart
} from "../ResponsesRequest.ts"

/**
 * A Responses request as a chat: the chat fields `ChatAnswer` reads, its messages (an assistant
 * turn's reasoning as its `reasoning_content`, as a chat sends it back), and the request itself
 * (what the response repeats).
 *
 * @since 0.2.0
 */
export interface Read extends ChatFields {
  readonly messages: ReadonlyArray<OpenAiSchema.ChatMessage>
  readonly responses: ResponsesRequest
}

const stateless = "this server stores no responses"

/**
 * The first field asking for what this server does not do, as a 400 naming it.
 *
 * @since 0.2.0
 */
export const refusal = (request: ResponsesRequest): ServerError | undefined => {
  if (request.background === true) return badRequest("background", `background responses must be stored, and ${stateless}`)
  if (request.previous_response_id != null) {
    return badRequest("previous_response_id", `${stateless}, so none can be continued; send the whole conversation as input`)
  }
  if (request.conversation != null) return badRequest("conversation", `${stateless} and no conversations; send the whole conversation as input`)
  if (request.prompt != null) return badRequest("prompt", "stored prompt templates are not supported")
  if (request.context_management != null) return badRequest("context_management", "not supported")
  if (request.moderation != null) return badRequest("moderation", "not supported")
  if (request.max_tool_calls != null) return badRequest("max_tool_calls", "not supported")
  if (request.truncation === "auto") return badRequest("truncation", "prompts are never truncated here (one that does not fit is refused); only \"disabled\"")
  const format = request.text?.format
  if (format != null && format["type"] !== "text") {
    return badRequest("text.format", `${JSON.stringify(format["type"])} is not supported (only "text")`)
  }
  const verbosity = request.text?.verbosity
  if (verbosity != null && verbosity !== "medium") return badRequest("text.verbosity", "not supported (only \"medium\")")
  if (request.reasoning?.summary != null) return badRequest("reasoning.summary", "reasoning summaries are not made (the reasoning item carries the reasoning itself)")
  if (request.reasoning?.generate_summary != null) return badRequest("reasoning.generate_summary", "reasoning summaries are not made")
  const include = request.include ?? []
  if (include.length > 0) return badRequest("include[0]", `${JSON.stringify(include[0])} is not supported`)
  if (request.top_logprobs != null && request.top_logprobs > 0) return badRequest("top_logprobs", "log probs are not supported on /v1/responses")
  if (request.stream_options != null && request.stream !== true) return badRequest("stream_options", "only allowed when stream is true")
  return undefined
}

/** A strict decode of `value` at `path`: its errors name the field under the path. */
const decodeAt = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) => {
  const decodeOne = decode(schema)
  return (value: unknown, path: string): Result.Result<S["Type"], ServerError> => {
    const decoded = decodeOne(value)
    if (Result.isSuccess(decoded)) return decoded
    const reason = decoded.failure.reason
    if (reason._tag !== "BadRequest") return decoded
    return Result.fail(badRequest(reason.param === null ? path : `${path}.${reason.param}`.replace(".[", "["), reason.why))
  }
}

const decodeMessage = decodeAt(MessageItem)
const decodeTextPart = decodeAt(TextPart)
const decodeCall = decodeAt(FunctionCallItem)
const decodeOutput = decodeAt(FunctionCallOutputItem)
const decodeReasoning = decodeAt(ReasoningItem)
const decodeTool = decodeAt(FunctionTool)
const decodeChoice = decodeAt(FunctionChoice)

/** Text parts joined (as a chat's are); any other part refused by its type. */
const partsText = (parts: ReadonlyArray<Record<string, unknown>>, path: string): Result.Result<string, ServerError> => {
  const texts: Array<string> = []
  for (let j = 0; j < parts.length; j++) {
    const part = parts[j]!
    const at = `${path}[${j}]`
    if (part["type"] !== "input_text" && part["type"] !== "output_text") {
      return Result.fail(badRequest(`${at}.type`, `${JSON.stringify(part["type"])} parts are not supported (only input_text and output_text)`))
    }
    const text = decodeTextPart(part, at)
    if (Result.isFailure(text)) return Result.fail(text.failure)
    texts.push(text.success.text)
  }
  return Result.succeed(texts.join("\n"))
}

type Message = { -readonly [K in keyof OpenAiSchema.ChatMessage]: OpenAiSchema.ChatMessage[K] }

/** The input items as chat messages. */
const messagesOf = (request: ResponsesRequest): Result.Result<Array<Message>, ServerError> => {
  const messages: Array<Message> = []
  if (request.instructions != null) messages.push({ role: "system", content: request.instructions })
  if (typeof request.input === "string") {
    messages.push({ role: "user", content: request.input })
    return Result.succeed(messages)
  }
  if (request.input.length === 0) return Result.fail(badRequest("input", "must not be empty"))
  // Reasoning read and not yet given to the assistant turn it led to (where it was read).
  let pending: { readonly text: string; readonly at: string } | undefined
  const assistant = (message: Message) => {
    if (pending !== undefined) message.reasoning_content = pending.text
    pending = undefined
    messages.push(message)
  }
  for (let i = 0; i < request.input.length; i++) {
    const item = request.input[i]!
    const at = `input[${i}]`
    const type = item["type"] ?? "message"
    if (type === "message") {
      const read = decodeMessage(item, at)
      if (Result.isFailure(read)) return Result.fail(read.failure)
      const { content, role } = read.success
      const text = typeof content === "string" ? Result.succeed(content) : partsText(content, `${at}.content`)
      if (Result.isFailure(text)) return Result.fail(text.failure)
      if (role === "assistant") assistant({ role, content: text.success })
      else messages.push({ role, content: text.success })
    } else if (type === "function_call") {
      const read = decodeCall(item, at)
      if (Result.isFailure(read)) return Result.fail(read.failure)
      const call = { id: read.success.call_id, type: "function", function: { name: read.success.name, arguments: read.success.arguments } }
      const last = messages.at(-1)
      // One assistant turn: its text and its calls, or calls made together.
      if (last !== undefined && last.role === "assistant" && pending === undefined) {
        last.tool_calls = [...(last.tool_calls ?? []), call]
      } else assistant({ role: "assistant", content: "", tool_calls: [call] })
    } else if (type === "function_call_output") {
      const read = decodeOutput(item, at)
      if (Result.isFailure(read)) return Result.fail(read.failure)
      const output = read.success.output
      const text = typeof output === "string" ? Result.succeed(output) : partsText(output, `${at}.output`)
      if (Result.isFailure(text)) return Result.fail(text.failure)
      messages.push({ role: "tool", tool_call_id: read.success.call_id, content: text.success })
    } else if (type === "reasoning") {
      const read = decodeReasoning(item, at)
      if (Result.isFailure(read)) return Result.fail(read.failure)
      if (read.success.encrypted_content != null) {
        return Result.fail(badRequest(`${at}.encrypted_content`, "this server makes no encrypted reasoning, and reads none"))
      }
      const parts = read.success.content ?? []
      const text = (parts.length > 0 ? parts : read.success.summary).map((part) => part.text).join("\n")
      if (pending !== undefined) return Result.fail(badRequest(at, "two reasoning items in a row; each goes before the assistant turn it led to"))
      pending = { text, at }
    } else if (type === "item_reference") {
      return Result.fail(badRequest(at, `${stateless}, so no item can be referred to; send the item itself (the AI SDK does with providerOptions.openai.store: false)`))
    } else {
      return Result.fail(badRequest(`${at}.type`, `${JSON.stringify(type)} items are not supported (only message, function_call, function_call_output and reasoning)`))
    }
  }
  if (pending !== undefined) {
    return Result.fail(badRequest(pending.at, "a reasoning item must be followed by the assistant message or function call it led to"))
  }
  return Result.succeed(messages)
}

/** The function tools in the chat shape; any other tool refused by its type. */
const toolsOf = (request: ResponsesRequest): Result.Result<Array<ToolSchema.Tool> | undefined, ServerError> => {
  if (request.tools == null) return Result.succeed(undefined)
  const tools: Array<ToolSchema.Tool> = []
  for (let i = 0; i < request.tools.length; i++) {
    const tool = request.tools[i]!
    const at = `tools[${i}]`
    if (tool["type"] !== "function") {
      return Result.fail(badRequest(`${at}.type`, `${JSON.stringify(tool["type"])} tools are not supported (only function tools)`))
    }
    const read = decodeTool(tool, at)
    if (Result.isFailure(read)) return Result.fail(read.failure)
    const { description, name, parameters, strict } = read.success
    const fn: { -readonly [K in keyof ToolSchema.Tool["function"]]: ToolSchema.Tool["function"][K] } = { name }
    if (description != null) fn.description = description
    if (parameters != null) fn.parameters = parameters
    if (strict != null) fn.strict = strict
    tools.push({ type: "function", function: fn })
  }
  return Result.succeed(tools)
}

/** `tool_choice` in the chat shape. */
const choiceOf = (
  request: ResponsesRequest,
  tools: ReadonlyArray<ToolSchema.Tool> | undefined
): Result.Result<OpenAiSchema.ChatCompletionRequest["tool_choice"], ServerError> => {
  const choice = request.tool_choice
  if (choice == null) return Result.succeed(undefined)
  if (typeof choice === "string") {
    if (choice === "none" || choice === "auto" || choice === "required") return Result.succeed(choice)
    return Result.fail(badRequest("tool_choice", `${JSON.stringify(choice)} is not one of "none", "auto", "required"`))
  }
  if (choice["type"] !== "function") {
    return Result.fail(badRequest("tool_choice.type", `${JSON.stringify(choice["type"])} is not supported (only a function)`))
  }
  const read = decodeChoice(choice, "tool_choice")
  if (Result.isFailure(read)) return Result.fail(read.failure)
  const name = read.success.name
  if (tools === undefined || !tools.some((tool) => tool.function.name === name)) {
    return Result.fail(badRequest("tool_choice.name", `${JSON.stringify(name)} is not one of the request's tools`))
  }
  return Result.succeed({ type: "function", function: { name } })
}

/**
 * The request read as a chat, or the 400 of its first field that cannot be.
 *
 * @since 0.2.0
 */
export const read = (request: ResponsesRequest): Result.Result<Read, ServerError> => {
  const refused = refusal(request)
  if (refused !== undefined) return Result.fail(refused)
  const messages = messagesOf(request)
  if (Result.isFailure(messages)) return Result.fail(messages.failure)
  const tools = toolsOf(request)
  if (Result.isFailure(tools)) return Result.fail(tools.failure)
  const choice = choiceOf(request, tools.success)
  if (Result.isFailure(choice)) return Result.fail(choice.failure)
  const out: { -readonly [K in keyof Read]: Read[K] } = {
    messages: messages.success,
    responses: request,
    stream: request.stream ?? null,
    temperature: request.temperature ?? null,
    top_p: request.top_p ?? null,
    max_completion_tokens: request.max_output_tokens ?? null
  }
  if (tools.success !== undefined) out.tools = tools.success
  if (choice.success != null) out.tool_choice = choice.success
  if (request.parallel_tool_calls != null) out.parallel_tool_calls = request.parallel_tool_calls
  if (request.reasoning?.effort != null) out.reasoning_effort = request.reasoning.effort
  return Result.succeed(out)
}
