/**
 * The SSE records of one streamed response, as strings. A content chunk differs from the one
 * before it only in its text, so its fixed parts (id, object, created, model, the choice's other
 * fields) are serialized once per choice and only the text is escaped per token: one
 * `JSON.stringify` of a short string and two concatenations instead of building and serializing
 * the whole object. Records are strings so that a writer encodes all those of a pull at once,
 * with `Buffer.from`. Measurements: PERFORMANCE.md#stream-records.
 * The bytes are those of `Sse.record` of the whole chunk, for any text (a property test holds
 * them to that).
 *
 * @since 0.1.0
 */
import type { TextGeneration } from "@mcore-effect/text"
import type { Usage } from "../OpenAiSchema.ts"
import type { ChoiceReader, Finished, Format, Meta, Prompt, Records } from "./Plan.ts"
import * as Sse from "./Sse.ts"
import { body, type ServerError } from "../ServerError.ts"

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
 * The records of one stream, as one object: a `make` returning closures held five closures and
 * their contexts per open stream (PERFORMANCE.md#stream-records).
 */
class FormatRecords implements Records {
  // Per choice index: the text around the delta, or null when it cannot be split.
  private readonly templates: Array<readonly [string, string] | null | undefined> = []
  private readonly object: string
  // Per choice index, when the format reads choices as they come.
  private readonly readers: Array<ChoiceReader | undefined> = []

  constructor(private readonly format: Format, private readonly meta: Meta, private readonly includeUsage: boolean) {
    this.object = format.chunkObject
  }

  private record(choice: unknown): string {
    const { created, id, model } = this.meta
    const object = this.object
    return frame(JSON.stringify(
      this.includeUsage
        ? { id, object, created, model, choices: [choice], usage: null }
        : { id, object, created, model, choices: [choice] }
    ))
  }

  opening(index: number, prompt: Prompt): string | undefined {
    const opening = this.format.opening
    return opening === undefined ? undefined : this.record(opening(index, prompt))
  }

  private reader(index: number): ChoiceReader | undefined {
    const make = this.format.reader
    if (make === undefined) return undefined
    return (this.readers[index] ??= make(index))
  }

  delta(index: number, text: string): string {
    const reader = this.reader(index)
    if (reader !== undefined) return reader.deltas(text).map((choice) => this.record(choice)).join("")
    let template = this.templates[index]
    if (template === undefined) {
      template = split(this.record(this.format.delta(index, MARK))) ?? null
      this.templates[index] = template
    }
    return template === null ? this.record(this.format.delta(index, text)) : template[0] + JSON.stringify(text) + template[1]
  }

  deltaLogprobs(index: number, part: TextGeneration.TextDelta): string | undefined {
    const format = this.format.deltaLogprobs
    const logprobs = part.logProbs
    // A reader (tool calls, reasoning) owns the text it is given; its chunks carry no log probs.
    if (format === undefined || logprobs === undefined || this.format.reader !== undefined) return undefined
    return this.record(format(index, part.text, part.tokenIds, logprobs))
  }

  closing(index: number, finished: Finished, prompt: Prompt): string {
    const reader = this.reader(index)
    if (reader !== undefined) return reader.closing(finished, prompt).map((choice) => this.record(choice)).join("")
    return this.record(this.format.closing(index, finished, prompt))
  }

  refusal(index: number, finished: Finished): ServerError | undefined {
    return this.reader(index)?.refusal?.(finished)
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

/**
 * The records of a stream of `format`'s chunks under `meta`; with `includeUsage`, every chunk
 * carries `usage: null` and `end` the total.
 *
 * @since 0.1.0
 */
export const make = (format: Format, meta: Meta, includeUsage: boolean): Records => new FormatRecords(format, meta, includeUsage)
