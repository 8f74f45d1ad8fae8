/**
 * The requests the coordinator still owes this client a reply for, kept only where the dialect's
 * coordinator exits on a reply it routes to a closed client (`Dialect.closedClientReply`: every
 * Megatron-LM ref). A request leaves the set when its ENGINE_REPLY arrives, whether or not anyone
 * still waits for it here: an interrupted or timed-out request on a dialect without ABORT still
 * runs to its end on its engine, and its reply still comes. Closing waits for the set to empty
 * (`drainTimeout`), so that closing a client never takes the coordinator down.
 *
 * @since 0.2.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** @internal */
export class Unanswered {
  private readonly ids = new Set<number>()
  private wake: (() => void) | undefined = undefined

  /** How many replies are owed. */
  get size(): number {
    return this.ids.size
  }

  /** The ids owed a reply, oldest first. */
  owed(): ReadonlyArray<number> {
    return Array.from(this.ids)
  }

  /** A submission went out. */
  add(requestId: number): void {
    this.ids.add(requestId)
  }

  /** Its ENGINE_REPLY arrived (or it was never sent). */
  done(requestId: number): void {
    if (this.ids.delete(requestId) && this.ids.size === 0) this.wake?.()
  }

  /**
   * The coordinator was lost: what it owed will never come on this connection (after a
   * reconnect the coordinator knows this client by a new routing id, and what it owed the old one
   * is beyond reach either way).
   */
  forget(): void {
    this.ids.clear()
    this.wake?.()
  }

  /** Waits until nothing is owed, for at most `millis`; true when nothing is. */
  settled(millis: number): Effect.Effect<boolean> {
    if (this.ids.size === 0) return Effect.succeed(true)
    return Effect.callback<void>((resume) => {
      this.wake = () => resume(Effect.void)
      return Effect.sync(() => {
        this.wake = undefined
      })
    }).pipe(Effect.timeoutOption(millis), Effect.map(Option.isSome))
  }
}
