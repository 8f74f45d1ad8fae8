/**
 * A streamed response's records, as the Responses API streams them (and vLLM): `response.created`
 * and `response.in_progress`; per output item `response.output_item.added`, its content part
 * added, its deltas (`response.reasoning_text.delta`, `response.output_text.delta`,
 * `response.function_call_arguments.delta`), their `.done`, the part done and
 * `response.output_item.done`; then `response.completed` (`response.incomplete` when the token
 * budget ran out) with the whole response and its usage. Each event carries its
 * `sequence_number`, and is framed as `event: <type>` and `data: <json>`; no `[DONE]`.
 *
 * The text is read as a chat's is (`AssistantReply.Deltas`: reasoning, content and tool calls,
 * the same parsers), each of its deltas opening the item it belongs to when another was open. A
 * failure after the headers went out is an `error` event (with OpenAI's error object, what the
 * `openai` SDK raises as an `APIError`), then `response.failed`.
 *
 * @since 0.2.0
 */
import type { Tokenizer } from "@mcore-effect/text"
import { notMet } from "./ForcedCall.ts"
import type { Records } from "./Records.ts"
import type { Finished, Meta } from "../Plan.ts"
import type { Usage } from "../../OpenAiSchema.ts"
import { body, type ServerError } from "../../ServerError.ts"
import * as AssistantReply from "../tools/AssistantReply.ts"
import * as ResponseObject from "./ResponseObject.ts"
import type { ResponsesRequest } from "../../ResponsesRequest.ts"

/** The output item being streamed. */
type Open =
  | { readonly kind: "reasoning"; readonly id: string; text: string }
  | { readonly kind: "message"; readonly id: string; text: string }
  | { readonly kind: "call"; readonly id: string; readonly callId: string; readonly name: string; readonly index: number; text: string }

/** A chat delta, as `AssistantReply.Deltas` makes them. */
interface ChatDelta {
  readonly reasoning_content?: string
  readonly content?: string
  readonly tool_calls?: ReadonlyArray<{
    readonly index: number
    readonly id?: string
    readonly function: { readonly name?: string; readonly arguments: string }
  }>
}

/**
 * The records of one streamed response.
 *
 * @since 0.2.0
 */
export class ResponseEvents implements Records {
  private sequence = 0
  /** The items done, in order (the output of the last event). */
  private readonly items: Array<unknown> = []
  /** The calls done, by their index in the reply (a late piece of arguments finds its item). */
  private readonly calls = new Map<number, { readonly outputIndex: number; readonly id: string }>()
  private open: Open | undefined = undefined
  private readonly deltas: AssistantReply.Deltas | undefined
  private finished: Finished | undefined = undefined

  constructor(
    private readonly meta: Meta,
    private readonly request: ResponsesRequest,
    private readonly tokenizer: Tokenizer.Service,
    private readonly reading: AssistantReply.Reading
  ) {
    this.deltas = reading.reasoning === undefined && reading.calls === undefined ? undefined : new AssistantReply.Deltas(reading)
  }

  private event(type: string, fields: Record<string, unknown>): string {
    const json = JSON.stringify({ type, ...fields, sequence_number: this.sequence++ })
    return `event: ${type}\ndata: ${json}\n\n`
  }

  opening(): string {
    const started = ResponseObject.response(this.meta, this.request, "in_progress", [], null)
    return this.event("response.created", { response: started }) + this.event("response.in_progress", { response: started })
  }

  delta(_index: number, text: string): string {
    if (this.deltas === undefined) return text === "" ? "" : this.onDelta({ content: text })
    let records = ""
    for (const delta of this.deltas.push(text)) records += this.onDelta(delta as ChatDelta)
    return records
  }

  deltaLogprobs(): undefined {
    return undefined
  }

  private onDelta(delta: ChatDelta): string {
    let records = ""
    if (delta.reasoning_content !== undefined) {
      records += this.ensure("reasoning")
      const open = this.open!
      open.text += delta.reasoning_content
      records += this.event("response.reasoning_text.delta", this.at(open, { content_index: 0, delta: delta.reasoning_content }))
    }
    if (delta.content !== undefined) {
      records += this.ensure("message")
      const open = this.open!
      open.text += delta.content
      records += this.event("response.output_text.delta", this.at(open, { content_index: 0, delta: delta.content, logprobs: [] }))
    }
    for (const call of delta.tool_calls ?? []) {
      if (call.id !== undefined) {
        records += this.close("completed")
        const open: Open = { kind: "call", id: ResponseObject.itemId("fc"), callId: call.id, name: call.function.name ?? "", index: call.index, text: "" }
        this.open = open
        const item = ResponseObject.callItem(open.id, open.callId, open.name, "", "in_progress")
        records += this.event("response.output_item.added", { output_index: this.items.length, item })
      }
      const args = call.function.arguments
      if (args === "") continue
      const open = this.open
      if (open !== undefined && open.kind === "call" && open.index === call.index) {
        open.text += args
        records += this.event("response.function_call_arguments.delta", this.at(open, { delta: args }))
      } else {
        // Arguments of a call already done (the parser read more of it late): its item takes them.
        const done = this.calls.get(call.index)
        if (done === undefined) continue
        const item = this.items[done.outputIndex] as { arguments: string }
        item.arguments += args
        records += this.event("response.function_call_arguments.delta", { item_id: done.id, output_index: done.outputIndex, delta: args })
      }
    }
    return records
  }

  /** `item_id` and `output_index` of the open item, and `fields`. */
  private at(open: Open, fields: Record<string, unknown>): Record<string, unknown> {
    return { item_id: open.id, output_index: this.items.length, ...fields }
  }

  /** Opens an item of `kind` unless one is open: the open item of another kind is done first. */
  private ensure(kind: "reasoning" | "message"): string {
    if (this.open?.kind === kind) return ""
    let records = this.close("completed")
    const id = ResponseObject.itemId(kind === "reasoning" ? "rs" : "msg")
    const open: Open = { kind, id, text: "" }
    this.open = open
    const output_index = this.items.length
    if (kind === "reasoning") {
      const item = { type: "reasoning", id, summary: [], content: [], encrypted_content: null, status: "in_progress" }
      records += this.event("response.output_item.added", { output_index, item })
      records += this.event("response.content_part.added", { item_id: id, output_index, content_index: 0, part: { type: "reasoning_text", text: "" } })
    } else {
      records += this.event("response.output_item.added", { output_index, item: ResponseObject.messageItem(id, "", "in_progress") })
      records += this.event("response.content_part.added", { item_id: id, output_index, content_index: 0, part: ResponseObject.textPart("") })
    }
    return records
  }

  /** The events that end the open item, if one is. */
  private close(status: "completed" | "incomplete"): string {
    const open = this.open
    if (open === undefined) return ""
    this.open = undefined
    const output_index = this.items.length
    const { id, text } = open
    let records = ""
    if (open.kind === "reasoning") {
      const item = ResponseObject.reasoningItem(id, text)
      const part = { type: "reasoning_text", text }
      records += this.event("response.reasoning_text.done", { item_id: id, output_index, content_index: 0, text })
      records += this.event("response.content_part.done", { item_id: id, output_index, content_index: 0, part })
      records += this.event("response.output_item.done", { output_index, item })
      this.items.push(item)
    } else if (open.kind === "message") {
      const item = ResponseObject.messageItem(id, text, status)
      records += this.event("response.output_text.done", { item_id: id, output_index, content_index: 0, text, logprobs: [] })
      records += this.event("response.content_part.done", { item_id: id, output_index, content_index: 0, part: ResponseObject.textPart(text) })
      records += this.event("response.output_item.done", { output_index, item })
      this.items.push(item)
    } else {
      const item = ResponseObject.callItem(id, open.callId, open.name, text, "completed")
      records += this.event("response.function_call_arguments.done", { item_id: id, output_index, name: open.name, arguments: text })
      records += this.event("response.output_item.done", { output_index, item })
      this.calls.set(open.index, { outputIndex: output_index, id })
      this.items.push(item)
    }
    return records
  }

  closing(_index: number, finished: Finished): string {
    this.finished = finished
    let records = ""
    if (this.deltas !== undefined) for (const delta of this.deltas.end()) records += this.onDelta(delta as ChatDelta)
    // Nothing at all: an empty message, as a plain answer has (`ResponseObject.hasMessage`).
    if (this.items.length === 0 && this.open === undefined) records += this.ensure("message")
    return records + this.close(finished.finishReason === "length" ? "incomplete" : "completed")
  }

  refusal(_index: number, finished: Finished): ServerError | undefined {
    if (this.reading.forced === undefined || this.deltas === undefined) return undefined
    return notMet(this.reading, this.deltas.final(), finished)
  }

  end(total: Usage): string {
    const finished = this.finished!
    const status = ResponseObject.statusOf(finished)
    const used = ResponseObject.usage(total, ResponseObject.reasoningTokens(this.tokenizer, this.reading, finished))
    const response = ResponseObject.response(this.meta, this.request, status, this.items, used)
    return this.event(status === "incomplete" ? "response.incomplete" : "response.completed", { response })
  }

  failure(error: ServerError): string {
    const { error: shown } = body(error)
    const failed = ResponseObject.response(this.meta, this.request, "failed", this.items, null, {
      code: shown.code ?? shown.type,
      message: shown.message
    })
    return this.event("error", { code: shown.code, message: shown.message, param: shown.param, error: shown }) +
      this.event("response.failed", { response: failed })
  }
}
