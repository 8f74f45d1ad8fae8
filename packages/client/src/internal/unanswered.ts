/**
 * The requests the coordinator still owes this client a reply for although nobody waits for it
 * here any more, kept only where the dialect's coordinator exits on a reply it routes to a closed
 * client (`Dialect.closedClientReply`: every Megatron-LM ref). A request joins when it leaves the
 * registry before its reply (interrupted, timed out, aborted, or failed by the close): on a
 * dialect without ABORT it still runs to its end on its engine, and with ABORT the engine still
 * sends its final reply. It leaves when that ENGINE_REPLY arrives. Pending requests are not
 * kept here (the registry has them), so a request in flight costs nothing more. Closing moves
 * what is pending here and waits for the set to empty (`drainTimeout`), so that closing a client
 * never takes the coordinator down.
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

  /** A request that was sent left the registry before its reply. */
  add(requestId: number): void {
    this.ids.add(requestId)
  }

  /** A reply for a request no longer pending arrived. */
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
