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
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { randomBytes } from "node:crypto"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import type * as Scope from "effect/Scope"
import * as Choice from "./Choice.ts"
import * as JsonResponse from "./JsonResponse.ts"
import type { Usage } from "./OpenAiSchema.ts"
import type * as Routes from "./Routes.ts"
import type * as Sampling from "./Sampling.ts"
import * as Sse from "./Sse.ts"
import { body, Internal, serverError, type ServerError } from "./ServerError.ts"

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
  Effect.flatMap(generation.admit, () => {
    const { n } = plan
    const meta = makeMeta(endpoint.idPrefix, context.state.config.model)
    if (plan.stream) {
      return Effect.succeed(Sse.response(streamAll(context, prompts, n, {
        meta,
        includeUsage: plan.includeUsage,
        startedAt: generation.startedAt,
        format: endpoint.format
      })))
    }
    return runAll(context, prompts, n).pipe(
      countAbort(context),
      Effect.map((finished) => {
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
      })
    )
  })

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
 * A response id with `prefix` (`chatcmpl-`, `cmpl-`).
 *
 * @since 0.1.0
 */
export const makeMeta = (prefix: string, model: string): Meta => ({
  id: `${prefix}${idPrefix}${(nextId++).toString(16).padStart(8, "0")}`,
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
 * The event stream of a request's choices, framed as SSE bytes: one `Stream.callback` whose queue
 * a single fiber fills, running every choice's stream (a stream combinator costs about 1 KB per
 * open stream, measured: this one is the only one the server adds). The response writer ending
 * early (the client went away, or shutdown) closes the callback's scope, which interrupts that
 * fiber, which ends each choice's stream, which aborts each request.
 *
 * @since 0.1.0
 */
export const streamAll = (
  context: Choice.Context,
  prompts: ReadonlyArray<Choice.Prompt>,
  n: number,
  options: {
    readonly format: Format
    readonly meta: Meta
    readonly includeUsage: boolean
    readonly startedAt: number
  }
): Stream.Stream<Uint8Array> =>
  Stream.callback<Uint8Array>((queue) => {
    const { format, includeUsage, meta: { created, id, model } } = options
    const { gate, metrics } = context.state
    const chunk = (choice: unknown): Uint8Array =>
      Sse.record(
        includeUsage
          ? { id, object: format.chunkObject, created, model, choices: [choice], usage: null }
          : { id, object: format.chunkObject, created, model, choices: [choice] }
      )
    const count = prompts.length * n
    const finished: Array<Choice.Finished | undefined> = new Array(count)
    let firstContent = true
    const content = (index: number, text: string): void => {
      if (firstContent) {
        firstContent = false
        metrics.firstToken(options.startedAt)
      }
      Queue.offerUnsafe(queue, chunk(format.delta(index, text)))
    }
    const choice = (index: number) => {
      const prompt = prompts[Math.floor(index / n)]!
      if (format.opening !== undefined) Queue.offerUnsafe(queue, chunk(format.opening(index, prompt)))
      return Stream.runForEach(Choice.parts(context, prompt), (part) => {
        if (part._tag === "TextDelta") {
          content(index, part.text)
        } else {
          const done = Choice.finishedOf(part)
          finished[index] = done
          Queue.offerUnsafe(queue, chunk(format.closing(index, done, prompt)))
        }
        return Effect.void
      })
    }
    const all = count === 1
      ? choice(0)
      : Effect.forEach(Array.from({ length: count }, (_, index) => index), choice, {
        concurrency: "unbounded",
        discard: true
      })
    const counted = Effect.onInterrupt(all, () =>
      Effect.sync(() => metrics.aborted(gate.isClosing ? "shutdown" : "disconnect"))
    )
    return Effect.forkScoped(Effect.matchCause(counted, {
      onSuccess: () => {
        const total = usage(finished, n)
        metrics.tokens(total.prompt_tokens, total.completion_tokens)
        if (includeUsage) {
          Queue.offerUnsafe(queue, Sse.record({ id, object: format.chunkObject, created, model, choices: [], usage: total }))
        }
        Queue.offerUnsafe(queue, Sse.done)
        Queue.endUnsafe(queue)
      },
      onFailure: (cause) => {
        if (Cause.hasInterruptsOnly(cause)) return
        // Headers went out with 200: the failure becomes the stream's last record.
        const error = Cause.findErrorOption(cause)
        const failure = error._tag === "Some"
          ? Choice.failed(context, error.value)
          : serverError(new Internal({ why: `the stream failed: ${Cause.pretty(cause)}` }))
        Queue.offerUnsafe(queue, Sse.record(body(failure)))
        Queue.endUnsafe(queue)
      }
    }))
  })
