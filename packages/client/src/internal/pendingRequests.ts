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
import type { ClientError } from "../ClientError.ts"
import type { Recorder } from "../ClientMetrics.ts"
import type { Reply, StreamEvent } from "../Reply.ts"

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
 * which saves the `Deferred` and its per-wait cleanup; who waits and then the outcome share one
 * field (measurements in the package's PERFORMANCE.md, "A one-shot cell instead of a `Deferred`").
 *
 * It is also the `Effect` that aborts it (see {@link Single.prototype}): what a waiting fiber hands
 * `Effect.callback` to run if it is interrupted, without a closure per request.
 *
 * @since 0.1.0
 */
export abstract class Single {
  /**
   * Who waits (usually one fiber's resume callback, an array only when `submitWithId`'s reply is
   * awaited twice), then the outcome once known.
   */
  private state: Waiter | Array<Waiter> | Exit.Exit<Reply, ClientError> | undefined = undefined
  /** Who aborts the request: on the prototype of the connection's own subclass (see {@link singles}). */
  abstract readonly canceller: Canceller
  constructor(readonly requestId: number) {}

  /** The outcome, once known. */
  get exit(): Exit.Exit<Reply, ClientError> | undefined {
    const state = this.state
    return state === undefined || typeof state === "function" || Array.isArray(state) ? undefined : state
  }

  /** Calls `waiter` with the outcome: now if it is known, else when it is. */
  listen(waiter: Waiter): void {
    const state = this.state
    if (state === undefined) this.state = waiter
    else if (typeof state === "function") this.state = [state, waiter]
    else if (Array.isArray(state)) state.push(waiter)
    else waiter(state)
  }

  /** Settles the request once; later calls are ignored. */
  done(exit: Exit.Exit<Reply, ClientError>): void {
    const state = this.state
    if (state !== undefined && typeof state !== "function" && !Array.isArray(state)) return
    this.state = exit
    if (typeof state === "function") state(exit)
    else if (state !== undefined) for (const waiter of state) waiter(exit)
  }
}

/**
 * Makes the single-reply entries of one canceller (a connection): a subclass of {@link Single}
 * whose prototype holds the canceller, so an entry is its id and its state (40 bytes).
 *
 * @since 0.1.0
 */
export const singles = (canceller: Canceller): (requestId: number) => Single => {
  class BoundSingle extends Single {
    get canceller(): Canceller {
      return canceller
    }
  }
  return (requestId) => new BoundSingle(requestId)
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
  /** Whether a partial has arrived (for the time-to-first-token metric). */
  started = false
  constructor(
    readonly requestId: number,
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
  constructor(
    readonly sink: BatchSink,
    /** The request's position in the batch's input. */
    readonly index: number,
    readonly requestId: number
  ) {}
}

/**
 * @since 0.1.0
 */
export type Entry = Single | Streamed | Batched

/** Ids per page of the registry. */
const PAGE_SIZE = 64

/**
 * The requests whose ids share `Math.floor(id / PAGE_SIZE)`: their entries, their start times
 * (a double array holds them unboxed: a start time kept on an entry was an 8-byte field and a
 * 16-byte heap number), and their deadlines' timers (made with the first one).
 */
class Page {
  readonly entries: Array<Entry | undefined> = new Array<Entry | undefined>(PAGE_SIZE).fill(undefined)
  // Filled with a fraction so the array's elements are doubles from the start.
  readonly startedAt: Array<number> = new Array<number>(PAGE_SIZE).fill(0.5)
  timers: Array<ReturnType<typeof setTimeout> | undefined> | undefined = undefined
  /** Entries present. */
  live = 0
}

/**
 * The registry.
 *
 * Ids are handed out in order, so pending ones are dense: they are kept in pages of
 * {@link PAGE_SIZE} slots, found through a `Map` by page number, and a page goes once its last
 * request leaves. At 20,000 in flight a `Map` of entries took ~46 bytes a request (with the
 * start time on the entry, 70); a page takes ~19 (slot, start time, and its share of the page).
 * A request that stays pending long keeps its page (~1.2 KB) alive.
 *
 * @since 0.1.0
 */
export class PendingRequests {
  private readonly pages = new Map<number, Page>()
  /** The page used last, and its number: most lookups are for the newest requests. */
  private lastPage: Page | undefined = undefined
  private lastNumber = -1
  private count = 0

  constructor(private readonly metrics: Recorder) {}

  /** Requests in flight. */
  get size(): number {
    return this.count
  }

  private page(requestId: number): Page | undefined {
    const number = Math.floor(requestId / PAGE_SIZE)
    if (number === this.lastNumber) return this.lastPage
    const page = this.pages.get(number)
    if (page !== undefined) {
      this.lastPage = page
      this.lastNumber = number
    }
    return page
  }

  /** Registers a request about to be sent, started at `startedAt` (`performance.now()`). */
  add(entry: Entry, startedAt: number = performance.now()): void {
    const requestId = entry.requestId
    let page = this.page(requestId)
    if (page === undefined) {
      page = new Page()
      const number = Math.floor(requestId / PAGE_SIZE)
      this.pages.set(number, page)
      this.lastPage = page
      this.lastNumber = number
    }
    const slot = requestId % PAGE_SIZE
    if (page.entries[slot] === undefined) {
      page.live++
      this.count++
    } else {
      this.clearTimer(page, slot)
    }
    page.entries[slot] = entry
    page.startedAt[slot] = startedAt
    this.metrics.submitted()
  }

  /** Gives a pending request a deadline's timer, cleared when it leaves. */
  setTimer(requestId: number, timer: ReturnType<typeof setTimeout>): void {
    const page = this.page(requestId)
    const slot = requestId % PAGE_SIZE
    if (page === undefined || page.entries[slot] === undefined) return clearTimeout(timer)
    const timers = page.timers ??= new Array(PAGE_SIZE).fill(undefined)
    if (timers[slot] !== undefined) clearTimeout(timers[slot])
    timers[slot] = timer
  }

  /** The entry of a pending request, left in place. */
  get(requestId: number): Entry | undefined {
    return this.page(requestId)?.entries[requestId % PAGE_SIZE]
  }

  /** Seconds since a pending request started (`NaN` when it is not pending). */
  elapsedSeconds(requestId: number): number {
    const page = this.page(requestId)
    const slot = requestId % PAGE_SIZE
    if (page === undefined || page.entries[slot] === undefined) return Number.NaN
    return (performance.now() - page.startedAt[slot]!) / 1000
  }

  /** Removes a pending request and returns it (`undefined` when it is not pending). */
  take(requestId: number): Entry | undefined {
    const page = this.page(requestId)
    if (page === undefined) return undefined
    const slot = requestId % PAGE_SIZE
    const entry = page.entries[slot]
    if (entry === undefined) return undefined
    page.entries[slot] = undefined
    this.clearTimer(page, slot)
    this.count--
    if (--page.live === 0) this.drop(requestId)
    return entry
  }

  private clearTimer(page: Page, slot: number): void {
    const timers = page.timers
    if (timers === undefined) return
    const timer = timers[slot]
    if (timer === undefined) return
    timers[slot] = undefined
    clearTimeout(timer)
  }

  private drop(requestId: number): void {
    const number = Math.floor(requestId / PAGE_SIZE)
    this.pages.delete(number)
    if (number === this.lastNumber) {
      this.lastPage = undefined
      this.lastNumber = -1
    }
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

  /**
   * Hands new tokens (and their log probs, when the engine sent them) to a pending streamed
   * request; a single-reply request ignores them.
   */
  partial(entry: Entry, newTokens: ReadonlyArray<number>, newLogProbs?: ReadonlyArray<number> | undefined): void {
    if (!(entry instanceof Streamed)) return
    if (!entry.started) {
      entry.started = true
      this.metrics.firstToken(this.elapsedSeconds(entry.requestId))
    }
    Queue.offerUnsafe(
      entry.queue,
      newLogProbs === undefined
        ? { _tag: "Tokens", requestId: entry.requestId, newTokens }
        : { _tag: "Tokens", requestId: entry.requestId, newTokens, newLogProbs }
    )
  }

  /** Ends a taken request with an error, counted as aborted or as failed. */
  fail(entry: Entry, error: ClientError, as: "aborted" | "failed"): void {
    if (as === "aborted") this.metrics.aborted()
    else this.metrics.failed(1)
    end(entry, error)
  }

  /** The pending entries, in id order within each page. */
  private *entries(): Generator<Entry> {
    for (const page of this.pages.values()) {
      for (const entry of page.entries) if (entry !== undefined) yield entry
    }
  }

  /** The ids of every pending request. */
  ids(): Array<number> {
    const ids: Array<number> = []
    for (const entry of this.entries()) ids.push(entry.requestId)
    return ids
  }

  /** The ids of a batch's pending requests. */
  idsOf(sink: BatchSink): Array<number> {
    const ids: Array<number> = []
    for (const entry of this.entries()) {
      if (entry instanceof Batched && entry.sink === sink) ids.push(entry.requestId)
    }
    return ids
  }

  /** Ends every pending request with the same error (client closed, coordinator lost). */
  failAll(error: ClientError): void {
    if (this.count === 0) return
    const entries = [...this.entries()]
    for (const page of this.pages.values()) {
      if (page.timers !== undefined) for (const timer of page.timers) if (timer !== undefined) clearTimeout(timer)
    }
    this.pages.clear()
    this.lastPage = undefined
    this.lastNumber = -1
    this.count = 0
    this.metrics.failed(entries.length)
    for (const entry of entries) end(entry, error)
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
