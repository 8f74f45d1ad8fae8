/**
 * The Hermes tool-call format (Qwen2.5's and Qwen3's templates teach it): each call is a JSON
 * object `{"name": ..., "arguments": {...}}` between `<tool_call>` and `</tool_call>`.
 *
 * `arguments` is sent as the model wrote it (checked to be JSON), not re-serialized: a stream can
 * then send it as it is generated, and the joined pieces are the unstreamed value.
 *
 * @since 0.1.0
 */
import { scanBlocks, withoutObjectEnd, withoutPartialTag } from "./Tags.ts"
import type { Call, Parsed, Tool } from "./ToolCall.ts"

const OPEN = "<tool_call>"
const CLOSE = "</tool_call>"

/** `{"name": "...", "arguments":` at the start of a call, the name as JSON. */
const HEAD = /^\s*\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"arguments"\s*:\s*/

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** A closed call's text as a call, or undefined when it is not one (left as content). */
const closedCall = (inner: string): Call | undefined => {
  let value: unknown
  try {
    value = JSON.parse(inner)
  } catch {
    return undefined
  }
  if (!isObject(value) || typeof value["name"] !== "string") return undefined
  const args = value["arguments"] ?? value["parameters"] ?? {}
  const head = HEAD.exec(inner)
  // As written when `arguments` comes right after `name` (the shape taught); else serialized.
  if (head !== null) {
    const rest = inner.slice(head[0].length)
    return { name: value["name"], arguments: rest.slice(0, rest.lastIndexOf("}")).trim() }
  }
  return { name: value["name"], arguments: JSON.stringify(args) }
}

/** An unclosed call being generated: its name and arguments so far, once its name is whole. */
const openCall = (inner: string): Call | undefined => {
  const head = HEAD.exec(inner)
  if (head === null) return undefined
  let name: unknown
  try {
    name = JSON.parse(head[1]!)
  } catch {
    return undefined
  }
  if (typeof name !== "string") return undefined
  // Held back: a closing tag starting, and the closing braces and blanks (the object's own `}`).
  const written = inner.slice(head[0].length)
  const rest = withoutPartialTag(written, CLOSE, false)
  const args = withoutObjectEnd(rest)
  return rest.length === written.length
    ? { name, arguments: args, held: rest.slice(args.length) }
    : { name, arguments: args }
}


/**
 * The calls of `text` (see `ToolCallParser.ToolCallParser.parse`).
 *
 * @since 0.1.0
 */
export const parse = (text: string, _tools: ReadonlyArray<Tool>, final: boolean): Parsed =>
  scanBlocks(text, final, OPEN, CLOSE, closedCall, openCall)

/**
 * The start of a Hermes call, as a forced call is written after the prompt: `<tool_call>\n`, and
 * for a named function `{"name": "NAME", "arguments":` (no space after the colon: the model
 * writes ` {` as it always does, where a prompt ending in a space would leave it to start its
 * arguments with a token it rarely saw there).
 *
 * @example
 * ```ts
 * import * as Hermes from "./Hermes.ts"
 *
 * Hermes.opening("get_weather") // '<tool_call>\n{"name": "get_weather", "arguments":'
 * ```
 *
 * @since 0.1.0
 */
export const opening = (name: string | undefined): string =>
  name === undefined ? `${OPEN}\n` : `${OPEN}\n{"name": ${JSON.stringify(name)}, "arguments":`
