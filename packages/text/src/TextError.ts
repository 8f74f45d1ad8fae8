/**
 * The one error type of the text package. Callers match on `reason._tag`; each reason is a small
 * tagged class that says exactly what went wrong (naming the file, the template or the argument),
 * and `message` is derived from it.
 *
 * Failures of the inference client itself stay `ClientError`s: generation fails with
 * `TextError | ClientError`, so a caller (the HTTP server, the CLI) maps each kind once.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A file the tokenizer directory must hold is not there (or cannot be read).
 *
 * @category errors
 * @since 0.1.0
 */
export class FileNotFound extends Schema.Class<FileNotFound>("@mcore-effect/text/FileNotFound")({
  _tag: Schema.tag("FileNotFound"),
  path: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `cannot read ${this.path}: ${this.why}`
  }
}

/**
 * A file is there but is not what it should be: not JSON, or JSON the tokenizer cannot be built
 * from (an unknown model, decoder or pre-tokenizer type, a missing field).
 *
 * @category errors
 * @since 0.1.0
 */
export class MalformedFile extends Schema.Class<MalformedFile>("@mcore-effect/text/MalformedFile")({
  _tag: Schema.tag("MalformedFile"),
  path: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `${this.path} is malformed: ${this.why}`
  }
}

/**
 * A chat was asked for but the tokenizer has no chat template (and none was given).
 *
 * @category errors
 * @since 0.1.0
 */
export class NoChatTemplate extends Schema.Class<NoChatTemplate>("@mcore-effect/text/NoChatTemplate")({
  _tag: Schema.tag("NoChatTemplate"),
  /** Where the tokenizer came from. */
  source: Schema.String
}) {
  get message(): string {
    return `the tokenizer from ${this.source} has no chat_template (give one with a template file)`
  }
}

/**
 * The chat template does not parse, fails while rendering, or calls `raise_exception`.
 *
 * @category errors
 * @since 0.1.0
 */
export class TemplateError extends Schema.Class<TemplateError>("@mcore-effect/text/TemplateError")({
  _tag: Schema.tag("TemplateError"),
  /** "parse" (the template itself is wrong) or "render" (it refused these messages). */
  stage: Schema.Literals(["parse", "render"]),
  why: Schema.String
}) {
  get message(): string {
    return this.stage === "parse"
      ? `the chat template does not parse: ${this.why}`
      : `the chat template failed to render: ${this.why}`
  }
}

/**
 * An argument was refused before anything was sent: an empty chat, a message without a role, a
 * stop string that is empty, a token id that is not one.
 *
 * @category errors
 * @since 0.1.0
 */
export class InvalidArgument extends Schema.Class<InvalidArgument>("@mcore-effect/text/InvalidArgument")({
  _tag: Schema.tag("InvalidArgument"),
  name: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `invalid ${this.name}: ${this.why}`
  }
}

/**
 * Every reason a text operation can fail.
 *
 * @category errors
 * @since 0.1.0
 */
export const TextErrorReason = Schema.Union([FileNotFound, MalformedFile, NoChatTemplate, TemplateError, InvalidArgument])

/**
 * @category errors
 * @since 0.1.0
 */
export type TextErrorReason = typeof TextErrorReason.Type

/**
 * A failure of a text operation. Match on `reason._tag`.
 *
 * @example
 * ```ts
 * import { Tokenizer } from "@mcore-effect/text"
 * import { Effect } from "effect"
 *
 * const program = Tokenizer.fromDirectory("/models/qwen3").pipe(
 *   Effect.catchReason("TextError", "FileNotFound", (missing) => Effect.die(missing.message))
 * )
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class TextError extends Schema.TaggedError<TextError>("@mcore-effect/text/TextError")(
  "TextError",
  { reason: TextErrorReason }
) {
  override get message(): string {
    return `${this.reason._tag}: ${this.reason.message}`
  }
}

/**
 * Wraps a reason in a {@link TextError}.
 *
 * @category constructors
 * @since 0.1.0
 */
export const textError = (reason: TextErrorReason): TextError => new TextError({ reason })

/**
 * True for a {@link TextError}.
 *
 * @category guards
 * @since 0.1.0
 */
export const isTextError = (u: unknown): u is TextError => u instanceof TextError
