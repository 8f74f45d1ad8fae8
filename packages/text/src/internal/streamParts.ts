/**
 * The one stage `TextGeneration.stream` puts over the client's stream: its events in, text
 * deltas and one `Finish` out, through a generation's {@link Progress}. One object per stream with
 * its state in fields and three functions, where closures over local variables held more per open
 * stream. Not a pipeline of operators: each stage costs per element in the fiber runtime
 * (PERFORMANCE.md#one-stage-over-the-clients-stream-srcinternalstreampartsts). After a Finish the pull is
 * done, which closes the client's stream early and so aborts the request (an eos or stop string
 * ends the text first).
 *
 * @since 0.1.0
 * @internal
 */
import { ClientError, type InferenceClient } from "@mcore-effect/client"
import type * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as Pull from "effect/Pull"
import type { StreamPart } from "./generationTypes.ts"
import { type Progress, viewOf } from "./progress.ts"

// ---------------------------------------------------------------------------------------------
// The client's stream events: the one place that names them.

// Only `Final` is named: every other event carries new tokens (`Partial`, to be renamed `Tokens`
// with the same fields), so the rename needs no change here.

/** The new ids of a token event of the client's stream; `undefined` for the final event. */
const partialTokens = (event: InferenceClient.StreamEvent): ReadonlyArray<number> | undefined =>
  event._tag === "Final" ? undefined : event.newTokens

/** The log probs a token event carries (Megatron main's engines send them), if any. */
const partialLogProbs = (event: InferenceClient.StreamEvent): ReadonlyArray<number> | undefined =>
  event._tag === "Final" ? undefined : event.newLogProbs

/** The request id a token event names. */
const partialRequestId = (event: InferenceClient.StreamEvent): number | undefined =>
  event._tag === "Final" ? undefined : event.requestId

/** The reply of the final event. */
const finalReply = (event: InferenceClient.StreamEvent): InferenceClient.Reply | undefined =>
  event._tag === "Final" ? event.reply : undefined

// ---------------------------------------------------------------------------------------------

/** `RequestAborted` among a pull's failures (which include the end of the stream). */
const isAbortedPull = (error: ClientError.ClientError | Cause.Done): error is ClientError.ClientError =>
  error._tag === "ClientError" && error.reason._tag === "RequestAborted"

type Events = Pull.Pull<Arr.NonEmptyReadonlyArray<InferenceClient.StreamEvent>, ClientError.ClientError, void>

/**
 * The stage over one stream's pull of events; {@link StreamParts.next} is the pull of its parts.
 *
 * @since 0.1.0
 * @internal
 */
export class StreamParts {
  /** Ids streamed so far (the final reply's tail starts after them). */
  private streamed = 0
  /**
   * The log probs of the ids streamed so far, one each, while every token event carried them
   * (`undefined` once one did not: its deltas then carry none).
   */
  private logProbs: Array<number> | undefined = []
  /** The final reply could not be read: the stream fails with it once it is over. */
  private failure: ClientError.ClientError | undefined = undefined
  private over = false
  /** The pull of the parts: built once and run for every pull, no closures per token. */
  readonly next: Pull.Pull<Arr.NonEmptyReadonlyArray<StreamPart>, ClientError.ClientError>

  constructor(private readonly progress: Progress, events: Events) {
    const pullParts = Effect.catchIf(Effect.flatMap(events, this.onEvents), isAbortedPull, this.onAborted)
    this.next = Effect.suspend(() => this.over ? (this.failure === undefined ? Cause.done() : Effect.fail(this.failure)) : pullParts)
  }

  private readonly onEvents = (events: Arr.NonEmptyReadonlyArray<InferenceClient.StreamEvent>) => {
    const parts: Array<StreamPart> = []
    for (let i = 0; i < events.length; i++) this.onEvent(events[i]!, parts)
    if (this.progress.ended) this.over = true
    return parts.length > 0 ? Effect.succeed(parts as unknown as Arr.NonEmptyReadonlyArray<StreamPart>) : this.next
  }

  private readonly onAborted = () => {
    this.over = true
    return Effect.succeed(this.abortedParts())
  }

  /** Appends the parts an event of the client's stream gives (none, while a character is incomplete). */
  private onEvent(event: InferenceClient.StreamEvent, parts: Array<StreamPart>): void {
    const progress = this.progress
    if (progress.ended) return
    const tokens = partialTokens(event)
    if (tokens !== undefined) {
      progress.requestId = partialRequestId(event)
      this.streamed += tokens.length
      this.keepLogProbs(tokens, partialLogProbs(event))
      progress.feed(tokens)
      if (progress.fedText !== "") parts.push(this.delta(progress.fedText, progress.fedIds))
      if (progress.ended) parts.push({ _tag: "Finish", ...progress.result(undefined, false) })
      return
    }
    const view = viewOf(finalReply(event)!, progress.requestId)
    if (view instanceof ClientError.ClientError) {
      // Fails the stream once the client's stream has ended: no Finish for it.
      progress.ended = true
      this.failure = view
      return
    }
    // The last step's tokens come only in the final reply.
    progress.feed(view.generatedTokens.slice(this.streamed))
    const ids = progress.fedIds
    const text = progress.fedText + progress.close()
    if (text !== "") parts.push({ _tag: "TextDelta", text, tokenIds: ids })
    parts.push({ _tag: "Finish", ...progress.result(view, false) })
  }

  /** Appends an event's log probs, or stops carrying them when it has none for its tokens. */
  private keepLogProbs(tokens: ReadonlyArray<number>, logProbs: ReadonlyArray<number> | undefined): void {
    const kept = this.logProbs
    if (kept === undefined) return
    if (logProbs === undefined || logProbs.length !== tokens.length) {
      this.logProbs = undefined
      return
    }
    for (let i = 0; i < logProbs.length; i++) kept.push(logProbs[i]!)
  }

  /** A delta of `ids` (the last consumed), with their log probs when they are known. */
  private delta(text: string, ids: ReadonlyArray<number>): StreamPart {
    const kept = this.logProbs
    if (kept === undefined || kept.length === 0) return { _tag: "TextDelta", text, tokenIds: ids }
    const end = this.progress.tokenIds.length
    const start = end - ids.length
    return end > kept.length
      ? { _tag: "TextDelta", text, tokenIds: ids }
      : { _tag: "TextDelta", text, tokenIds: ids, logProbs: kept.slice(start, end) }
  }

  /** The parts the text of an aborted request ends with: what was held back, then its Finish. */
  private abortedParts(): Arr.NonEmptyReadonlyArray<StreamPart> {
    const rest = this.progress.close()
    const finish: StreamPart = { _tag: "Finish", ...this.progress.result(undefined, true) }
    return rest === "" ? [finish] : [{ _tag: "TextDelta", text: rest, tokenIds: [] }, finish]
  }
}
