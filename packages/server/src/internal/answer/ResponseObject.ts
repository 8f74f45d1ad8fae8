/**
 * What `POST /v1/responses` answers: the response object (OpenAI's `Response`, as vLLM fills it:
 * the request's settings repeated, `prompt_cache_key` and `user` (its routing keys) among them,
 * but those it ignores (`safety_identifier`, ..., listed in `x-ignored-fields`); `store: false`
 * since nothing is stored), its output items (a
 * `reasoning` item when the reasoning parser found reasoning, a `message` with the text, a
 * `function_call` per call the tool-call parser found), and its usage (`input_tokens`,
 * `output_tokens`, `total_tokens`, cached and reasoning tokens in the details).
 *
 * @since 0.2.0
 */
import type { Tokenizer } from "@mcore-effect/text"
import { randomBytes } from "node:crypto"
import type { Finished, Meta } from "../Plan.ts"
import type { Usage } from "../../OpenAiSchema.ts"
import * as AssistantReply from "../tools/AssistantReply.ts"
import type { ResponsesRequest } from "../../ResponsesRequest.ts"

/**
 * An output item's id: its kind's prefix (`msg`, `rs`, `fc`) and 24 hex digits.
 *
 * @since 0.2.0
 */
export const itemId = (prefix: "msg" | "rs" | "fc"): string => `${prefix}_${randomBytes(12).toString("hex")}`

/**
 * A response's status: `incomplete` when the token budget ran out, `cancelled` when the request
 * was aborted, else `completed`.
 *
 * @since 0.2.0
 */
export type Status = "completed" | "incomplete" | "cancelled" | "in_progress" | "failed"

/**
 * The status of a finished choice.
 *
 * @since 0.2.0
 */
export const statusOf = (finished: Finished): Status =>
  finished.finishReason === "length" ? "incomplete" : finished.finishReason === "abort" ? "cancelled" : "completed"

/**
 * A `reasoning` item: the reasoning as its content (`reasoning_text`), no summary (none is made).
 *
 * @since 0.2.0
 */
export const reasoningItem = (id: string, text: string) => ({
  type: "reasoning" as const,
  id,
  summary: [],
  content: [{ type: "reasoning_text" as const, text }],
  encrypted_content: null,
  status: "completed" as const
})

/**
 * An `output_text` part.
 *
 * @since 0.2.0
 */
export const textPart = (text: string) => ({ type: "output_text" as const, text, annotations: [], logprobs: [] })

/**
 * A `message` item holding `text`.
 *
 * @since 0.2.0
 */
export const messageItem = (id: string, text: string, status: "completed" | "incomplete" | "in_progress") => ({
  type: "message" as const,
  id,
  role: "assistant" as const,
  status,
  content: status === "in_progress" ? [] : [textPart(text)]
})

/**
 * A `function_call` item.
 *
 * @since 0.2.0
 */
export const callItem = (id: string, callId: string, name: string, args: string, status: "completed" | "in_progress") => ({
  type: "function_call" as const,
  id,
  call_id: callId,
  name,
  arguments: args,
  status
})

/**
 * Whether a reply gets a message item: when it has text, or nothing else (no reasoning, no call).
 *
 * @since 0.2.0
 */
export const hasMessage = (reply: Pick<AssistantReply.Reply, "content" | "reasoning" | "calls">): boolean =>
  reply.content !== "" || (reply.reasoning === "" && reply.calls.length === 0)

/**
 * The output items of a finished reply (not streamed).
 *
 * @since 0.2.0
 */
export const output = (reading: AssistantReply.Reading, finished: Finished): Array<unknown> => {
  const reply = AssistantReply.read(reading, finished.text, true)
  const items: Array<unknown> = []
  if (reply.reasoning !== "") items.push(reasoningItem(itemId("rs"), reply.reasoning))
  if (hasMessage(reply)) items.push(messageItem(itemId("msg"), reply.content, finished.finishReason === "length" ? "incomplete" : "completed"))
  for (const call of AssistantReply.toolCalls(reply.calls)) {
    items.push(callItem(itemId("fc"), call.id, call.function.name, call.function.arguments, "completed"))
  }
  return items
}

/**
 * How many of a reply's generated tokens are its reasoning, as vLLM counts them: those before the
 * token that closed the reasoning (or all, when it never closed), less the one that opened it.
 * Found by a binary search over the decoded prefixes (the reasoning is over from the first
 * prefix that closes it on): about log2(n) decodes.
 *
 * @since 0.2.0
 */
export const reasoningTokens = (
  tokenizer: Tokenizer.Service,
  reading: AssistantReply.Reading,
  finished: Finished
): number => {
  const parser = reading.reasoning
  if (parser === undefined) return 0
  const prefix = reading.prefix ?? ""
  if (parser.split(prefix + finished.text, true).reasoning === "") return 0
  const tokens = finished.tokens
  const over = (k: number) => {
    const split = parser.split(prefix + tokenizer.decode(tokens.slice(0, k)), false)
    return split.extends === "content" || split.content !== ""
  }
  let low = 0
  let high = tokens.length + 1
  while (low < high) {
    const mid = (low + high) >> 1
    if (mid <= tokens.length && over(mid)) high = mid
    else low = mid + 1
  }
  // `low` tokens close the reasoning (the last of them holds the closing tag), or none does.
  const through = low > tokens.length ? tokens.length : low - 1
  const opened = tokens.length > 0 && parser.split(prefix + tokenizer.decode(tokens.slice(0, 1)), false).reasoning === "" ? 1 : 0
  return Math.max(0, through - opened)
}

/**
 * The Responses API's `usage`, from a chat's and the reasoning tokens.
 *
 * @since 0.2.0
 */
export const usage = (total: Usage, reasoning: number) => ({
  input_tokens: total.prompt_tokens,
  input_tokens_details: { cached_tokens: total.prompt_tokens_details.cached_tokens },
  output_tokens: total.completion_tokens,
  output_tokens_details: { reasoning_tokens: reasoning },
  total_tokens: total.total_tokens
})

/**
 * The response object: the request's settings repeated, its status, output and usage (`null`
 * until it is done), and its error when it failed.
 *
 * @since 0.2.0
 */
export const response = (
  meta: Meta,
  request: ResponsesRequest,
  status: Status,
  items: ReadonlyArray<unknown>,
  used: ReturnType<typeof usage> | null,
  error: { readonly code: string; readonly message: string } | null = null
) => ({
  id: meta.id,
  object: "response" as const,
  created_at: meta.created,
  status,
  background: false,
  error,
  incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
  instructions: request.instructions ?? null,
  max_output_tokens: request.max_output_tokens ?? null,
  max_tool_calls: null,
  model: meta.model,
  output: items,
  parallel_tool_calls: request.parallel_tool_calls ?? true,
  previous_response_id: null,
  prompt: null,
  prompt_cache_key: request.prompt_cache_key ?? null,
  reasoning: { effort: request.reasoning?.effort ?? null, summary: null },
  safety_identifier: null,
  service_tier: "default",
  // Nothing is kept once answered, whatever the API's default (true) says.
  store: false,
  temperature: request.temperature ?? 1,
  text: { format: { type: "text" as const }, verbosity: "medium" },
  tool_choice: request.tool_choice ?? "auto",
  tools: request.tools ?? [],
  top_logprobs: 0,
  top_p: request.top_p ?? 1,
  truncation: "disabled",
  usage: used,
  user: request.user ?? null,
  metadata: request.metadata ?? {}
})
