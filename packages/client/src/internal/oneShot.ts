/**
 * `Service.start` for a request whose events are not streamed, without the queue: the request
 * registered with a one-shot entry (what `submit` uses, `pendingRequests.Single`), and its reply
 * awaited without aborting it when the wait is interrupted (the caller ends it, as with `start`).
 * What the disaggregated client's member requests take (the prefill always, the decode when not
 * streamed): each of them through `start` cost a queue, and the fiber woken through it
 * (`Queue.releaseTakers`) was the largest item of the hand-off's CPU profile.
 *
 * Not on the `Service` interface: a client built by `InferenceClient.make` carries it under
 * {@link ONE_SHOT}; a client without it (another implementation, a wrapper) is used through
 * `start` (see {@link oneShotOf}).
 *
 * @since 0.4.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { ClientError } from "../ClientError.ts"
import type { Service, StartRequest } from "../ClientService.ts"
import type { Reply, StreamEvent } from "../Reply.ts"
import type * as Connection from "./connection.ts"
import type { Single } from "./pendingRequests.ts"

/** Where a client keeps its one-shot start. */
export const ONE_SHOT: unique symbol = Symbol.for("@mcore-effect/client/OneShot")

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

/** Starts a non-streamed request; fails, nothing sent, as `start` does. */
export type StartOnce = (request: StartRequest) => Result.Result<OneShot, ClientError>

/** The one-shot start of `connection` (a plain function: nothing allocated but the entry and the result). */
export const startOnceOf = (connection: Connection.Connection): StartOnce => (request) => {
  const registered = connection.register(
    request.kvHandoff === undefined ? request : { ...request, ...request.kvHandoff },
    false,
    connection.newSingle
  )
  if (Result.isFailure(registered)) return Result.fail(registered.failure)
  const entry = registered.success
  return Result.succeed(new OneShot(entry.requestId, connection.state.epoch, entry))
}

/** `service` carrying `startOnce` under {@link ONE_SHOT} (not enumerable: a spread drops it). */
export const withOneShot = <S extends Service>(service: S, startOnce: StartOnce): S =>
  Object.defineProperty(service, ONE_SHOT, { value: startOnce, enumerable: false })

/** The one-shot start of a client, if it has one. */
export const oneShotOf = (client: Service): StartOnce | undefined =>
  (client as { readonly [ONE_SHOT]?: StartOnce })[ONE_SHOT]

/**
 * The request's outcome, awaited; interrupting the wait leaves the request pending (another wait
 * may follow: an entry takes several waiters).
 */
export const awaitOutcome = (entry: Single): Effect.Effect<Reply, ClientError> =>
  Effect.callback<Reply, ClientError>((resume) => {
    entry.listen(resume)
  })
