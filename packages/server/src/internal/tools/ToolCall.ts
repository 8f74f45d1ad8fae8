/**
 * What a tool-call parser is and finds (the parsers themselves are `ToolCallParser.parsers`):
 * types only, which the parsers and the tag scanner share.
 *
 * @since 0.2.0
 */

/**
 * A tool call found in a text: the function's name and its arguments as JSON text.
 *
 * @since 0.1.0
 */
export interface Call {
  readonly name: string
  readonly arguments: string
  /**
   * Of a call still being generated whose format allows it (Hermes): what its text holds back
   * after `arguments` (blanks and braces that may be the object's end), when nothing else is (no
   * tag may be starting). More text without `<` then extends the arguments by itself minus what
   * it holds back in turn (`Tags.withoutObjectEnd`), without the whole text being read again
   * (`AssistantReply.Deltas`).
   */
  readonly held?: string | undefined
  /**
   * Of a call still being generated: more text without `<` changes nothing of the reading
   * (Qwen3-Coder, inside or between parameters, with no tag starting: a parameter counts once it
   * is closed), so it is not read again until a text with `<` comes.
   */
  readonly quiet?: boolean | undefined
}

/**
 * A text with its tool calls taken out.
 *
 * @since 0.1.0
 */
export interface Parsed {
  /** The text outside the calls, in order. */
  readonly content: string
  /**
   * The calls. Of a text still being generated (`final` false), the last may be unfinished: its
   * `arguments` are then the start of what they will be.
   */
  readonly calls: ReadonlyArray<Call>
  /**
   * Whether the text ends in content that more text without `<` extends as it is: outside any
   * call, not blank, nothing held back. Every tag the parsers read starts with `<`.
   */
  readonly endsInContent: boolean
}

/**
 * A tool definition as the parsers see it (OpenAI's `tools[].function`).
 *
 * @since 0.1.0
 */
export interface Tool {
  readonly name: string
  readonly parameters?: Readonly<Record<string, unknown>> | undefined
}

/**
 * A tool-call parser. `parse(text, tools, false)` is of a text still being generated: it holds
 * back what may be the start of a tag, so that each parse of a longer text extends the one before
 * (its content, its calls' names and arguments), which is what a stream sends the differences of.
 *
 * @since 0.1.0
 */
export interface ToolCallParser {
  readonly name: string
  readonly parse: (text: string, tools: ReadonlyArray<Tool>, final: boolean) => Parsed
  /**
   * The start of a call in this format, as the server writes it after the prompt to force one
   * (`tool_choice`): of a call of `name`, up to where the model writes its arguments; with no
   * name, the opening tag only (the model must go on with a call).
   */
  readonly opening: (name: string | undefined) => string
}
