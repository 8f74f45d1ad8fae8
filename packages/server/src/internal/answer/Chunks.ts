/**
 * The SSE records of a streamed chat or completion, as strings: the base that `ChatChoices` and
 * `CompletionChoices` shape the choices of. A content chunk differs from the one before it only
 * in its text, so its fixed parts (id, object, created, model, the choice's other fields) are
 * serialized once per choice and only the text is escaped per token: one `JSON.stringify` of a
 * short string and two concatenations instead of building and serializing the whole object.
 * Records are strings so that a writer encodes all those of a pull at once, with `Buffer.from`.
 * Measurements: PERFORMANCE.md#stream-records. The bytes are those of `Sse.record` of the whole
 * chunk, for any text (a property test holds them to that).
 *
 * One object per stream, its shapes methods on the prototype: a record maker of closures held
 * five closures and their contexts per open stream (PERFORMANCE.md#stream-records).
 *
 * @since 0.1.0
 */
import type { TextGeneration } from "@mcore-effect/text"
import type { Usage } from "../../OpenAiSchema.ts"
import { body, type ServerError } from "../../ServerError.ts"
import type { Finished, Meta, Prompt } from "../Plan.ts"
import * as Sse from "../Sse.ts"
import type { Records } from "./Records.ts"

/**
 * A stand-in text whose JSON form cannot come out of serializing anything else in a chunk by
 * chance: it is found in the serialized chunk, and the text goes where it was. Were it found more
 * than once (a model name holding it), the chunk is serialized whole every time instead.
 */
const MARK = "\uFFFF\u0000mcore-effect delta\u0000\uFFFF"
const MARK_JSON = JSON.stringify(MARK)

/** `data: ` and the blank line after a record (`Sse.record`'s framing). */
const frame = (json: string): string => `data: ${json}\n\n`

/** A record's text before and after the delta's JSON, or `undefined` when the mark is not unique. */
const split = (record: string): readonly [string, string] | undefined => {
  const at = record.indexOf(MARK_JSON)
  if (at < 0 || record.indexOf(MARK_JSON, at + 1) >= 0) return undefined
  return [record.slice(0, at), record.slice(at + MARK_JSON.length)]
}

/**
 * The records of one stream of chunks: a subclass says what the chunks' choices hold.
 *
 * @since 0.2.0
 */
export abstract class Chunks implements Records {
  // Per choice index: the text around the delta, or null when it cannot be split.
  private readonly templates: Array<readonly [string, string] | null | undefined> = []

  constructor(private readonly meta: Meta, private readonly includeUsage: boolean) {}

  /** `object` of a chunk (a getter: nothing per stream). */
  protected abstract get object(): string
  /** The choice of the chunk that opens choice `index`, if the endpoint sends one. */
  protected abstract openingChoice(index: number, prompt: Prompt): unknown
  /** The choice of a chunk carrying `text`. */
  protected abstract deltaChoice(index: number, text: string): unknown
  /**
   * The choice of a chunk carrying a delta's text and its tokens' log probs, when the endpoint
   * streams them per chunk (the closing chunk then carries only the tokens not sent before,
   * `Choice.unsent`); `undefined` otherwise.
   */
  protected abstract deltaLogprobsChoice(index: number, part: TextGeneration.TextDelta): unknown
  /** The choice of the chunk that closes choice `index`. */
  protected abstract closingChoice(index: number, finished: Finished, prompt: Prompt): unknown

  /** A chunk of one choice, framed. */
  protected record(choice: unknown): string {
    const { created, id, model } = this.meta
    const object = this.object
    return frame(JSON.stringify(
      this.includeUsage
        ? { id, object, created, model, choices: [choice], usage: null }
        : { id, object, created, model, choices: [choice] }
    ))
  }

  opening(index: number, prompt: Prompt): string | undefined {
    const choice = this.openingChoice(index, prompt)
    return choice === undefined ? undefined : this.record(choice)
  }

  delta(index: number, text: string): string {
    let template = this.templates[index]
    if (template === undefined) {
      template = split(this.record(this.deltaChoice(index, MARK))) ?? null
      this.templates[index] = template
    }
    return template === null ? this.record(this.deltaChoice(index, text)) : template[0] + JSON.stringify(text) + template[1]
  }

  deltaLogprobs(index: number, part: TextGeneration.TextDelta): string | undefined {
    if (part.logProbs === undefined) return undefined
    const choice = this.deltaLogprobsChoice(index, part)
    return choice === undefined ? undefined : this.record(choice)
  }

  closing(index: number, finished: Finished, prompt: Prompt): string {
    return this.record(this.closingChoice(index, finished, prompt))
  }

  refusal(_index: number, _finished: Finished): ServerError | undefined {
    return undefined
  }

  end(usage: Usage): string {
    if (!this.includeUsage) return Sse.doneText
    const { created, id, model } = this.meta
    return frame(JSON.stringify({ id, object: this.object, created, model, choices: [], usage })) + Sse.doneText
  }

  failure(error: ServerError): string {
    return Sse.recordText(body(error))
  }
}
