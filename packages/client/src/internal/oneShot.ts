/**
 * `Service.start` for a request whose events are not streamed, without the queue: the request
 * registered with a one-shot entry (what `submit` uses, `pendingRequests.Single`), and its reply
 * awaited without aborting it when the wait is interrupted (the caller ends it, as with `start`).
 * What the disaggregated client's member requests take (the prefill always, the decode when not
 * streamed): each of them through `start` cost a queue, and the fiber woken through it
 * (`Queue.releaseTakers`) was the largest item of the hand-off's CPU profile.
 *
 * And RELEASE_KV sent from the caller's fiber with nothing but its checks ({@link Internals}),
 * rather than through `releaseKvHandoff`'s traced `Effect.fn`.
 *
 * Not on the `Service` interface: a client built by `InferenceClient.make` carries them under
 * {@link INTERNALS}; a client without them (another implementation, a wrapper) is used through
 * `start` and `releaseKvHandoff` (see {@link internalsOfClient}). {@link launch} starts a member's
 * request the one way or the other, as the hand-off (`handoff.ts`) takes it.
 *
 * @since 0.2.0
 * @internal
 */
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import type { ClientError } from "../ClientError.ts"
import type { Service, Started, StartRequest } from "../ClientService.ts"
import type { Reply, StreamEvent } from "../Reply.ts"
import type * as Connection from "./connection.ts"
import type { Single } from "./pendingRequests.ts"
import { checkRequestId } from "./arguments.ts"

/** Where a client keeps its one-shot start. */
export const INTERNALS: unique symbol = Symbol.for("@mcore-effect/client/Internals")

/**
 * A request started for one reply: its id, its connection (as `Started`'s) and its entry. Its
 * `final` and `next` (the one event a non-streamed request has) are built when asked for: most
 * requests ask for one of them once.
 */
export class OneShot {
  constructor(readonly requestId: number, readonly connection: number, readonly entry: Single) {}

  /** The final reply, awaited (see {@link awaitOutcome}). */
  get final(): Effect.Effect<Reply, ClientError> {
    return awaitOutcome(this.entry)
  }

  /** The request's one event, its `Final`. */
  get next(): Effect.Effect<StreamEvent, ClientError> {
    return Effect.map(awaitOutcome(this.entry), toFinal)
  }
}

const toFinal = (reply: Reply): StreamEvent => ({ _tag: "Final", reply })

/** What a client built by `InferenceClient.make` carries under {@link INTERNALS}. */
export interface Internals {
  /** Starts a non-streamed request; fails, nothing sent, as `start` does. */
  readonly startOnce: (request: StartRequest) => Result.Result<OneShot, ClientError>
  /**
   * RELEASE_KV for `requestId` on `connection`, as `releaseKvHandoff(requestId, { connection })`
   * (the same checks, the same refusals) but at once: the refusal, or `undefined` once queued.
   * For the caller to use when no tracer is installed (it makes no span).
   */
  readonly releaseKv: (requestId: number, connection: number) => ClientError | undefined
}

/** The internals of `connection`'s client (plain functions: nothing allocated per call but the entry and the result). */
export const internalsOf = (connection: Connection.Connection): Internals => ({
  startOnce: (request) => {
    const registered = connection.register(
      request.kvHandoff === undefined ? request : { ...request, ...request.kvHandoff },
      false,
      connection.newSingle
    )
    if (Result.isFailure(registered)) return Result.fail(registered.failure)
    const entry = registered.success
    return Result.succeed(new OneShot(entry.requestId, connection.state.epoch, entry))
  },
  releaseKv: (requestId, epoch) => {
    return checkRequestId(requestId) ?? connection.available() ?? connection.releaseKv(requestId, epoch)
  }
})

/** `service` carrying `internals` under {@link INTERNALS} (not enumerable: a spread drops them). */
export const withInternals = <S extends Service>(service: S, internals: Internals): S =>
  Object.defineProperty(service, INTERNALS, { value: internals, enumerable: false })

/** The internals of a client, if it has them. */
export const internalsOfClient = (client: Service): Internals | undefined =>
  (client as { readonly [INTERNALS]?: Internals })[INTERNALS]

/**
 * The request's outcome, awaited; interrupting the wait leaves the request pending (another wait
 * may follow: an entry takes several waiters).
 */
export const awaitOutcome = (entry: Single): Effect.Effect<Reply, ClientError> =>
  Effect.callback<Reply, ClientError>((resume) => {
    entry.listen(resume)
  })

/** The first `Final` in a member's events (a non-streamed request has nothing before it). */
const finalOf = (events: Queue.Dequeue<StreamEvent, ClientError | Cause.Done>): Effect.Effect<Reply, ClientError | Cause.Done> =>
  Effect.flatMap(Queue.take(events), (event) => (event._tag === "Final" ? Effect.succeed(event.reply) : finalOf(events)))

/**
 * A member's request: its id and connection (`Started`'s), its next event and its final reply,
 * each awaited without ending it. A {@link OneShot} when the member's client has {@link Internals}
 * and the request is not streamed (measured in the client's PERFORMANCE.md, "Disaggregation"),
 * else its `start`'s queue.
 */
export interface Launched {
  readonly requestId: number
  readonly connection: number
  readonly next: Effect.Effect<StreamEvent, ClientError | Cause.Done>
  readonly final: Effect.Effect<Reply, ClientError | Cause.Done>
}

/** {@link Launched} over `start`'s queue. */
class Queued implements Launched {
  constructor(readonly started: Started) {}
  get requestId(): number {
    return this.started.requestId
  }
  get connection(): number {
    return this.started.connection
  }
  get next(): Effect.Effect<StreamEvent, ClientError | Cause.Done> {
    return Queue.take(this.started.events)
  }
  get final(): Effect.Effect<Reply, ClientError | Cause.Done> {
    return finalOf(this.started.events)
  }
}

const queued = (started: Started): Launched => new Queued(started)

/** Starts a member's request (see {@link Launched}); fails, nothing sent, when its client refuses it. */
export const launch = (client: Service, request: StartRequest): Effect.Effect<Launched, ClientError> => {
  const internals = request.streaming === true ? undefined : internalsOfClient(client)
  if (internals === undefined) return Effect.map(client.start(request), queued)
  return Effect.suspend(() => {
    const started = internals.startOnce(request)
    return Result.isFailure(started) ? Effect.fail(started.failure) : Effect.succeed(started.success)
  })
}
