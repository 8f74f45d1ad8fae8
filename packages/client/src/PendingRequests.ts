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
 * @since 0.1.0
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import type { ClientError } from "./ClientError.ts"
import type { Recorder } from "./ClientMetrics.ts"

/**
 * One event of a streamed request: new tokens, in order, any number of times; then one final
 * reply; then the stream ends.
 *
 * @since 0.1.0
 */
export type StreamEvent<Reply> = Partial | Final<Reply>

/**
 * New tokens of a streamed request (`ENGINE_REPLY_PARTIAL`).
 *
 * @since 0.1.0
 */
export interface Partial {
  readonly _tag: "Partial"
  readonly requestId: number
  readonly newTokens: ReadonlyArray<number>
}

/**
 * The finished request (`ENGINE_REPLY`), exactly once, last.
 *
 * @since 0.1.0
 */
export interface Final<Reply> {
  readonly _tag: "Final"
  readonly reply: Reply
}

/**
 * A request waiting for one reply. Its completion is a one-shot cell like a `Deferred`, kept to
 * the fields it needs: a fiber waiting in `submit` registers its resume callback here directly,
 * which saves the `Deferred`, its waiter array and its per-wait cleanup effect (a few hundred bytes
 * per pending request, measured at 100,000 in flight).
 *
 * @since 0.1.0
 */
export class Single<Reply> {
  /** The outcome, once known. */
  exit: Exit.Exit<Reply, ClientError> | undefined = undefined
  /** Who waits: usually one fiber, more only when `submitWithId`'s reply is awaited twice. */
  private waiters: Waiter<Reply> | Array<Waiter<Reply>> | undefined = undefined
  /** The deadline's timer, when the request has one. */
  timer: ReturnType<typeof setTimeout> | undefined = undefined
  constructor(
    readonly requestId: number,
    /** `performance.now()` at submission. */
    readonly startedAt: number
  ) {}

  /** Calls `waiter` with the outcome: now if it is known, else when it is. */
  listen(waiter: Waiter<Reply>): void {
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

/**
 * A fiber's resume callback.
 *
 * @since 0.1.0
 */
export type Waiter<Reply> = (exit: Exit.Exit<Reply, ClientError>) => void

/**
 * A streamed request: its events go to the stream's queue.
 *
 * @since 0.1.0
 */
export class Streamed<Reply> {
  timer: ReturnType<typeof setTimeout> | undefined = undefined
  /** Whether a partial has arrived (for the time-to-first-token metric). */
  started = false
  constructor(
    readonly requestId: number,
    readonly startedAt: number,
    readonly queue: Queue.Enqueue<StreamEvent<Reply>, ClientError | Cause.Done>
  ) {}
}

/**
 * @since 0.1.0
 */
export type Entry<Reply> = Single<Reply> | Streamed<Reply>

/**
 * The registry.
 *
 * @since 0.1.0
 */
export class PendingRequests<Reply> {
  private readonly entries = new Map<number, Entry<Reply>>()

  constructor(private readonly metrics: Recorder) {}

  /** Requests in flight. */
  get size(): number {
    return this.entries.size
  }

  /** Registers a request about to be sent. */
  add(entry: Entry<Reply>): void {
    this.entries.set(entry.requestId, entry)
    this.metrics.submitted()
  }

  /** The entry of a pending request, left in place. */
  get(requestId: number): Entry<Reply> | undefined {
    return this.entries.get(requestId)
  }

  /** Removes a pending request and returns it (`undefined` when it is not pending). */
  take(requestId: number): Entry<Reply> | undefined {
    const entry = this.entries.get(requestId)
    if (entry === undefined) return undefined
    this.entries.delete(requestId)
    if (entry.timer !== undefined) clearTimeout(entry.timer)
    return entry
  }

  /** Finishes a taken request with its reply. */
  complete(entry: Entry<Reply>, reply: Reply, latencySeconds: number, tokens: number): void {
    this.metrics.completed(latencySeconds, tokens)
    if (entry instanceof Single) {
      entry.done(Exit.succeed(reply))
    } else {
      Queue.offerUnsafe(entry.queue, { _tag: "Final", reply })
      Queue.endUnsafe(entry.queue)
    }
  }

  /** Hands new tokens to a streamed request; a single-reply request ignores them. */
  partial(entry: Entry<Reply>, newTokens: ReadonlyArray<number>): void {
    if (!(entry instanceof Streamed)) return
    if (!entry.started) {
      entry.started = true
      this.metrics.firstToken((performance.now() - entry.startedAt) / 1000)
    }
    Queue.offerUnsafe(entry.queue, { _tag: "Partial", requestId: entry.requestId, newTokens })
  }

  /** Ends a taken request with an error, counted as aborted or as failed. */
  fail(entry: Entry<Reply>, error: ClientError, as: "aborted" | "failed"): void {
    if (as === "aborted") this.metrics.aborted()
    else this.metrics.failed(1)
    end(entry, error)
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

const end = <Reply>(entry: Entry<Reply>, error: ClientError): void => {
  if (entry instanceof Single) {
    entry.done(Exit.fail(error))
  } else {
    Queue.failCauseUnsafe(entry.queue, Cause.fail(error))
  }
}

/**
 * A registry whose pending requests all fail with `onClose()` when the scope closes.
 *
 * @since 0.1.0
 */
export const make = <Reply>(
  metrics: Recorder,
  onClose: () => ClientError
): Effect.Effect<PendingRequests<Reply>, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => new PendingRequests<Reply>(metrics)),
    (pending) => Effect.sync(() => pending.failAll(onClose()))
  )
