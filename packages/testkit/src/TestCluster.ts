/**
 * A test coordinator with N test engines registered: the usual fixture for a client test.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Dialect, MemorySocket } from "@mcore-effect/protocol"
import * as Zmq from "zeromq"
import * as KvPins from "./KvPins.ts"
import * as TestCoordinator from "./TestCoordinator.ts"
import * as TestEngine from "./TestEngine.ts"
import { InvalidOption, testkitError, type TestkitError } from "./TestkitError.ts"

/**
 * How to start a cluster.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** How many engines (identities `mp-coord-0` ... `mp-coord-<n-1>`). Default 2. */
  readonly engines?: number | undefined
  /**
   * The protocol dialect the coordinator and every engine speak, by the Megatron-LM version that
   * speaks it (`main`, `pr-6497`, `core_v0.19`, `core_v0.18`, `core_v0.17`). `coordinator.protocol`
   * and `engine.protocol` override it for their part. Default `reference`, the project's own
   * protocol: a test cluster chooses its own, and says which in {@link Handle.protocol}.
   */
  readonly protocol?: Dialect.Name | undefined
  /**
   * Run the coordinator and every engine on this in-memory network instead of ZeroMQ: clients
   * reach `address` with the client's `Transport.memory` on the same network.
   */
  readonly network?: MemorySocket.Network | undefined
  readonly coordinator?: TestCoordinator.Options | undefined
  /** Options shared by every engine (the address, identity and rank are set here). */
  readonly engine?: Omit<TestEngine.Options, "coordinatorAddress" | "identity" | "rank" | "network"> | undefined
}

/**
 * A running cluster.
 *
 * @category models
 * @since 0.1.0
 */
export interface Handle {
  /** Where clients connect. */
  readonly address: string
  /**
   * The dialect the coordinator speaks: what a client of it must be given
   * (`InferenceClient.make({ address: cluster.address, protocol: cluster.protocol })`).
   */
  readonly protocol: Dialect.Name
  readonly coordinator: TestCoordinator.Handle
  /** In rank order. */
  readonly engines: ReadonlyArray<TestEngine.Handle>
  /**
   * The KV hand-off counts of every engine together (`KvPins.sum`): pins made and released,
   * releases repeated, foreign (no engine pinned the id) or early (a decode still reading).
   */
  readonly kvPins: Effect.Effect<KvPins.Stats>
}

/**
 * The cluster as a service, for `layer`.
 *
 * @category services
 * @since 0.1.0
 */
export class TestCluster extends Context.Service<TestCluster, Handle>()("@mcore-effect/testkit/TestCluster") {}

/**
 * Starts a coordinator and `engines` engines, and returns once every engine has registered.
 * Everything stops when the scope closes.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestCluster } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 0 } })
 *   // or a Megatron-LM ref's wire: TestCluster.make({ protocol: "main" })
 *   // or in memory, no socket: TestCluster.make({ network }), and a client with Transport.memory(network)
 *   // point a client at cluster.address, in cluster.protocol
 *   const snapshot = yield* cluster.coordinator.snapshot
 *   snapshot.engines.map((e) => e.load)
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: (options?: Options) => Effect.Effect<Handle, TestkitError, Scope.Scope> = Effect.fn("TestCluster.make")(
  function*(options?: Options) {
    const count = options?.engines ?? 2
    if (!Number.isSafeInteger(count) || count < 0) {
      return yield* Effect.fail(testkitError(new InvalidOption({ option: "engines", why: "must be an integer >= 0" })))
    }
    const protocol = options?.protocol
    const network = options?.network
    const coordinator = yield* TestCoordinator.make({
      ...options?.coordinator,
      protocol: options?.coordinator?.protocol ?? protocol,
      network: options?.coordinator?.network ?? network
    })
    const serverKey = coordinator.curvePublicKey
    const engines: Array<TestEngine.Handle> = []
    for (let rank = 0; rank < count; rank++) {
      // A CurveZMQ coordinator: each engine gets a key pair of its own unless the options give one.
      const curve = options?.engine?.curve ?? (serverKey === undefined ? undefined : { serverKey, ...Zmq.curveKeyPair() })
      engines.push(
        yield* TestEngine.make({
          ...options?.engine,
          protocol: options?.engine?.protocol ?? protocol,
          coordinatorAddress: coordinator.address,
          network: options?.coordinator?.network ?? network,
          rank,
          curve
        })
      )
    }
    yield* coordinator.awaitEngines(count)
    const kvPins = Effect.map(Effect.forEach(engines, (engine) => engine.snapshot), (snapshots) => KvPins.sum(snapshots.map((s) => s.kvPins)))
    return { address: coordinator.address, protocol: coordinator.protocol, coordinator, engines, kvPins }
  }
)

/**
 * The cluster as a layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options?: Options): Layer.Layer<TestCluster, TestkitError> => Layer.effect(TestCluster, make(options))
