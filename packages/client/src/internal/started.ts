/**
 * What `Service.start` returns (a `Started`), two ways:
 *
 * - {@link OneShot}, a request not streamed: registered with the one-shot entry `submit` uses
 *   (`pendingRequests.Single`), its reply awaited without aborting the request when the wait is
 *   interrupted. No queue: the disaggregated client's member requests (the prefill always, the
 *   decode when not streamed) took a queue each before, and the fiber woken through it
 *   (`Queue.releaseTakers`) was the largest item of the hand-off's CPU profile.
 * - {@link Queued}, a streamed request (and what a fleet or a disaggregated client hands out over
 *   a queue of its own): its events taken from a queue.
 *
 * @since 0.2.0
 * @internal
 */
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type { ClientError } from "../ClientError.ts"
import type { Started } from "../ClientService.ts"
import type { Reply, StreamEvent } from "../Reply.ts"
import type { Single } from "./pendingRequests.ts"

/**
 * A request not streamed: its id, its connection and its entry. Its `final` and `next` (the one
 * event it has) are built when asked for: most requests ask for one of them once.
 */
export class OneShot implements Started {
  constructor(readonly requestId: number, readonly connection: number, readonly entry: Single) {}

  get final(): Effect.Effect<Reply, ClientError> {
    return awaitOutcome(this.entry)
  }

  get next(): Effect.Effect<StreamEvent, ClientError> {
    return Effect.map(awaitOutcome(this.entry), toFinal)
  }
}

const toFinal = (reply: Reply): StreamEvent => ({ _tag: "Final", reply })

/**
 * The request's outcome, awaited; interrupting the wait leaves the request pending (another wait
 * may follow: an entry takes several waiters).
 */
const awaitOutcome = (entry: Single): Effect.Effect<Reply, ClientError> =>
  Effect.callback<Reply, ClientError>((resume) => {
    entry.listen(resume)
  })

/** A request's events taken from `events`: `Tokens`, one `Final`, then the queue's end. */
export class Queued implements Started {
  constructor(
    readonly requestId: number,
    readonly connection: number,
    readonly events: Queue.Dequeue<StreamEvent, ClientError | Cause.Done>
  ) {}

  get next(): Effect.Effect<StreamEvent, ClientError | Cause.Done> {
    return Queue.take(this.events)
  }

  get final(): Effect.Effect<Reply, ClientError | Cause.Done> {
    return finalOf(this.events)
  }
}

/** The first `Final` in `events`. */
const finalOf = (events: Queue.Dequeue<StreamEvent, ClientError | Cause.Done>): Effect.Effect<Reply, ClientError | Cause.Done> =>
  Effect.flatMap(Queue.take(events), (event) => (event._tag === "Final" ? Effect.succeed(event.reply) : finalOf(events)))

/** `started` under another id (a fleet's, which names its member): its events its own. */
export class Renamed implements Started {
  constructor(readonly requestId: number, private readonly started: Started) {}

  get connection(): number {
    return this.started.connection
  }

  get next(): Effect.Effect<StreamEvent, ClientError | Cause.Done> {
    return this.started.next
  }

  get final(): Effect.Effect<Reply, ClientError | Cause.Done> {
    return this.started.final
  }
}
