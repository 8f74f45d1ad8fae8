/**
 * The one responder of the generation endpoints: it consumes a request's `Plan` once the request
 * is known to be valid, runs its choices (`n` per prompt, all at once), and answers with one JSON
 * body or with an event stream, shaped by the plan's answer (`answer/Answers`).
 *
 * Streamed, the records are `StreamedChoices`': the choices' events merged as they come. A failure
 * after the headers went out (the coordinator lost, the deadline) is written as one error record,
 * and the stream ends: the client sees an error, never a hang. A client that goes away interrupts
 * the response, which ends every choice's stream, which aborts each request on the coordinator.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Scope from "effect/Scope"
import { randomBytes } from "node:crypto"
import type { ServerError } from "../ServerError.ts"
import * as Answers from "./answer/Answers.ts"
import * as Choice from "./Choice.ts"
import type { Handler, Shared } from "./Handler.ts"
import * as JsonResponse from "./JsonResponse.ts"
import type { Finished, Meta, Plan, Prompt } from "./Plan.ts"
import * as RequestId from "./RequestId.ts"
import type { State } from "./ServerState.ts"
import * as Sse from "./Sse.ts"
import { recordsAll } from "./StreamedChoices.ts"

/**
 * Answers a valid request: takes its place in flight, then streams its choices or waits for them
 * all and answers with one JSON body.
 *
 * @since 0.2.0
 */
export const respond = (
  handler: Handler,
  plan: Plan
): Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError, Scope.Scope> =>
  plan.stream
    // The place, then a continuation the fiber lets go of once it ran: `admitThen`'s closure
    // stays reachable while what it leads to runs, which kept the request's handler, body and
    // plan alive as long as its stream was open (PERFORMANCE.md#admission). A plain answer is
    // short-lived, and takes the fewer steps.
    ? Effect.flatMap(admitThen(handler, noop), () => streamed(handler, plan))
    : admitThen(handler, () => answered(handler.shared, plan, RequestId.of(handler.request)))

const noop = (): Effect.Effect<void> => Effect.void

/**
 * A place among the requests in flight: given back when the request's scope closes, if it was
 * taken. Holds only what giving it back needs (not the request, its body or its plan, which a
 * stream's scope would keep alive with it: PERFORMANCE.md#admission).
 */
class Place {
  entered = false
  constructor(private readonly state: State, private readonly route: string, private readonly startedAt: number) {}

  readonly release: Effect.Effect<void> = Effect.sync(() => {
    if (!this.entered) return
    this.state.gate.leave()
    this.state.metrics.finished(this.route, this.startedAt)
  })
}

/**
 * Takes the request's place among those in flight (429 or 503 when there is none), then runs
 * `then`; the place is given back when the request's scope closes, after the last byte of its
 * response, streamed or not. The finalizer goes on the scope first and the place is taken after
 * it in one synchronous step: no interruption can fall between taking the place and the
 * finalizer that gives it back, in fewer steps of the runtime than `Effect.addFinalizer`
 * (PERFORMANCE.md#admission).
 */
const admitThen = <A, E, R>(
  handler: Handler,
  then: () => Effect.Effect<A, E, R>
): Effect.Effect<A, E | ServerError, R | Scope.Scope> => {
  const state = handler.shared.state
  const place = new Place(state, handler.route, handler.startedAt)
  return Effect.withFiber((fiber) =>
    Effect.flatMap(Scope.addFinalizer(Context.get(fiber.context as Context.Context<Scope.Scope>, Scope.Scope), place.release), (): Effect.Effect<A, E | ServerError, R> => {
      const refused = state.gate.enter()
      if (refused !== undefined) return Effect.fail(refused)
      place.entered = true
      state.metrics.started()
      return then()
    })
  )
}

/** The choices written to the response as server-sent events, as they come. */
const streamed = (handler: Handler, plan: Plan) => {
  const { shared, startedAt } = handler
  const meta = makeMeta(Answers.idPrefix(plan.answer), shared.state.config.model, RequestId.of(handler.request))
  return Sse.write(handler.request, recordsAll(shared, plan, { chunks: Answers.records(plan, meta), startedAt }))
}

/** The choices, all of them finished, as one JSON body. */
const answered = (shared: Shared, plan: Plan, requestId: string | undefined) => {
  const { answer, n, prompts } = plan
  const meta = makeMeta(Answers.idPrefix(answer), shared.state.config.model, requestId)
  const reply = (finished: Array<Finished>) =>
    JsonResponse.json(Answers.body(plan, meta, finished, Choice.countedUsage(shared, finished, n)))
  // One choice (the usual request): one step from its generation to the response.
  if (!Answers.mayRefuse(answer)) {
    return countAbort(shared)(
      prompts.length === 1 && n === 1
        ? Effect.map(Choice.generate(shared, plan, prompts[0]!), (one) => reply([one]))
        : Effect.map(runAll(shared, plan), reply)
    )
  }
  return countAbort(shared)(Effect.flatMap(runAll(shared, plan), (finished) => {
    for (const choice of finished) {
      const refused = Answers.refusal(answer, choice)
      if (refused === undefined) continue
      Choice.countedUsage(shared, finished, n)
      return Effect.fail(refused)
    }
    return Effect.succeed(reply(finished))
  }))
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
const makeMeta = (prefix: string, model: string, requestId?: string | undefined): Meta => ({
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
const runAll = (shared: Shared, plan: Plan): Effect.Effect<Array<Finished>, ServerError> => {
  const { n, prompts } = plan
  if (prompts.length === 1 && n === 1) return Effect.map(Choice.generate(shared, plan, prompts[0]!), (one) => [one])
  const all: Array<Prompt> = []
  for (const prompt of prompts) for (let j = 0; j < n; j++) all.push(prompt)
  return Effect.forEach(all, (prompt) => Choice.generate(shared, plan, prompt), { concurrency: "unbounded" })
}

/**
 * Counts an interrupted generation as an abort: by the client (it went away) or by shutdown.
 *
 * @since 0.1.0
 */
const countAbort = (shared: Shared) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.onInterrupt(effect, () => Effect.sync(() => Choice.countInterrupted(shared)))
