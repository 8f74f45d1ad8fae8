/**
 * What both generation endpoints do once a request is valid: run its choices (`n` per prompt,
 * all at once), and answer with one JSON body or with an event stream. The endpoints differ only
 * in how a choice, a delta and a chunk are shaped ({@link Format}).
 *
 * Streamed, the records are `StreamedChoices`': the choices' events merged as they come. A failure
 * after the headers went out (the coordinator lost, the deadline) is written as one error record,
 * and the stream ends: the client sees an error, never a hang. A client that goes away interrupts
 * the response, which ends every choice's stream, which aborts each request on the coordinator.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import * as Choice from "./Choice.ts"
import * as Chunks from "./Chunks.ts"
import * as JsonResponse from "./JsonResponse.ts"
import type * as Routes from "./Routes.ts"
import * as RequestId from "./RequestId.ts"
import type * as Sampling from "./Sampling.ts"
import * as Sse from "./Sse.ts"
import { recordsAll } from "./StreamedChoices.ts"
import type { Usage } from "./OpenAiSchema.ts"
import type { ServerError } from "./ServerError.ts"

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
   * carries only the tokens' not sent before (`Choice.unsent`).
   */
  readonly deltaLogprobs?: ((index: number, text: string, tokens: ReadonlyArray<number>, logprobs: ReadonlyArray<number>) => unknown) | undefined
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
 * An endpoint that shapes its answers whole rather than as choices (OpenAI's Responses API): the
 * records of a stream (`Chunks`, over the same parts and reader as a chat's), and the body of a
 * plain answer from its finished choices and their usage.
 *
 * @since 0.2.0
 */
export interface WholeEndpoint {
  /** `resp_`. */
  readonly idPrefix: string
  /** The records of one stream. */
  readonly records: (meta: Meta) => Chunks.Chunks
  /** The body of a plain answer. */
  readonly body: (meta: Meta, finished: ReadonlyArray<Choice.Finished>, usage: Usage) => unknown
  /** Why a finished choice cannot be answered (see {@link ChoiceReader.refusal}): the request fails with it. */
  readonly refusal?: ((finished: Choice.Finished) => ServerError | undefined) | undefined
}

const isWhole = (endpoint: Endpoint | WholeEndpoint): endpoint is WholeEndpoint => "records" in endpoint

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
  endpoint: Endpoint | WholeEndpoint
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
  endpoint: Endpoint | WholeEndpoint
) => {
  const meta = makeMeta(endpoint.idPrefix, context.state.config.model, RequestId.of(generation.request))
  return Sse.write(generation.request, recordsAll(context, prompts, plan.n, {
    chunks: isWhole(endpoint) ? endpoint.records(meta) : Chunks.make(endpoint.format, meta, plan.includeUsage),
    startedAt: generation.startedAt
  }))
}

/** The choices, all of them finished, as one JSON body. */
const answered = (
  context: Choice.Context,
  prompts: ReadonlyArray<Choice.Prompt>,
  plan: Sampling.Plan,
  endpoint: Endpoint | WholeEndpoint,
  requestId: string | undefined
) => {
  const { n } = plan
  const meta = makeMeta(endpoint.idPrefix, context.state.config.model, requestId)
  const reply = (finished: Array<Choice.Finished>) => {
    const total = Choice.usage(finished, n)
    context.state.metrics.tokens(total.prompt_tokens, total.completion_tokens)
    if (isWhole(endpoint)) return JsonResponse.json(endpoint.body(meta, finished, total))
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
      const total = Choice.usage(finished, n)
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
