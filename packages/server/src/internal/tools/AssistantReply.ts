/**
 * An assistant's generated text read as OpenAI's message: the reasoning split off first (when a
 * reasoning parser is set), then the tool calls taken out of what follows the reasoning (when the
 * request has tools and a tool-call parser is set). Calls are only looked for after `</think>`:
 * a call the model considers while thinking is not a call it made (and one made after thinking is
 * never lost in it).
 *
 * @since 0.1.0
 */
import { randomBytes } from "node:crypto"
import type { ReasoningParser } from "./ReasoningParser.ts"
import { withoutObjectEnd } from "./Tags.ts"
import type { Call, Tool, ToolCallParser } from "./ToolCallParser.ts"

/**
 * How a request's replies are read.
 *
 * @since 0.1.0
 */
export interface Reading {
  readonly reasoning: ReasoningParser | undefined
  /** The tool-call parser and the request's tools, when calls are looked for. */
  readonly calls: {
    readonly parser: ToolCallParser
    readonly tools: ReadonlyArray<Tool>
    /** `parallel_tool_calls`: false keeps the first call only. */
    readonly parallel: boolean
  } | undefined
  /**
   * What the server wrote after the prompt as the reply's start (a forced call's opening): the
   * reply is read as this and the generated text after it, which is what the model "wrote".
   */
  readonly prefix?: string | undefined
  /**
   * `tool_choice` forcing a call (`required`: `name` undefined; a named function): the reply must
   * hold one ({@link unmet}); of a named function, only its first call is kept.
   */
  readonly forced?: { readonly name: string | undefined } | undefined
}

/**
 * A text read.
 *
 * @since 0.1.0
 */
export interface Reply {
  readonly reasoning: string
  readonly content: string
  readonly calls: ReadonlyArray<Call>
  /** What more text without `<` would extend as it is (see `ReasoningParser.Split.extends`). */
  readonly extends: "reasoning" | "content" | undefined
}

/**
 * `text` read as `reading` says; `final` false for a text still being generated (see
 * `ToolCallParser.ToolCallParser.parse`).
 *
 * @example
 * ```ts
 * import * as AssistantReply from "./AssistantReply.ts"
 * import * as ReasoningParser from "./ReasoningParser.ts"
 * import * as ToolCallParser from "./ToolCallParser.ts"
 *
 * const reply = AssistantReply.read({
 *   reasoning: ReasoningParser.parsers.get("qwen3"),
 *   calls: { parser: ToolCallParser.parsers.get("hermes")!, tools: [], parallel: true }
 * }, '<think>f it is</think>\n<tool_call>{"name": "f", "arguments": {}}</tool_call>', true)
 * reply.calls // [{ name: "f", arguments: "{}" }]
 * ```
 *
 * @since 0.1.0
 */
export const read = (reading: Reading, generated: string, final: boolean): Reply => {
  const text = reading.prefix === undefined ? generated : reading.prefix + generated
  const split = reading.reasoning === undefined
    ? { reasoning: "", content: text, extends: "content" as const }
    : reading.reasoning.split(text, final)
  const calls = reading.calls
  if (calls === undefined) return { reasoning: split.reasoning, content: split.content, calls: [], extends: split.extends }
  const parsed = calls.parser.parse(split.content, calls.tools, final)
  return {
    reasoning: split.reasoning,
    content: parsed.content,
    calls: calls.parallel && reading.forced?.name === undefined ? parsed.calls : parsed.calls.slice(0, 1),
    extends: split.extends === "content" ? (parsed.endsInContent ? "content" : undefined) : split.extends
  }
}

/**
 * Why a finished reply does not meet the request's forced `tool_choice`, or `undefined` (met, or
 * nothing forced): no call at all (the model wrote something else after the call's opening, or
 * ran out of tokens inside it), a call of another function than the one named, or of a function
 * that is not among the request's tools. The server answers such a reply with an error, never
 * with text where a call was asked for.
 *
 * @example
 * ```ts
 * import * as AssistantReply from "./AssistantReply.ts"
 * import * as ToolCallParser from "./ToolCallParser.ts"
 *
 * const reading = {
 *   reasoning: undefined,
 *   calls: { parser: ToolCallParser.parsers.get("hermes")!, tools: [{ name: "f" }], parallel: true },
 *   prefix: "<tool_call>\n",
 *   forced: { name: undefined }
 * }
 * AssistantReply.unmet(reading, AssistantReply.read(reading, "no", true), "stop") // "the reply is not a tool call ..."
 * ```
 *
 * @since 0.1.0
 */
export const unmet = (reading: Reading, reply: Reply, finishReason: string): string | undefined => {
  const forced = reading.forced
  if (forced === undefined) return undefined
  if (reply.calls.length === 0) {
    const wanted = forced.name === undefined ? "a tool call" : `a call of ${JSON.stringify(forced.name)}`
    const ended = finishReason === "length"
      ? "the token budget ran out before the call was whole"
      : `what the model wrote after the call's opening does not parse as one (finish_reason ${JSON.stringify(finishReason)})`
    return `the reply is not ${wanted}: ${ended}`
  }
  const tools = reading.calls?.tools ?? []
  for (const call of reply.calls) {
    if (forced.name !== undefined && call.name !== forced.name) {
      return `the model called ${JSON.stringify(call.name)}, not ${JSON.stringify(forced.name)}`
    }
    if (!tools.some((tool) => tool.name === call.name)) {
      return `the model called ${JSON.stringify(call.name)}, which is not one of the request's tools`
    }
  }
  return undefined
}

/**
 * A new tool call id (`call_` and 24 hex digits, as vLLM's).
 *
 * @since 0.1.0
 */
export const callId = (): string => `call_${randomBytes(12).toString("hex")}`

/**
 * OpenAI's `tool_calls` of a message.
 *
 * @since 0.1.0
 */
export const toolCalls = (calls: ReadonlyArray<Call>) =>
  calls.map((call) => ({ id: callId(), type: "function" as const, function: { name: call.name, arguments: call.arguments } }))

/**
 * The streamed deltas of one choice: each text delta in, the `delta` objects to send out (the
 * differences between what was read so far and what was sent). A tool call's first delta carries
 * its index, id, type and name with empty arguments, the later ones pieces of its arguments, as
 * vLLM streams them; joined, they are the unstreamed call.
 *
 * @since 0.1.0
 */
export class Deltas {
  private text = ""
  private reasoning = ""
  private content = ""
  private readonly calls: Array<{ name: string; arguments: string }> = []
  /**
   * The part a text without `<` extends, when the last reading says (its `extends`) and all of
   * it was sent: every tag the parsers read starts with `<`, so such a text is more of that part,
   * and is sent without reading the whole text again: reading it all per token costs the length
   * of the text, this one `includes` of the new text (PERFORMANCE.md#tool-arguments).
   */
  private plain: "content" | "reasoning" | undefined = undefined
  /**
   * The call whose arguments a text without `<` extends, and what its text holds back, when the
   * last reading ended in it with everything sent (see `ToolCallParser.Call.held`): reading it all
   * per token costs the length of the text, this one `includes` and one trailing match of the new
   * text (PERFORMANCE.md#tool-arguments).
   */
  private plainArguments: { readonly index: number; held: string } | undefined = undefined
  /** The last reading ended in a call that text without `<` leaves as it is (`Call.quiet`). */
  private quiet = false
  private finalReply: Reply | undefined = undefined

  constructor(private readonly reading: Reading) {}

  /** The deltas after `text` came. */
  push(text: string): Array<Record<string, unknown>> {
    if (text === "") return []
    this.text += text
    if (this.plain !== undefined && !text.includes("<")) {
      if (this.plain === "content") {
        this.content += text
        return [{ content: text }]
      }
      this.reasoning += text
      return [{ reasoning_content: text, reasoning: text }]
    }
    if (this.quiet && !text.includes("<")) return []
    const open = this.plainArguments
    if (open !== undefined && !text.includes("<")) {
      const written = open.held + text
      const args = withoutObjectEnd(written)
      open.held = written.slice(args.length)
      if (args === "") return []
      this.calls[open.index]!.arguments += args
      return [{ tool_calls: [{ index: open.index, function: { arguments: args } }] }]
    }
    const reply = read(this.reading, this.text, false)
    const out = this.diff(reply)
    // Only when everything read was sent: a reading that did not extend what was sent is not.
    const allSent = reply.content === this.content && reply.reasoning === this.reasoning
    this.plain = allSent ? reply.extends : undefined
    const last = reply.calls.length - 1
    const call = reply.calls[last]
    const lastSent = allSent && call !== undefined && this.calls.length === last + 1 &&
      this.calls[last]!.name === call.name && this.calls[last]!.arguments === call.arguments
    // Not before the arguments started: the blanks before them are no part of them.
    this.plainArguments = lastSent && call.held !== undefined && call.arguments !== "" ? { index: last, held: call.held } : undefined
    this.quiet = lastSent && call.quiet === true
    return out
  }

  /** The reply once the text is whole (what {@link end} sends the rest of). */
  final(): Reply {
    return (this.finalReply ??= read(this.reading, this.text, true))
  }

  /** The deltas once the text is whole. */
  end(): Array<Record<string, unknown>> {
    return this.diff(this.final())
  }

  /** Whether any tool call was sent. */
  get calledTools(): boolean {
    return this.calls.length > 0
  }

  private diff(reply: Reply): Array<Record<string, unknown>> {
    const out: Array<Record<string, unknown>> = []
    // A reading that does not extend what was sent (a call that turned out malformed once
    // closed) sends nothing more of that part: what went out cannot be taken back.
    if (reply.reasoning.length > this.reasoning.length && reply.reasoning.startsWith(this.reasoning)) {
      const piece = reply.reasoning.slice(this.reasoning.length)
      // Under both names, as the plain message (`ChatCompletions`): vLLM's current `reasoning`.
      out.push({ reasoning_content: piece, reasoning: piece })
      this.reasoning = reply.reasoning
    }
    if (reply.content.length > this.content.length && reply.content.startsWith(this.content)) {
      out.push({ content: reply.content.slice(this.content.length) })
      this.content = reply.content
    }
    for (let i = 0; i < reply.calls.length; i++) {
      const call = reply.calls[i]!
      const sent = this.calls[i]
      if (sent === undefined) {
        if (i > this.calls.length) break
        this.calls.push({ name: call.name, arguments: "" })
        out.push({ tool_calls: [{ index: i, id: callId(), type: "function", function: { name: call.name, arguments: "" } }] })
      } else if (sent.name !== call.name) continue
      const now = this.calls[i]!
      if (call.arguments.length > now.arguments.length && call.arguments.startsWith(now.arguments)) {
        out.push({ tool_calls: [{ index: i, function: { arguments: call.arguments.slice(now.arguments.length) } }] })
        now.arguments = call.arguments
      }
    }
    return out
  }
}
