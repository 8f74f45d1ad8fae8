/**
 * The SSE records of one streamed response, as strings. A content chunk differs from the one
 * before it only in its text, so its fixed parts (id, object, created, model, the choice's other
 * fields) are serialized once per choice and only the text is escaped per token: one
 * `JSON.stringify` of a short string and two concatenations instead of building and serializing
 * the whole object (a benchmark chat chunk: 0.2 µs instead of 1.85, microbenchmark on the
 * benchmark's words). Records are strings so that a writer encodes all those of a pull at once,
 * with `Buffer.from` (about 0.9 µs a record, where `TextEncoder.encode` took 2.3).
 * The bytes are those of `Sse.record` of the whole chunk, for any text (a property test holds
 * them to that).
 *
 * @since 0.1.0
 */
import type { TextGeneration } from "@mcore-effect/text"
import type * as Choice from "./Choice.ts"
import type { ChoiceReader, Format, Meta } from "./Generation.ts"
import type { Usage } from "./OpenAiSchema.ts"
import * as Sse from "./Sse.ts"
import { body, type ServerError } from "./ServerError.ts"

/**
 * The records of one stream.
 *
 * @since 0.1.0
 */
export interface Chunks {
  /** The record opening choice `index`, if the endpoint sends one. */
  readonly opening: (index: number, prompt: Choice.Prompt) => string | undefined
  /** The record carrying `text` for choice `index`. */
  readonly delta: (index: number, text: string) => string
  /**
   * The record carrying a delta's text and its tokens' log probs, when the delta has them and the
   * endpoint streams them per chunk; `undefined` otherwise (then {@link delta}).
   */
  readonly deltaLogprobs: (index: number, part: TextGeneration.TextDelta) => string | undefined
  /** The record closing choice `index`. */
  readonly closing: (index: number, finished: Choice.Finished, prompt: Choice.Prompt) => string
  /** Why choice `index` cannot be closed (its reader's refusal), if it cannot; asked before {@link closing}. */
  readonly refusal: (index: number, finished: Choice.Finished) => ServerError | undefined
  /**
   * The records that end a stream whose choices all closed, given the request's usage: with
   * `stream_options.include_usage`, a chunk with no choices and the usage; then `data: [DONE]`.
   */
  readonly end: (usage: Usage) => string
  /**
   * The record of a failure after the headers went out (too late for a status): OpenAI's error
   * object, what its SDKs raise as an `APIError`. Nothing follows it.
   */
  readonly failure: (error: ServerError) => string
}

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
 * their contexts per open stream (~0.6 KB, heap snapshot).
 */
class Records implements Chunks {
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

  opening(index: number, prompt: Choice.Prompt): string | undefined {
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

  closing(index: number, finished: Choice.Finished, prompt: Choice.Prompt): string {
    const reader = this.reader(index)
    if (reader !== undefined) return reader.closing(finished, prompt).map((choice) => this.record(choice)).join("")
    return this.record(this.format.closing(index, finished, prompt))
  }

  refusal(index: number, finished: Choice.Finished): ServerError | undefined {
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
 * carries `usage: null` and {@link Chunks.end} the total.
 *
 * @since 0.1.0
 */
export const make = (format: Format, meta: Meta, includeUsage: boolean): Chunks => new Records(format, meta, includeUsage)
