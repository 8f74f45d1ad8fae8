/**
 * What the parsers of generated text share: how much of a text's end may be the start of a tag
 * still being generated (held back from a stream until the next text says).
 *
 * @since 0.1.0
 */

import type { Call, Parsed } from "./ToolCall.ts"

/**
 * The length of the longest end of `text` that is a proper start of `tag` (0 when none).
 *
 * @example
 * ```ts
 * import * as Tags from "./Tags.ts"
 *
 * Tags.partialTagAtEnd("hello <tool", "<tool_call>") // 5
 * ```
 *
 * @since 0.1.0
 */
export const partialTagAtEnd = (text: string, tag: string): number => {
  for (let n = Math.min(tag.length - 1, text.length); n > 0; n--) {
    if (text.endsWith(tag.slice(0, n))) return n
  }
  return 0
}

/**
 * `text` without an end that may be the start of `tag`, unless the text is final.
 *
 * @since 0.1.0
 */
export const withoutPartialTag = (text: string, tag: string, final: boolean): string =>
  final ? text : text.slice(0, text.length - partialTagAtEnd(text, tag))

/**
 * `text` without the blanks and braces at its end: of a JSON object still being written, what
 * may be its end is held back until more text says (a call's arguments so far).
 *
 * @example
 * ```ts
 * import * as Tags from "./Tags.ts"
 *
 * Tags.withoutObjectEnd('{"a": {"b": 1} }') // '{"a": {"b": 1'
 * ```
 *
 * @since 0.2.0
 */
export const withoutObjectEnd = (text: string): string => text.replace(/[\s}]+$/, "")

const isBlank = (text: string): boolean => text.trim() === ""

/**
 * The calls of a text whose calls are blocks between `open` and `close` tags: `closed` reads a
 * whole block's text (undefined: not a call, left as content), `unclosed` the text of one still
 * being generated (its call so far; undefined until its name is whole). Blanks between or after
 * calls are not content; a block unclosed at the end of a final text is content.
 *
 * @since 0.1.0
 */
export const scanBlocks = (
  text: string,
  final: boolean,
  open: string,
  close: string,
  closed: (inner: string) => Call | undefined,
  unclosed: (inner: string) => Call | undefined
): Parsed => {
  let content = ""
  const calls: Array<Call> = []
  let at = 0
  for (;;) {
    const start = text.indexOf(open, at)
    if (start < 0) {
      const tail = withoutPartialTag(text.slice(at), open, final)
      // Blanks that may come before a call are held until more comes (or the text ends callless).
      const plain = !isBlank(tail)
      if (plain || (final && at === 0)) content += tail
      return { content, calls, endsInContent: plain && tail.length === text.length - at }
    }
    const gap = text.slice(at, start)
    if (!isBlank(gap)) content += gap
    const end = text.indexOf(close, start + open.length)
    if (end < 0) {
      if (final) return { content: content + text.slice(start), calls, endsInContent: false }
      const call = unclosed(text.slice(start + open.length))
      if (call !== undefined) calls.push(call)
      return { content, calls, endsInContent: false }
    }
    const call = closed(text.slice(start + open.length, end))
    if (call === undefined) content += text.slice(start, end + close.length)
    else calls.push(call)
    at = end + close.length
  }
}
