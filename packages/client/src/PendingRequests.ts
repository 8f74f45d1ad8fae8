/**
 * The registry of requests in flight: a plain `Map` from request id to the smallest entry that can
 * finish the request: a one-shot completion for a single reply, the stream's queue for a streamed one. Every
 * transition (completed, partial, aborted, failed) goes through here, so the registry, the waiting
 * fibers and the metrics cannot disagree. An id leaves the registry exactly once; whatever arrives
 * for it afterwards is dropped by the caller.
 *
 * Completion happens from the socket's receive loop, outside the fiber runtime: by resuming the
 * waiting fiber directly, or with `Queue.offerUnsafe` for a stream.
 *
 * Every request in flight costs memory for as long as it waits, so the entries are kept small:
 * a waiting `submit` holds its entry, its fiber's resume callback, and nothing else of ours.
 *
 * @since 0.1.0
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Effectable from "effect/Effectable"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import { type ClientError, clientError, RequestAborted } from "./ClientError.ts"
import type { Recorder } from "./ClientMetrics.ts"
import type { Reply, StreamEvent } from "./Reply.ts"

/**
 * Who gives up on a request: interrupting a waiting fiber aborts its request through this (the
 * connection, which tells the coordinator and then the registry).
 *
 * @since 0.1.0
 */
export interface Canceller {
  readonly cancel: (requestId: number) => void
}

/**
 * A request waiting for one reply. Its completion is a one-shot cell like a `Deferred`, kept to
 * the fields it needs: a fiber waiting in `submit` registers its resume callback here directly,
 * which saves the `Deferred`, its waiter array and its per-wait cleanup effect (a few hundred bytes
 * per pending request, measured at 100,000 in flight).
 *
 * It is also the `Effect` that aborts it (see {@link Single.prototype}): what a waiting fiber hands
 * `Effect.callback` to run if it is interrupted, without a closure per request.
 *
 * @since 0.1.0
 */
export class Single {
  /** The outcome, once known. */
  exit: Exit.Exit<Reply, ClientError> | undefined = undefined
  /** Who waits: usually one fiber, more only when `submitWithId`'s reply is awaited twice. */
  private waiters: Waiter | Array<Waiter> | undefined = undefined
  /** The deadline's timer, when the request has one. */
  timer: ReturnType<typeof setTimeout> | undefined = undefined
  constructor(
    readonly canceller: Canceller,
    readonly requestId: number,
    /** `performance.now()` at submission. */
    readonly startedAt: number
  ) {}

  /** Calls `waiter` with the outcome: now if it is known, else when it is. */
  listen(waiter: Waiter): void {
    if (this.exit !== undefined) return waiter(this.exit)
    const waiters = this.waiters
    if (waiters === undefined) this.waiters = waiter
    else if (typeof waiters === "function") this.waiters = [waiters, waiter]
    else waiters.push(waiter)
  }

  /** Settles the request once; later calls are ignored. */
  done(exit: Exit.Exit<Reply, ClientError>): void {
    if (this.exit !== undefined) return
    this.exit = exit
    const waiters = this.waiters
    this.waiters = undefined
    if (typeof waiters === "function") waiters(exit)
    else if (waiters !== undefined) for (const waiter of waiters) waiter(exit)
  }
}

/** `Single` as an Effect: running it aborts the request, if it is still pending. */
export interface Single extends Effect.Effect<void> {}

Object.setPrototypeOf(
  Single.prototype,
  Effectable.Prototype<Single>({
    label: "InferenceClient.abortPending",
    evaluate() {
      this.canceller.cancel(this.requestId)
      return Effect.void
    }
  })
)

/**
 * A fiber's resume callback.
 *
 * @since 0.1.0
 */
export type Waiter = (exit: Exit.Exit<Reply, ClientError>) => void

/**
 * A streamed request: its events go to the stream's queue.
 *
 * @since 0.1.0
 */
export class Streamed {
  timer: ReturnType<typeof setTimeout> | undefined = undefined
  /** Whether a partial has arrived (for the time-to-first-token metric). */
  started = false
  constructor(
    readonly requestId: number,
    readonly startedAt: number,
    readonly queue: Queue.Enqueue<StreamEvent, ClientError | Cause.Done>
  ) {}
}

/**
 * Where the replies of a `submitAll` batch go.
 *
 * @since 0.1.0
 */
export interface BatchSink {
  /** A request of the batch finished. */
  readonly completed: (entry: Batched, reply: Reply) => void
  /** A request of the batch failed (the batch fails with it). */
  readonly failed: (entry: Batched, error: ClientError) => void
}

/**
 * A request of a `submitAll` batch: no fiber waits for it, its reply goes to the batch's sink.
 * The smallest entry there is, which is what lets a batch keep 100,000 requests in flight on
 * about a hundred bytes each.
 *
 * @since 0.1.0
 */
export class Batched {
  timer: ReturnType<typeof setTimeout> | undefined = undefined
  constructor(
    readonly sink: BatchSink,
    /** The request's position in the batch's input. */
    readonly index: number,
    readonly requestId: number,
    readonly startedAt: number
  ) {}
}

/**
 * @since 0.1.0
 */
export type Entry = Single | Streamed | Batched

/**
 * The registry.
 *
 * @since 0.1.0
 */
export class PendingRequests {
  private readonly entries = new Map<number, Entry>()

  constructor(private readonly metrics: Recorder) {}

  /** Requests in flight. */
  get size(): number {
    return this.entries.size
  }

  /** Registers a request about to be sent. */
  add(entry: Entry): void {
    this.entries.set(entry.requestId, entry)
    this.metrics.submitted()
  }

  /** The entry of a pending request, left in place. */
  get(requestId: number): Entry | undefined {
    return this.entries.get(requestId)
  }

  /** Removes a pending request and returns it (`undefined` when it is not pending). */
  take(requestId: number): Entry | undefined {
    const entry = this.entries.get(requestId)
    if (entry === undefined) return undefined
    this.entries.delete(requestId)
    if (entry.timer !== undefined) clearTimeout(entry.timer)
    return entry
  }

  /** Finishes a taken request with its reply. */
  complete(entry: Entry, reply: Reply, latencySeconds: number, tokens: number): void {
    this.metrics.completed(latencySeconds, tokens)
    if (entry instanceof Single) {
      entry.done(Exit.succeed(reply))
    } else if (entry instanceof Batched) {
      entry.sink.completed(entry, reply)
    } else {
      Queue.offerUnsafe(entry.queue, { _tag: "Final", reply })
      Queue.endUnsafe(entry.queue)
    }
  }

  /** Hands new tokens to a streamed request; a single-reply request ignores them. */
  partial(entry: Entry, newTokens: ReadonlyArray<number>): void {
    if (!(entry instanceof Streamed)) return
    if (!entry.started) {
      entry.started = true
      this.metrics.firstToken((performance.now() - entry.startedAt) / 1000)
    }
    Queue.offerUnsafe(entry.queue, { _tag: "Tokens", requestId: entry.requestId, newTokens })
  }

  /** Ends a taken request with an error, counted as aborted or as failed. */
  fail(entry: Entry, error: ClientError, as: "aborted" | "failed"): void {
    if (as === "aborted") this.metrics.aborted()
    else this.metrics.failed(1)
    end(entry, error)
  }

  /** The ids of a batch's pending requests. */
  idsOf(sink: BatchSink): Array<number> {
    const ids: Array<number> = []
    for (const entry of this.entries.values()) {
      if (entry instanceof Batched && entry.sink === sink) ids.push(entry.requestId)
    }
    return ids
  }

  /** Ends every pending request with the same error (client closed, coordinator lost). */
  failAll(error: ClientError): void {
    if (this.entries.size === 0) return
    const entries = [...this.entries.values()]
    this.entries.clear()
    this.metrics.failed(entries.length)
    for (const entry of entries) {
      if (entry.timer !== undefined) clearTimeout(entry.timer)
      end(entry, error)
    }
  }
}

const end = (entry: Entry, error: ClientError): void => {
  if (entry instanceof Single) {
    entry.done(Exit.fail(error))
  } else if (entry instanceof Batched) {
    entry.sink.failed(entry, error)
  } else {
    Queue.failCauseUnsafe(entry.queue, Cause.fail(error))
  }
}
