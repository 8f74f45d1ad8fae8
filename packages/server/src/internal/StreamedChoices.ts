/**
 * A streamed response's records: each choice's parts shaped as records by the endpoint's `Records`
 * (`answer/Answers.records`), framed as server-sent events,
 * pulled by the route's writer (`Sse.write`). Each choice ends with its closing records (a chunk
 * carrying its `finish_reason`), the stream with its end records (`Records.end`: with
 * `stream_options.include_usage` a chunk with no choices and the usage, then `data: [DONE]`). A
 * failure after the headers went out is written as one error record, and the stream ends.
 *
 * @since 0.2.0
 */
import type { ClientError } from "@mcore-effect/client"
import type { TextError, TextGeneration } from "@mcore-effect/text"
import type * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Channel from "effect/Channel"
import * as Effect from "effect/Effect"
import * as Pull from "effect/Pull"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Choice from "./Choice.ts"
import type { Shared } from "./Handler.ts"
import type { Records } from "./answer/Records.ts"
import type { Finished, Plan, Prompt } from "./Plan.ts"
import { Internal, serverError, type ServerError } from "../ServerError.ts"

/**
 * The records of a request's choices, framed as SSE bytes, as a pull in the current scope: what
 * the route writes to the HTTP response itself (`Sse.write`). The records of one pull (everything
 * that was waiting) come in one buffer, so one `write`. One choice (the usual request) pulls its
 * parts' channel in that scope, with no stream stage over it ({@link recordsOne}); several are
 * merged by {@link streamMany}. Either way, closing the scope early (the client went away, or
 * shutdown) closes the choices' streams, which aborts each request, and counts the abort.
 *
 * @since 0.1.0
 */
export const recordsAll = (
  shared: Shared,
  plan: Plan,
  options: StreamOptions
): Effect.Effect<Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>>, never, Scope.Scope> => {
  const prompts = plan.prompts
  if (prompts.length !== 1 || plan.n !== 1) return Stream.toPull(streamMany(shared, plan, options))
  const prompt = prompts[0]!
  return Effect.flatMap(Effect.scope, (scope) =>
    Effect.flatMap(
      Channel.toPullScoped(Stream.toChannel(Choice.parts(shared, plan, prompt)), scope),
      (pull) => recordsOne(shared, prompt, options)(pull, scope)
    ))
}

/**
 * How a stream is shaped and counted.
 *
 * @since 0.1.0
 */
export interface StreamOptions {
  /** The records of this stream (its own: a reader keeps what it read so far). */
  readonly chunks: Records
  /** `performance.now()` when the request arrived (time to first token). */
  readonly startedAt: number
}

const bytes = (records: string): Arr.NonEmptyReadonlyArray<Uint8Array> => [Buffer.from(records, "utf8")]

/** The record a failure after the headers becomes (they went out with 200: too late for a status). */
const failureRecord = (
  shared: Shared,
  chunks: Records,
  cause: Cause.Cause<TextError.TextError | ClientError.ClientError | ServerError>
): string => {
  const error = Cause.findErrorOption(cause)
  const failure = error._tag === "None"
    ? serverError(new Internal({ why: `the stream failed: ${Cause.pretty(cause)}` }))
    : error.value._tag === "ServerError"
    ? error.value
    : Choice.failed(shared, error.value)
  return chunks.failure(failure)
}

/**
 * One choice: the pull of its records over its parts' pull, no fiber or queue of its own (they
 * cost a fiber hand-off per pull, and heap per open stream: PERFORMANCE.md#one-choice-pull). The first pull answers with the opening record at once, so the
 * headers and the role chunk go out before any token. The scope's exit tells an abort (the writer
 * stopped pulling first) from an end.
 */
const recordsOne = (shared: Shared, prompt: Prompt, options: StreamOptions) =>
  (
    pull: Pull.Pull<Arr.NonEmptyReadonlyArray<TextGeneration.StreamPart>, TextError.TextError | ClientError.ClientError, void>,
    scope: Scope.Scope
  ): Effect.Effect<Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>>> => {
    const { metrics } = shared.state
    const chunks = options.chunks
    let opened = false
    let firstContent = true
    let over = false
    let sent = 0
    const onParts = (parts: Arr.NonEmptyReadonlyArray<TextGeneration.StreamPart>): Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>> => {
      let records = ""
      for (let i = 0; i < parts.length; i++) {
        const part = parts[i]!
        if (part._tag === "TextDelta") {
          if (firstContent) {
            firstContent = false
            metrics.firstToken(options.startedAt)
          }
          const withLogprobs = chunks.deltaLogprobs(0, part)
          if (withLogprobs === undefined) records += chunks.delta(0, part.text)
          else {
            records += withLogprobs
            sent += part.tokenIds.length
          }
          continue
        }
        const done = Choice.finishedOf(part)
        const total = Choice.countedUsage(shared, [done], 1)
        over = true
        const refused = chunks.refusal(0, done)
        if (refused !== undefined) {
          // An error record ends the stream, as any failure after the headers does.
          records += chunks.failure(refused)
          break
        }
        records += chunks.closing(0, Choice.unsent(done, sent), prompt)
        records += chunks.end(total)
        break
      }
      return records === "" ? next : Effect.succeed(bytes(records))
    }
    const onCause = (cause: Cause.Cause<TextError.TextError | ClientError.ClientError | Cause.Done>): Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>> => {
      if (Pull.isDoneCause(cause) || Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<Cause.Done>)
      over = true
      return Effect.succeed(bytes(failureRecord(shared, chunks, cause as Cause.Cause<TextError.TextError | ClientError.ClientError>)))
    }
    // Built once and run for every pull: no closures per token.
    const pullRecords = Effect.catchCause(Effect.flatMap(pull, onParts), onCause)
    const next: Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>> = Effect.suspend(() => {
      if (over) return Cause.done()
      if (!opened) {
        opened = true
        const opening = chunks.opening(0, prompt)
        if (opening !== undefined) return Effect.succeed(bytes(opening))
      }
      return pullRecords
    })
    return Effect.as(
      Scope.addFinalizer(scope, Effect.sync(() => {
        if (!over) Choice.countInterrupted(shared)
      })),
      next
    )
  }

/**
 * Several choices (`n`, or several prompts): one `Stream.callback` whose queue a single fiber
 * fills, running every choice's stream at once; the records waiting are taken together.
 */
const streamMany = (
  shared: Shared,
  plan: Plan,
  options: StreamOptions
): Stream.Stream<Uint8Array> =>
  Stream.callback<Uint8Array>((queue) => {
    const { n, prompts } = plan
    const { metrics } = shared.state
    const chunks = options.chunks
    const offer = (records: string) => Queue.offerUnsafe(queue, Buffer.from(records, "utf8"))
    const count = prompts.length * n
    const finished: Array<Finished | undefined> = new Array(count)
    let firstContent = true
    const choice = (index: number) => {
      const prompt = prompts[Math.floor(index / n)]!
      let sent = 0
      const opening = chunks.opening(index, prompt)
      if (opening !== undefined) offer(opening)
      return Stream.runForEach(Choice.parts(shared, plan, prompt), (part) => {
        if (part._tag === "TextDelta") {
          if (firstContent) {
            firstContent = false
            metrics.firstToken(options.startedAt)
          }
          const withLogprobs = chunks.deltaLogprobs(index, part)
          if (withLogprobs === undefined) {
            const records = chunks.delta(index, part.text)
            if (records !== "") offer(records)
          } else {
            offer(withLogprobs)
            sent += part.tokenIds.length
          }
        } else {
          const done = Choice.finishedOf(part)
          const refused = chunks.refusal(index, done)
          // Fails the request: the others are interrupted, and its error record ends the stream.
          if (refused !== undefined) return Effect.fail(refused)
          finished[index] = done
          offer(chunks.closing(index, Choice.unsent(done, sent), prompt))
        }
        return Effect.void
      })
    }
    const all = Effect.forEach(Array.from({ length: count }, (_, index) => index), choice, {
      concurrency: "unbounded",
      discard: true
    })
    return Effect.forkScoped(Effect.matchCause(Effect.onInterrupt(all, () => Effect.sync(() => Choice.countInterrupted(shared))), {
      onSuccess: () => {
        const total = Choice.countedUsage(shared, finished, n)
        offer(chunks.end(total))
        Queue.endUnsafe(queue)
      },
      onFailure: (cause) => {
        if (Cause.hasInterruptsOnly(cause)) return
        offer(failureRecord(shared, chunks, cause))
        Queue.endUnsafe(queue)
      }
    }))
  })
