/**
 * What both generation endpoints do once a request is valid: run its choices (`n` per prompt,
 * all at once), and answer with one JSON body or with an event stream. The endpoints differ only
 * in how a choice, a delta and a chunk are shaped ({@link Format}).
 *
 * Streamed, the choices' events are merged as they come; each choice ends with a chunk carrying
 * its `finish_reason`, then (with `stream_options.include_usage`) a chunk with no choices and the
 * usage, then `data: [DONE]`. A failure after the headers went out (the coordinator lost, the
 * deadline) is written as one error record, and the stream ends: the client sees an error, never
 * a hang. A client that goes away interrupts the response, which ends every choice's stream,
 * which aborts each request on the coordinator.
 *
 * @since 0.1.0
 */
import type { ClientError } from "@mcore-effect/client"
import type { TextError, TextGeneration } from "@mcore-effect/text"
import type * as Arr from "effect/Array"
import * as Cause from "effect/Cause"
import * as Channel from "effect/Channel"
import * as Effect from "effect/Effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Pull from "effect/Pull"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { randomBytes } from "node:crypto"
import * as Chunks from "./Chunks.ts"
import * as Choice from "./Choice.ts"
import * as JsonResponse from "./JsonResponse.ts"
import type { Usage } from "./OpenAiSchema.ts"
import type * as Routes from "./Routes.ts"
import * as RequestId from "./RequestId.ts"
import type * as Sampling from "./Sampling.ts"
import * as Sse from "./Sse.ts"
import { body, Internal, serverError, type ServerError } from "./ServerError.ts"

/**
 * A streamed choice read as its text comes (see {@link Format.reader}).
 *
 * @since 0.1.0
 */
export interface ChoiceReader {
  readonly deltas: (text: string) => ReadonlyArray<unknown>
  readonly closing: (finished: Choice.Finished, prompt: Choice.Prompt) => ReadonlyArray<unknown>
  /**
   * Why the finished choice cannot be answered (a forced tool call the model did not make): the
   * stream then ends with that error's record in place of the closing chunks.
   */
  readonly refusal?: ((finished: Choice.Finished) => ServerError | undefined) | undefined
}

/**
 * How an endpoint shapes its chunks.
 *
 * @since 0.1.0
 */
export interface Format {
  /** `object` of a chunk. */
  readonly chunkObject: string
  /** The choice of the chunk that opens choice `index`, if the endpoint sends one. */
  readonly opening: ((index: number, prompt: Choice.Prompt) => unknown) | undefined
  /** The choice of a chunk carrying `text`. */
  readonly delta: (index: number, text: string) => unknown
  /** The choice of the chunk that closes choice `index`. */
  readonly closing: (index: number, finished: Choice.Finished, prompt: Choice.Prompt) => unknown
  /**
   * When set, a choice's text is read as it comes (tool calls, reasoning): each text gives the
   * choices of zero or more chunks, in place of `delta`, and the end those of its closing chunks,
   * in place of `closing`. One per streamed choice.
   */
  readonly reader?: ((index: number) => ChoiceReader) | undefined
  /**
   * The choice of a chunk carrying `text` and the log probs of the tokens it came from, when the
   * endpoint streams log probs per chunk (the engines' partials carry them); the closing chunk then
   * carries only the tokens' not sent before ({@link unsent}).
   */
  readonly deltaLogprobs?: ((index: number, text: string, tokens: ReadonlyArray<number>, logprobs: ReadonlyArray<number>) => unknown) | undefined
}

/**
 * `finished` with only its tokens from `sent` on (and their log probs): what a closing chunk
 * still has to carry when the first `sent` went out with their deltas.
 *
 * @since 0.1.0
 */
export const unsent = (finished: Choice.Finished, sent: number): Choice.Finished =>
  sent === 0 ? finished : {
    ...finished,
    tokens: finished.tokens.slice(sent),
    logprobs: finished.logprobs?.slice(sent),
    topLogprobs: finished.topLogprobs?.slice(sent)
  }

/**
 * How an endpoint shapes its answers: the chunks ({@link Format}), and the choice of a plain
 * response.
 *
 * @since 0.1.0
 */
export interface Endpoint {
  /** `cmpl-`, `chatcmpl-`. */
  readonly idPrefix: string
  /** `object` of a plain response. */
  readonly object: string
  readonly format: Format
  /** A choice of a plain response. */
  readonly choice: (index: number, finished: Choice.Finished, prompt: Choice.Prompt) => unknown
  /** Why a finished choice cannot be answered (see {@link ChoiceReader.refusal}): the request fails with it. */
  readonly refusal?: ((finished: Choice.Finished) => ServerError | undefined) | undefined
}

/**
 * Answers a valid request: takes its place in flight, then streams its choices or waits for them
 * all and answers with one JSON body.
 *
 * @since 0.1.0
 */
export const respond = (
  generation: Routes.Generation,
  context: Choice.Context,
  prompts: ReadonlyArray<Choice.Prompt>,
  plan: Sampling.Plan,
  endpoint: Endpoint
): Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError, Scope.Scope> =>
  plan.stream
    // `admit`, then a continuation the fiber lets go of once it ran: `admitThen`'s closure stays
    // reachable while what it leads to runs, which kept the request's handler, body and plan
    // alive as long as its stream was open (0.5 KB of each open stream, heap snapshots, `pnpm
    // bench server --heap`). A plain answer is short-lived, and takes the fewer steps.
    ? Effect.flatMap(generation.admit, () => streamed(generation, context, prompts, plan, endpoint))
    : generation.admitThen(() => answered(context, prompts, plan, endpoint, RequestId.of(generation.request)))

/** The choices written to the response as server-sent events, as they come. */
const streamed = (
  generation: Routes.Generation,
  context: Choice.Context,
  prompts: ReadonlyArray<Choice.Prompt>,
  plan: Sampling.Plan,
  endpoint: Endpoint
) =>
  Sse.write(generation.request, recordsAll(context, prompts, plan.n, {
    meta: makeMeta(endpoint.idPrefix, context.state.config.model, RequestId.of(generation.request)),
    includeUsage: plan.includeUsage,
    startedAt: generation.startedAt,
    format: endpoint.format
  }))

/** The choices, all of them finished, as one JSON body. */
const answered = (
  context: Choice.Context,
  prompts: ReadonlyArray<Choice.Prompt>,
  plan: Sampling.Plan,
  endpoint: Endpoint,
  requestId: string | undefined
) => {
  const { n } = plan
  const meta = makeMeta(endpoint.idPrefix, context.state.config.model, requestId)
  const reply = (finished: Array<Choice.Finished>) => {
    const total = usage(finished, n)
    context.state.metrics.tokens(total.prompt_tokens, total.completion_tokens)
    return JsonResponse.json({
      id: meta.id,
      object: endpoint.object,
      created: meta.created,
      model: meta.model,
      choices: finished.map((choice, index) => endpoint.choice(index, choice, prompts[Math.floor(index / n)]!)),
      usage: total,
      system_fingerprint: null
    })
  }
  const refusal = endpoint.refusal
  // One choice (the usual request): one step from its generation to the response.
  if (refusal === undefined) {
    return countAbort(context)(
      prompts.length === 1 && n === 1
        ? Effect.map(Choice.generate(context, prompts[0]!), (one) => reply([one]))
        : Effect.map(runAll(context, prompts, n), reply)
    )
  }
  return countAbort(context)(Effect.flatMap(runAll(context, prompts, n), (finished) => {
    for (const choice of finished) {
      const refused = refusal(choice)
      if (refused === undefined) continue
      const total = usage(finished, n)
      context.state.metrics.tokens(total.prompt_tokens, total.completion_tokens)
      return Effect.fail(refused)
    }
    return Effect.succeed(reply(finished))
  }))
}

/**
 * What identifies a response.
 *
 * @since 0.1.0
 */
export interface Meta {
  readonly id: string
  readonly created: number
  readonly model: string
}

/** Ids are this process's random prefix and a counter: unique, and no system call per response. */
const idPrefix = randomBytes(6).toString("hex")
let nextId = 0

/**
 * A response id with `prefix` (`chatcmpl-`, `cmpl-`): the prefix and the request's `x-request-id`
 * when the server gave it one (`RequestId`), else the prefix and an id made here.
 *
 * @since 0.1.0
 */
export const makeMeta = (prefix: string, model: string, requestId?: string | undefined): Meta => ({
  id: requestId === undefined ? `${prefix}${idPrefix}${(nextId++).toString(16).padStart(8, "0")}` : `${prefix}${requestId}`,
  created: Math.floor(Date.now() / 1000),
  model
})

/**
 * Usage of finished choices (`n` per prompt, in order): each prompt counted once, every
 * generated token counted.
 *
 * @since 0.1.0
 */
export const usage = (finished: ReadonlyArray<Choice.Finished | undefined>, n: number): Usage => {
  let prompt = 0
  let completion = 0
  let cached = 0
  for (let i = 0; i < finished.length; i++) {
    const choice = finished[i]
    if (choice === undefined) continue
    completion += choice.completionTokens
    if (i % n === 0) {
      prompt += choice.promptTokens
      cached += choice.cachedTokens
    }
  }
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: cached }
  }
}

/**
 * Runs every choice at once and waits for all (the first failure interrupts the rest, which
 * aborts them). Choice `p * n + j` is the `j`th of prompt `p`.
 *
 * @since 0.1.0
 */
export const runAll = (
  context: Choice.Context,
  prompts: ReadonlyArray<Choice.Prompt>,
  n: number
): Effect.Effect<Array<Choice.Finished>, ServerError> => {
  if (prompts.length === 1 && n === 1) return Effect.map(Choice.generate(context, prompts[0]!), (one) => [one])
  const all: Array<Choice.Prompt> = []
  for (const prompt of prompts) for (let j = 0; j < n; j++) all.push(prompt)
  return Effect.forEach(all, (prompt) => Choice.generate(context, prompt), { concurrency: "unbounded" })
}

/**
 * Counts an interrupted generation as an abort: by the client (it went away) or by shutdown.
 *
 * @since 0.1.0
 */
export const countAbort = (context: Choice.Context) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.onInterrupt(effect, () =>
    Effect.sync(() => context.state.metrics.aborted(context.state.gate.isClosing ? "shutdown" : "disconnect")))

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
  context: Choice.Context,
  prompts: ReadonlyArray<Choice.Prompt>,
  n: number,
  options: StreamOptions
): Effect.Effect<Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>>, never, Scope.Scope> => {
  if (prompts.length !== 1 || n !== 1) return Stream.toPull(streamMany(context, prompts, n, options))
  const prompt = prompts[0]!
  return Effect.flatMap(Effect.scope, (scope) =>
    Effect.flatMap(
      Channel.toPullScoped(Stream.toChannel(Choice.parts(context, prompt)), scope),
      (pull) => recordsOne(context, prompt, options)(pull, scope)
    ))
}

/**
 * How a stream is shaped and counted.
 *
 * @since 0.1.0
 */
export interface StreamOptions {
  readonly format: Format
  readonly meta: Meta
  readonly includeUsage: boolean
  /** `performance.now()` when the request arrived (time to first token). */
  readonly startedAt: number
}

const bytes = (records: string): Arr.NonEmptyReadonlyArray<Uint8Array> => [Buffer.from(records, "utf8")]

/** The record a failure after the headers becomes (they went out with 200: too late for a status). */
const failureRecord = (
  context: Choice.Context,
  cause: Cause.Cause<TextError.TextError | ClientError.ClientError | ServerError>
): string => {
  const error = Cause.findErrorOption(cause)
  const failure = error._tag === "None"
    ? serverError(new Internal({ why: `the stream failed: ${Cause.pretty(cause)}` }))
    : error.value._tag === "ServerError"
    ? error.value
    : Choice.failed(context, error.value)
  return Sse.recordText(body(failure))
}

const countAborted = (context: Choice.Context): void =>
  context.state.metrics.aborted(context.state.gate.isClosing ? "shutdown" : "disconnect")

/**
 * One choice: the pull of its records over its parts' pull, no fiber or queue of its own (they
 * cost a fiber hand-off per pull, and this change took an open stream from 33.6 to 30.1 KB of
 * heap, measured through tsx). The first pull answers with the opening record at once, so the
 * headers and the role chunk go out before any token. The scope's exit tells an abort (the writer
 * stopped pulling first) from an end.
 */
const recordsOne = (context: Choice.Context, prompt: Choice.Prompt, options: StreamOptions) =>
  (
    pull: Pull.Pull<Arr.NonEmptyReadonlyArray<TextGeneration.StreamPart>, TextError.TextError | ClientError.ClientError, void>,
    scope: Scope.Scope
  ): Effect.Effect<Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>>> => {
    const { metrics } = context.state
    const chunks = Chunks.make(options.format, options.meta, options.includeUsage)
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
        const total = usage([done], 1)
        metrics.tokens(total.prompt_tokens, total.completion_tokens)
        over = true
        const refused = chunks.refusal(0, done)
        if (refused !== undefined) {
          // An error record ends the stream, as any failure after the headers does.
          records += Sse.recordText(body(refused))
          break
        }
        records += chunks.closing(0, unsent(done, sent), prompt)
        if (options.includeUsage) records += chunks.usage(total)
        records += Sse.doneText
        break
      }
      return records === "" ? next : Effect.succeed(bytes(records))
    }
    const onCause = (cause: Cause.Cause<TextError.TextError | ClientError.ClientError | Cause.Done>): Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>> => {
      if (Pull.isDoneCause(cause) || Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<Cause.Done>)
      over = true
      return Effect.succeed(bytes(failureRecord(context, cause as Cause.Cause<TextError.TextError | ClientError.ClientError>)))
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
        if (!over) countAborted(context)
      })),
      next
    )
  }

/**
 * Several choices (`n`, or several prompts): one `Stream.callback` whose queue a single fiber
 * fills, running every choice's stream at once; the records waiting are taken together.
 */
const streamMany = (
  context: Choice.Context,
  prompts: ReadonlyArray<Choice.Prompt>,
  n: number,
  options: StreamOptions
): Stream.Stream<Uint8Array> =>
  Stream.callback<Uint8Array>((queue) => {
    const { metrics } = context.state
    const chunks = Chunks.make(options.format, options.meta, options.includeUsage)
    const offer = (records: string) => Queue.offerUnsafe(queue, Buffer.from(records, "utf8"))
    const count = prompts.length * n
    const finished: Array<Choice.Finished | undefined> = new Array(count)
    let firstContent = true
    const choice = (index: number) => {
      const prompt = prompts[Math.floor(index / n)]!
      let sent = 0
      const opening = chunks.opening(index, prompt)
      if (opening !== undefined) offer(opening)
      return Stream.runForEach(Choice.parts(context, prompt), (part) => {
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
          offer(chunks.closing(index, unsent(done, sent), prompt))
        }
        return Effect.void
      })
    }
    const all = Effect.forEach(Array.from({ length: count }, (_, index) => index), choice, {
      concurrency: "unbounded",
      discard: true
    })
    return Effect.forkScoped(Effect.matchCause(Effect.onInterrupt(all, () => Effect.sync(() => countAborted(context))), {
      onSuccess: () => {
        const total = usage(finished, n)
        metrics.tokens(total.prompt_tokens, total.completion_tokens)
        offer(options.includeUsage ? chunks.usage(total) + Sse.doneText : Sse.doneText)
        Queue.endUnsafe(queue)
      },
      onFailure: (cause) => {
        if (Cause.hasInterruptsOnly(cause)) return
        offer(failureRecord(context, cause))
        Queue.endUnsafe(queue)
      }
    }))
  })
