/**
 * What `mcore coordinator` prints as a coordinator's state changes: the number of connected
 * clients, the control state, and the engines that register or leave. For the test coordinator
 * and for the coordinator that real engines dial alike.
 *
 * @since 0.2.0
 * @internal
 */
import type { Coordinator } from "@mcore-effect/coordinator"
import type { TestCoordinator } from "@mcore-effect/testkit"
import * as Effect from "effect/Effect"
import * as Output from "../Output.ts"

/** Longest wait a timer allows; a wait that reaches it just waits again. */
export const FOREVER_MILLIS = 2 ** 31 - 1

/** What the watchers read: snapshots, and a wait (without end) for one that satisfies a predicate. */
export interface Watched {
  readonly snapshot: Effect.Effect<Coordinator.Snapshot>
  readonly waitFor: (predicate: (snapshot: Coordinator.Snapshot) => boolean) => Effect.Effect<Coordinator.Snapshot>
}

/** The test coordinator as the watchers read it: its bounded waits renewed until they hold. */
export const ofTestCoordinator = (coordinator: TestCoordinator.Handle): Watched => {
  const waitFor = (predicate: (snapshot: Coordinator.Snapshot) => boolean): Effect.Effect<Coordinator.Snapshot> =>
    coordinator.waitFor("a change", predicate, { timeoutMillis: FOREVER_MILLIS }).pipe(
      Effect.catchTag("TestkitError", () => waitFor(predicate))
    )
  return { snapshot: coordinator.snapshot, waitFor }
}

/** Prints the control state and the number of connected clients each time one changes. */
export const watchState = (coordinator: Watched): Effect.Effect<never> =>
  Effect.gen(function*() {
    let seen = yield* coordinator.snapshot
    for (;;) {
      const before = seen
      const next = yield* coordinator.waitFor((s) => s.state !== before.state || s.clients !== before.clients)
      if (next.clients !== before.clients) yield* Output.line(`clients ${next.clients}`)
      if (next.state !== before.state) yield* Output.line(`state ${next.state}`)
      seen = next
    }
  })

/**
 * Prints each engine that registers or leaves, by identity (with `say`: standard output by
 * default), then calls `after` with the engines registered now.
 */
export const watchRegistrations = (
  coordinator: Watched,
  say: (line: string) => Effect.Effect<void> = Output.line,
  after: (registered: ReadonlyArray<string>) => Effect.Effect<void> = () => Effect.void
): Effect.Effect<never> =>
  Effect.gen(function*() {
    let seen = new Set<string>()
    for (;;) {
      const before = seen
      const next = yield* coordinator.waitFor((s) =>
        s.engines.length !== before.size || s.engines.some((e) => !before.has(e.identity))
      )
      const now = new Set(next.engines.map((e) => e.identity))
      for (const identity of now) if (!before.has(identity)) yield* say(`engine ${identity} registered`)
      for (const identity of before) if (!now.has(identity)) yield* say(`engine ${identity} gone`)
      seen = now
      yield* after(next.engines.map((e) => e.identity))
    }
  })
