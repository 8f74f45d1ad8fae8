/**
 * Waiting for a state that changes by events: checked at once, then once per turn of the event
 * loop after something changed (a burst of 1,000 messages is one check, not 1,000), until the
 * predicate holds. No timeout of its own: a caller bounds it (`Effect.timeout`, or the testkit's
 * real-time timer, which a test clock cannot hold back).
 *
 * @since 0.2.0
 * @internal
 */
import * as Effect from "effect/Effect"

/**
 * The first state `read` gives that satisfies `predicate`; interrupting the wait unsubscribes.
 *
 * @internal
 */
export const awaitState = <S>(
  subscribe: (listener: () => void) => () => void,
  read: () => S,
  predicate: (state: S) => boolean
): Effect.Effect<S> =>
  Effect.callback<S>((resume) => {
    let finished = false
    let scheduled = false
    let unsubscribe = () => {}
    const finish = () => {
      finished = true
      unsubscribe()
    }
    const check = () => {
      scheduled = false
      if (finished) return
      const state = read()
      if (predicate(state)) {
        finish()
        resume(Effect.succeed(state))
      }
    }
    unsubscribe = subscribe(() => {
      if (scheduled || finished) return
      scheduled = true
      setImmediate(check)
    })
    check()
    return Effect.sync(finish)
  })
