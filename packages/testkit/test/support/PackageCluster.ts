/**
 * The coordinator package's `Coordinator` (the production one, no test faults) with test
 * engines dialing it, shaped as the part of a `TestCluster.Handle` that robustness tests read,
 * so that one test body holds both coordinators to the same demands.
 */
import { Coordinator, type Routing } from "@mcore-effect/coordinator"
import type { Dialect } from "@mcore-effect/protocol"
import { Effect, type Scope } from "effect"
import { CoordinatorTokenizer, type TestCluster, TestEngine } from "../../src/index.ts"

/** What the robustness tests read of a cluster. */
export interface Cluster {
  readonly address: string
  readonly engines: TestCluster.Handle["engines"]
  readonly coordinator: {
    readonly snapshot: Effect.Effect<Coordinator.Snapshot>
    readonly awaitEngines: (count: number) => Effect.Effect<unknown, unknown>
    readonly waitFor: (what: string, predicate: (s: Coordinator.Snapshot) => boolean) => Effect.Effect<unknown, unknown>
  }
}

/** Two test engines on the package's coordinator, speaking `protocol`. */
export const make = (
  options: { readonly protocol: Dialect.Name; readonly policy?: Routing.Policy | undefined }
): Effect.Effect<Cluster, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const coordinator = yield* Coordinator.make({
      address: "tcp://127.0.0.1:0",
      protocol: options.protocol,
      policy: options.policy,
      tokenizer: CoordinatorTokenizer.vocabulary
    })
    const engines = [
      yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: options.protocol, rank: 0 }),
      yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: options.protocol, rank: 1 })
    ]
    yield* coordinator.awaitEngines(2).pipe(Effect.timeout("5 seconds"))
    const cluster: Cluster = {
      address: coordinator.address,
      engines,
      coordinator: {
        snapshot: coordinator.snapshot,
        awaitEngines: (count) => coordinator.awaitEngines(count).pipe(Effect.timeout("5 seconds")),
        waitFor: (_what, predicate) => coordinator.waitFor(predicate).pipe(Effect.timeout("5 seconds"))
      }
    }
    return cluster
  })
