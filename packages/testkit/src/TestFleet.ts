/**
 * Several test clusters (each a coordinator with engines of its own), the fixture for a fleet
 * client (`@mcore-effect/client`'s `Fleet`): one address per coordinator, and what routing and
 * failover are tested against: each coordinator can be stalled (alive, connected, answering
 * nothing), killed, and restarted on its address (with Megatron's start-up registration when
 * the coordinators are started with `startupRegistrations`). Engines model a prefix cache
 * (`TestEngine`'s `prefixCacheBlocks`, `prefillMsPerBlock`) so placement has measurable effects.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Dialect } from "@mcore-effect/protocol"
import * as Faults from "./Faults.ts"
import * as TestCluster from "./TestCluster.ts"
import { InvalidOption, testkitError, type TestkitError } from "./TestkitError.ts"

/**
 * How to start a fleet of clusters: each cluster's options (engines per coordinator, the
 * dialect, a network), and how many.
 *
 * @category models
 * @since 0.2.0
 */
export interface Options extends TestCluster.Options {
  /** How many coordinators. Default 2. */
  readonly coordinators?: number | undefined
}

/**
 * A running fleet of clusters.
 *
 * @category models
 * @since 0.2.0
 */
export interface Handle {
  /** The coordinators' addresses, in order: what a fleet client is given. */
  readonly addresses: ReadonlyArray<string>
  readonly protocol: Dialect.Name
  readonly clusters: ReadonlyArray<TestCluster.Handle>
  /** Coordinator `index` stops reading and answering, its connections kept (a `Hang` fault). */
  readonly stall: (index: number) => Effect.Effect<void>
  /** Coordinator `index` answers again. */
  readonly unstall: (index: number) => Effect.Effect<void>
  /** Coordinator `index` dies: its socket closes at once, its state is lost. */
  readonly kill: (index: number) => Effect.Effect<void>
  /** A fresh coordinator on `index`'s address; returns once its engines have registered again. */
  readonly restart: (index: number) => Effect.Effect<void, TestkitError>
}

/**
 * Starts `coordinators` clusters and returns once every engine of each has registered.
 * Everything stops when the scope closes.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestFleet } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const fleet = yield* TestFleet.make({ coordinators: 3, engines: 2, engine: { prefixCacheBlocks: 2048, prefillMsPerBlock: 0.1 } })
 *   // point a fleet client at fleet.addresses, in fleet.protocol
 *   yield* fleet.kill(1)
 *   yield* fleet.restart(1)
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category constructors
 * @since 0.2.0
 */
export const make: (options?: Options) => Effect.Effect<Handle, TestkitError, Scope.Scope> = Effect.fn("TestFleet.make")(
  function*(options?: Options) {
    const count = options?.coordinators ?? 2
    if (!Number.isSafeInteger(count) || count < 1) {
      return yield* Effect.fail(testkitError(new InvalidOption({ option: "coordinators", why: "must be an integer >= 1" })))
    }
    const clusters: Array<TestCluster.Handle> = []
    for (let i = 0; i < count; i++) clusters.push(yield* TestCluster.make(options))
    const engines = options?.engines ?? 2
    const at = (index: number): TestCluster.Handle => {
      const cluster = clusters[index]
      if (cluster === undefined) throw new RangeError(`no coordinator ${index} in a fleet of ${count}`)
      return cluster
    }
    return {
      addresses: clusters.map((c) => c.address),
      protocol: clusters[0]!.protocol,
      clusters,
      stall: (index) => Effect.suspend(() => at(index).coordinator.injectFault(new Faults.Hang())),
      unstall: (index) => Effect.suspend(() => at(index).coordinator.clearFaults("Hang")),
      kill: (index) => Effect.suspend(() => at(index).coordinator.crash),
      restart: (index) =>
        Effect.suspend(() => {
          const coordinator = at(index).coordinator
          return Effect.andThen(coordinator.restart, coordinator.awaitEngines(engines))
        })
    }
  }
)
