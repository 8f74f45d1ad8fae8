/**
 * The Qwen3-Coder tool-call format (its template teaches it):
 *
 * ```text
 * <tool_call>
 * <function=get_weather>
 * <parameter=city>
 * Paris
 * </parameter>
 * </function>
 * </tool_call>
 * ```
 *
 * Each parameter's text (one newline trimmed at each end) becomes a JSON value by the type the
 * tool's `parameters` schema gives it (`string` as it is; `integer`, `number`, `boolean`,
 * `object`, `array` parsed, as written when that fails; no type: JSON when it parses, else the
 * text). The arguments are `JSON.stringify` of them in the order written, built one parameter at a
 * time, so that a stream sends each parameter once it is closed.
 *
 * @since 0.1.0
 */
import { scanBlocks } from "./Tags.ts"
import type { Call, Parsed, Tool } from "./ToolCall.ts"

const OPEN = "<tool_call>"
const CLOSE = "</tool_call>"
const FUNCTION = /<function=([^>\n]+)>/
const FUNCTION_END = "</function>"
const PARAMETER = /<parameter=([^>\n]+)>([\s\S]*?)<\/parameter>/g

const trimNewline = (text: string): string => {
  let out = text.startsWith("\n") ? text.slice(1) : text
  if (out.endsWith("\n")) out = out.slice(0, -1)
  return out
}

const typeOf = (tool: Tool | undefined, parameter: string): unknown => {
  const properties = tool?.parameters?.["properties"]
  if (typeof properties !== "object" || properties === null) return undefined
  const schema = (properties as Record<string, unknown>)[parameter]
  return typeof schema === "object" && schema !== null ? (schema as Record<string, unknown>)["type"] : undefined
}

const tryJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/** A parameter's text as the JSON value its schema's type says. */
const valueOf = (text: string, type: unknown): unknown => {
  if (type === "string") return text
  const json = tryJson(text.trim())
  if (!json.ok) return text
  const value = json.value
  switch (type) {
    case "integer":
    case "number":
      return typeof value === "number" ? value : text
    case "boolean":
      return typeof value === "boolean" ? value : text
    case "object":
      return typeof value === "object" && value !== null && !Array.isArray(value) ? value : text
    case "array":
      return Array.isArray(value) ? value : text
    default:
      return value
  }
}

/** A call's text (after `<tool_call>`) as a call: undefined until its function tag is whole. */
const callOf = (inner: string, tools: ReadonlyArray<Tool>, closed: boolean): Call | undefined => {
  const fn = FUNCTION.exec(inner)
  if (fn === null) return undefined
  const name = fn[1]!.trim()
  const tool = tools.find((t) => t.name === name)
  const body = inner.slice(fn.index + fn[0].length)
  const end = body.indexOf(FUNCTION_END)
  if (closed && end < 0) return undefined
  const params = end < 0 ? body : body.slice(0, end)
  let args = "{"
  let first = true
  for (const match of params.matchAll(PARAMETER)) {
    const key = match[1]!.trim()
    args += (first ? "" : ",") + JSON.stringify(key) + ":" + JSON.stringify(valueOf(trimNewline(match[2]!), typeOf(tool, key)))
    first = false
  }
  if (end >= 0) return { name, arguments: args + "}" }
  // Unclosed: quiet unless a `<` may be starting a tag that more text without one would finish.
  return inner.lastIndexOf("<") < inner.lastIndexOf(">") ? { name, arguments: args, quiet: true } : { name, arguments: args }
}

/**
 * The calls of `text` (see `ToolCallParser.ToolCallParser.parse`).
 *
 * @since 0.1.0
 */
export const parse = (text: string, tools: ReadonlyArray<Tool>, final: boolean): Parsed =>
  scanBlocks(text, final, OPEN, CLOSE, (inner) => callOf(inner, tools, true), (inner) => callOf(inner, tools, false))

/**
 * The start of a Qwen3-Coder call, as a forced call is written after the prompt: `<tool_call>\n`,
 * and for a named function `<function=NAME>\n` (the model goes on with its parameters).
 *
 * @example
 * ```ts
 * import * as Qwen3Coder from "./Qwen3Coder.ts"
 *
 * Qwen3Coder.opening("get_weather") // "<tool_call>\n<function=get_weather>\n"
 * ```
 *
 * @since 0.1.0
 */
export const opening = (name: string | undefined): string =>
  name === undefined ? `${OPEN}\n` : `${OPEN}\n<function=${name}>\n`
