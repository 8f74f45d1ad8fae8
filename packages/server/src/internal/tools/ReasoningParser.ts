/**
 * Reasoning parsers (`--reasoning-parser`): the `<think>...</think>` part of a generated text
 * split off as `reasoning_content`, as vLLM's parsers of the same names do.
 *
 * - `qwen3`: Qwen3 writes `<think>` itself; a text that does not start with it (thinking off: the
 *   template put an empty `<think>\n\n</think>` in the prompt) is all content. Unclosed, what
 *   follows `<think>` is reasoning.
 * - `deepseek-r1`: the template ends the prompt with `<think>\n`, so the text is reasoning up to
 *   `</think>` (a leading `<think>` is dropped too); without `</think>` it is all reasoning.
 *
 * @since 0.1.0
 */
import { withoutPartialTag } from "./Tags.ts"

/**
 * A generated text split in two.
 *
 * @since 0.1.0
 */
export interface Split {
  readonly reasoning: string
  readonly content: string
  /**
   * What more text without `<` would extend: the reasoning (unclosed, nothing held back), the
   * content (the reasoning is over, or there is none), or `undefined` (something is held back).
   */
  readonly extends: "reasoning" | "content" | undefined
}

/**
 * A reasoning parser. `split(text, false)` is of a text still being generated: what might be the
 * start of a tag is held back, so that each split of a longer text extends the one before.
 *
 * @since 0.1.0
 */
export interface ReasoningParser {
  readonly name: string
  readonly split: (text: string, final: boolean) => Split
  /**
   * What a reply that does not reason starts with, when the server writes the reply's start
   * (a forced tool call, made without thinking): nothing for `qwen3` (the server sets
   * `enable_thinking: false`, and Qwen3's template writes the empty `<think>\n\n</think>\n\n`
   * into the prompt itself), `</think>\n\n` for `deepseek-r1` (its template opens the block).
   */
  readonly skip: string
}

const START = "<think>"
const END = "</think>"

const splitAt = (text: string, startsInside: boolean, final: boolean): Split => {
  let body = text
  let inside = startsInside
  if (body.startsWith(START)) {
    body = body.slice(START.length)
    inside = true
  } else if (!final && START.startsWith(body)) {
    // "<thi": not known yet whether the text opens with a think block.
    return { reasoning: "", content: "", extends: undefined }
  }
  if (!inside) return { reasoning: "", content: text, extends: "content" }
  const end = body.indexOf(END)
  if (end < 0) {
    const reasoning = withoutPartialTag(body, END, final)
    return { reasoning, content: "", extends: reasoning.length === body.length ? "reasoning" : undefined }
  }
  return { reasoning: body.slice(0, end), content: body.slice(end + END.length), extends: "content" }
}

/**
 * The parsers by name.
 *
 * @example
 * ```ts
 * import * as ReasoningParser from "./ReasoningParser.ts"
 *
 * ReasoningParser.parsers.get("qwen3")!.split("<think>hm</think>42", true) // { reasoning: "hm", content: "42" }
 * ```
 *
 * @since 0.1.0
 */
export const parsers: ReadonlyMap<string, ReasoningParser> = new Map<string, ReasoningParser>([
  ["qwen3", { name: "qwen3", split: (text, final) => splitAt(text, false, final), skip: "" }],
  ["deepseek-r1", { name: "deepseek-r1", split: (text, final) => splitAt(text, true, final), skip: `${END}\n\n` }]
])
