/**
 * Tool-call parsers (`--tool-call-parser`): the calls a model wrote in its text, in the format its
 * chat template taught it, taken out of the content. A call whose text does not parse (malformed
 * JSON, an unclosed tag at the end) stays in the content as the model wrote it: never a crash,
 * never a call made up.
 *
 * @since 0.1.0
 */
import * as Hermes from "./Hermes.ts"
import * as Qwen3Coder from "./Qwen3Coder.ts"
import type { ToolCallParser } from "./ToolCall.ts"

export type { Call, Parsed, Tool, ToolCallParser } from "./ToolCall.ts"

/**
 * The parsers by name: `hermes` (`<tool_call>{"name": ..., "arguments": ...}</tool_call>`, Qwen2.5,
 * Qwen3, Hermes) and `qwen3_coder` (`<tool_call><function=NAME><parameter=P>value</parameter>...`).
 *
 * @example
 * ```ts
 * import * as ToolCallParser from "./ToolCallParser.ts"
 *
 * const parsed = ToolCallParser.parsers.get("hermes")!.parse(
 *   '<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>', [], true
 * )
 * parsed.calls // [{ name: "f", arguments: '{"x": 1}' }]
 * ```
 *
 * @since 0.1.0
 */
export const parsers: ReadonlyMap<string, ToolCallParser> = new Map<string, ToolCallParser>([
  ["hermes", { name: "hermes", parse: Hermes.parse, opening: Hermes.opening }],
  ["qwen3_coder", { name: "qwen3_coder", parse: Qwen3Coder.parse, opening: Qwen3Coder.opening }]
])
