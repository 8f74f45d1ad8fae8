/**
 * Waiting, from an Effect, for the state of a test coordinator or engine to satisfy a condition.
 * The deadline uses a real timer, not the Effect clock, so a wait is bounded under
 * `it.effect`'s TestClock too (the sockets run in real time either way).
 *
 * @since 0.1.0
 * @internal
 */
import { awaitState } from "@mcore-effect/coordinator/internal"
import * as Effect from "effect/Effect"
import { testkitError, type TestkitError, WaitTimedOut } from "../TestkitError.ts"

/** How long a wait lasts unless told otherwise. */
export const defaultTimeoutMillis = 5_000

/**
 * Resolves with the first state that satisfies `predicate`, checked now and after every change
 * (at most once per event-loop turn); fails with `WaitTimedOut` after `millis`.
 *
 * @internal
 */
export const waitUntil = <S>(
  what: string,
  subscribe: (listener: () => void) => () => void,
  read: () => S,
  predicate: (state: S) => boolean,
  millis: number
): Effect.Effect<S, TestkitError> =>
  Effect.raceFirst(
    awaitState(subscribe, read, predicate),
    Effect.callback<never, TestkitError>((resume) => {
      const timer = setTimeout(() => resume(Effect.fail(testkitError(new WaitTimedOut({ what, millis })))), millis)
      return Effect.sync(() => clearTimeout(timer))
    })
  )
