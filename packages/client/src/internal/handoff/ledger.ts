/**
 * The disaggregated client's books: how its requests ended, the KV blocks pinned on prefill
 * engines and what became of them (released, or died with their prefill connection), and the
 * waits still running in the background; kept as plain numbers (what `stats` reads) and as the
 * Effect metrics of `Disaggregated` (what a `/metrics` page renders).
 *
 * @since 0.2.0
 * @internal
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"

/**
 * Disaggregated requests started (their prefill sent).
 *
 * @since 0.2.0
 */
export const handoffsStarted = Metric.counter("mcore_handoffs_started", {
  description: "Disaggregated requests whose prefill was sent",
  incremental: true
})

/**
 * Disaggregated requests whose decode delivered its final reply.
 *
 * @since 0.2.0
 */
export const handoffsDecoded = Metric.counter("mcore_handoffs_decoded", {
  description: "Disaggregated requests whose decode delivered its final reply",
  incremental: true
})

/**
 * Prefill pins released (RELEASE_KV sent on the connection that made them).
 *
 * @since 0.2.0
 */
export const handoffsReleased = Metric.counter("mcore_handoffs_released", {
  description: "Prefill KV pins released (RELEASE_KV sent)",
  incremental: true
})

/**
 * Disaggregated requests that ended without a final reply (failed, timed out or interrupted).
 *
 * @since 0.2.0
 */
export const handoffsFailed = Metric.counter("mcore_handoffs_failed", {
  description: "Disaggregated requests that ended without a final reply (failure, deadline, interruption)",
  incremental: true
})

/**
 * KV blocks pinned on prefill engines by this client's requests and not yet released (or given
 * up as died with their prefill connection): returns to 0 when every pin is settled.
 *
 * @since 0.2.0
 */
export const blocksPinned = Metric.gauge("mcore_handoff_blocks_pinned", {
  description: "Prefill KV blocks pinned for a hand-off and not yet released"
})

/**
 * The numbers behind {@link Ledger}, as `Disaggregated.stats` reports them.
 *
 * @since 0.2.0
 */
export interface Stats {
  /** Requests started (prefill sent). */
  readonly started: number
  /** Of those, ended with D's final reply. */
  readonly decoded: number
  /** Ended with an error (a deadline included). */
  readonly failed: number
  /** Ended by interruption (an HTTP client gone, a stream dropped, `abort`). */
  readonly interrupted: number
  /** Decodes submitted (SUBMIT_REQUEST_WITH_KV sent). */
  readonly decodes: number
  /** Pins P's replies named, and their blocks. */
  readonly pins: number
  readonly pinnedBlocks: number
  /** RELEASE_KV sent, and the blocks. */
  readonly released: number
  readonly releasedBlocks: number
  /** Pins whose prefill connection was gone at release time (nothing sent), and their blocks. */
  readonly died: number
  readonly diedBlocks: number
  /** Waits running in the background (for D's output after an ABORT, a grace period, P's reply). */
  readonly background: number
}

/**
 * A step of a disaggregated request's hand-off, as `Disaggregated.Options.observe` is told of it:
 * `request` is the disaggregated client's id; `pin` the prefill coordinator's id for the pin and
 * its blocks (on `Pinned`, `Released`, `Died`). In order for one request: `Pinned`, then
 * `DecodeSubmitted` (unless the decode was never submitted), then `DecodeOutput` (D's first),
 * `DecodeFailed` (a reply), `DecodeLost` (D's coordinator lost) or `DecodeSilent` (no answer
 * within `decodeGrace` of an ABORT), then `Released` or `Died`.
 *
 * @since 0.2.0
 */
export interface Event {
  readonly _tag:
    | "Pinned"
    | "DecodeSubmitted"
    | "DecodeOutput"
    | "DecodeFailed"
    | "DecodeLost"
    | "DecodeSilent"
    | "Released"
    | "Died"
  readonly request: number
  readonly pin?: { readonly requestId: number; readonly blocks: number } | undefined
}

/**
 * The books of one disaggregated client.
 *
 * @since 0.2.0
 */
export class Ledger {
  private s = {
    started: 0,
    decoded: 0,
    failed: 0,
    interrupted: 0,
    decodes: 0,
    pins: 0,
    pinnedBlocks: 0,
    released: 0,
    releasedBlocks: 0,
    died: 0,
    diedBlocks: 0,
    background: 0
  }
  private idleWaiters: Array<() => void> = []

  constructor(
    private readonly context: Context.Context<never>,
    private readonly observe: ((event: Event) => void) | undefined
  ) {}

  /** Tells the observer, if any. */
  note(request: number, tag: Event["_tag"], pin?: { readonly requestId: number; readonly blockIds: ReadonlyArray<number> }): void {
    if (this.observe === undefined) return
    this.observe(pin === undefined ? { _tag: tag, request } : { _tag: tag, request, pin: { requestId: pin.requestId, blocks: pin.blockIds.length } })
  }

  get stats(): Stats {
    return { ...this.s }
  }

  /** Requests started and not ended. */
  get inFlight(): number {
    return this.s.started - this.s.decoded - this.s.failed - this.s.interrupted
  }

  started(): void {
    this.s.started++
    handoffsStarted.updateUnsafe(1, this.context)
  }

  ended(how: "decoded" | "failed" | "interrupted"): void {
    this.s[how]++
    if (how === "decoded") handoffsDecoded.updateUnsafe(1, this.context)
    else handoffsFailed.updateUnsafe(1, this.context)
  }

  decodeStarted(request: number): void {
    this.s.decodes++
    this.note(request, "DecodeSubmitted")
  }

  pinned(request: number, pin: { readonly requestId: number; readonly blockIds: ReadonlyArray<number> }): void {
    const blocks = pin.blockIds.length
    this.note(request, "Pinned", pin)
    this.s.pins++
    this.s.pinnedBlocks += blocks
    blocksPinned.modifyUnsafe(blocks, this.context)
  }

  released(request: number, pin: { readonly requestId: number; readonly blockIds: ReadonlyArray<number> }): void {
    const blocks = pin.blockIds.length
    this.note(request, "Released", pin)
    this.s.released++
    this.s.releasedBlocks += blocks
    handoffsReleased.updateUnsafe(1, this.context)
    blocksPinned.modifyUnsafe(-blocks, this.context)
  }

  died(request: number, pin: { readonly requestId: number; readonly blockIds: ReadonlyArray<number> }): void {
    const blocks = pin.blockIds.length
    this.note(request, "Died", pin)
    this.s.died++
    this.s.diedBlocks += blocks
    blocksPinned.modifyUnsafe(-blocks, this.context)
  }

  /** `effect`, counted as a background wait until it ends. */
  track(effect: Effect.Effect<void>): Effect.Effect<void> {
    return Effect.suspend(() => {
      this.s.background++
      return Effect.ensuring(effect, Effect.sync(() => this.backgroundEnded()))
    })
  }

  private backgroundEnded(): void {
    if (--this.s.background > 0) return
    const waiters = this.idleWaiters
    this.idleWaiters = []
    for (const waiter of waiters) waiter()
  }

  /** Waits until no background wait runs (returns at once when none does). */
  readonly idle: Effect.Effect<void> = Effect.callback<void>((resume) => {
    if (this.s.background === 0) return resume(Effect.void)
    const waiter = () => resume(Effect.void)
    this.idleWaiters.push(waiter)
  })
}
