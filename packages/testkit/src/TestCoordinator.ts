/**
 * A coordinator that speaks the real protocol over real ZeroMQ sockets, for tests: it binds a
 * ROUTER on loopback (or, given a `network`, an in-memory one: `MemorySocket`), accepts clients (CONNECT / CONNECT_ACK) and engines (an empty
 * registration frame), re-numbers and routes submissions by policy, runs the control state
 * machine, splits engines' batched replies into per-client messages, and lets a test inspect
 * everything it did and switch faults on and off. It speaks one protocol dialect (`protocol`:
 * the reference protocol, or a Megatron-LM ref's), with clients and with its engines, as that
 * ref's coordinator does; a message the dialect lacks is dropped, counted and kept in
 * `Snapshot.rejected`.
 *
 * @since 0.1.0
 */
import type { Dialect, MemorySocket } from "@mcore-effect/protocol"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import { type Coordinator, Routing } from "@mcore-effect/coordinator"
import { configOf, type CoordinatorConfig, CoordinatorSocket, type Log, logging, snapshotOf } from "@mcore-effect/coordinator/internal"
import * as CoordinatorTokenizer from "./CoordinatorTokenizer.ts"
import type * as Faults from "./Faults.ts"
import { FaultedCoordinator } from "./internal/faultedCoordinator.ts"
import { isLoopback } from "./Loopback.ts"
import { BindFailed, InvalidOption, NotLoopback, testkitError, type TestkitError } from "./TestkitError.ts"
import { defaultTimeoutMillis, waitUntil } from "./internal/waiting.ts"

export type { Counters, Delivery, EngineView, Rejection } from "@mcore-effect/coordinator/internal"

/**
 * How to start a test coordinator. Every field is optional.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /**
   * Where to bind: loopback only. Default `tcp://127.0.0.1:0` (an ephemeral port); on a
   * `network`, any name (default `inproc://coordinator-<n>`).
   */
  readonly address?: string | undefined
  /**
   * Serve on this in-memory network instead of a ZeroMQ ROUTER: clients (the client's
   * `Transport.memory` on the same network) and engines (`TestEngine`'s `network`) meet it there
   * without sockets. No CurveZMQ then.
   */
  readonly network?: MemorySocket.Network | undefined
  /**
   * The protocol dialect it speaks with clients and engines, by the Megatron-LM version that
   * speaks it (`main`, `pr-6497`, `core_v0.19`, `core_v0.18`, `core_v0.17`; see `Dialects` in
   * the protocol package). Its engines must speak the same one. Default `reference`.
   */
  readonly protocol?: Dialect.Name | undefined
  /** Routing policy. Default `load_balanced`. */
  readonly policy?: Routing.Policy | undefined
  /** Weight of the load term in the affinity score. Default 0.5. */
  readonly beta?: number | undefined
  /** Block size the coordinator hashes prompts with when a client sent no hashes. Default 16. */
  readonly blockSizeTokens?: number | undefined
  /**
   * What it tokenizes text prompts (for prefix routing) and detokenizes finished requests with
   * (`generated_text`), as Megatron's coordinator uses the model's tokenizer. Default the test
   * vocabulary, which the test engines generate in; engines of a real model need its tokenizer.
   */
  readonly tokenizer?: CoordinatorTokenizer.CoordinatorTokenizer | undefined
  /** Messages kept per engine for inspection (oldest dropped first); 0 keeps none. Default 1,000 (the most recent). */
  readonly recordLimit?: number | undefined
  /**
   * CurveZMQ: the coordinator's key pair (Z85, as `zeromq`'s `curveKeyPair()` makes them). Clients
   * and engines then connect only with its public key (`Handle.curvePublicKey`) and a key pair
   * of their own. Default: no encryption, no authentication.
   */
  readonly curve?: { readonly publicKey: string; readonly secretKey: string } | undefined
  /**
   * Megatron's start-up, at every start (restarts included): the first this many messages, of
   * any content from any sender, register their senders as engines (`coordinator.py:176-179`
   * takes `data_parallel_size` of them, so a client's CONNECT that comes too early is one), and
   * a restart numbers requests from 0 again. Default 0: engines register by their empty frame,
   * and a restart numbers on from where the last one stopped.
   */
  readonly startupRegistrations?: number | undefined
  /**
   * The ROUTER on a real address: `zmtp` (our own over `node:net`, the protocol's `ZmtpRouter`;
   * no CurveZMQ) or `zeromq` (zeromq.js, libzmq underneath), as the coordinator package's
   * `transport`. Default `zmtp`, and `zeromq` when `curve` is set.
   */
  readonly transport?: "zeromq" | "zmtp" | undefined
}

/**
 * Everything a test may want to know about the coordinator at one moment: the coordinator
 * package's `Coordinator.Snapshot`, and the test's faults and restarts.
 *
 * @category models
 * @since 0.1.0
 */
export interface Snapshot extends Coordinator.Snapshot {
  readonly faults: ReadonlyArray<Faults.Fault>
  /** How many times each fault acted. */
  readonly faultsApplied: Readonly<Record<Faults.FaultTag, number>>
  /** How many times `restart` rebound the address. */
  readonly restarts: number
}

/**
 * A running test coordinator.
 *
 * @category models
 * @since 0.1.0
 */
export interface Handle {
  /** The bound address, with the actual port (`tcp://127.0.0.1:41234`): give it to clients and engines. */
  readonly address: string
  readonly policy: Routing.Policy
  readonly protocol: Dialect.Name
  readonly beta: number
  readonly blockSizeTokens: number
  /** The coordinator's CurveZMQ public key, when it was started with `curve`. */
  readonly curvePublicKey: string | undefined
  /** The coordinator's state now. */
  readonly snapshot: Effect.Effect<Snapshot>
  /** Waits until `predicate` holds (checked after every message); fails with `WaitTimedOut`. */
  readonly waitFor: (
    what: string,
    predicate: (snapshot: Snapshot) => boolean,
    options?: { readonly timeoutMillis?: number | undefined }
  ) => Effect.Effect<Snapshot, TestkitError>
  /** Waits until at least `count` engines have registered. */
  readonly awaitEngines: (count: number, options?: { readonly timeoutMillis?: number | undefined }) => Effect.Effect<Snapshot, TestkitError>
  /** Switches a fault on (replacing one of the same kind). */
  readonly injectFault: (fault: Faults.Fault) => Effect.Effect<void>
  /** Switches one kind of fault off, or all. */
  readonly clearFaults: (tag?: Faults.FaultTag) => Effect.Effect<void>
  /** Which engines (identities) hold a block hash for a request in flight. */
  readonly holders: (hash: bigint) => Effect.Effect<ReadonlyArray<string>>
  /** Kills the coordinator: the socket closes at once and all its state is lost. */
  readonly crash: Effect.Effect<void>
  /**
   * Starts a fresh coordinator on the same address (crashing the current one if it runs). It
   * numbers requests on from where the last one stopped, so a reply an engine still sends for
   * an old request is dropped (counted as `unknownRequest`), never given to a new one; with
   * `startupRegistrations`, from 0 again, as Megatron's does.
   */
  readonly restart: Effect.Effect<void, TestkitError>
  /** Resolves when the coordinator has stopped (SHUTDOWN from a client, or a crash). */
  readonly awaitStopped: Effect.Effect<void>
}

/**
 * The test coordinator as a service, for `layer`.
 *
 * @category services
 * @since 0.1.0
 */
export class TestCoordinator extends Context.Service<TestCoordinator, Handle>()("@mcore-effect/testkit/TestCoordinator") {}

interface Resolved {
  readonly address: string
  readonly network: MemorySocket.Network | undefined
  /** What binds the address (a ROUTER of zeromq.js, of our own, or on the network). */
  readonly binder: CoordinatorSocket.Binder
  readonly protocol: Dialect.Name
  readonly config: CoordinatorConfig
}

let nextMemoryAddress = 0

/** The test coordinator's defaults filled, its address held to loopback, the rest checked as the coordinator package checks it. */
const resolve = (options: Options, log: Log, debug: boolean): Effect.Effect<Resolved, TestkitError> => {
  const network = options.network
  const address = options.address ?? (network === undefined ? "tcp://127.0.0.1:0" : `inproc://coordinator-${nextMemoryAddress++}`)
  // In memory, nothing is exposed whatever the name.
  if (network === undefined && !isLoopback(address)) return Effect.fail(testkitError(new NotLoopback({ address })))
  const protocol = options.protocol ?? "reference"
  const config = configOf(
    {
      protocol,
      tokenizer: options.tokenizer ?? CoordinatorTokenizer.vocabulary,
      policy: options.policy ?? "load_balanced",
      // The reference protocol's rule in every dialect: the tests' routing expectations are its.
      scoring: "relative_load",
      beta: options.beta ?? Routing.defaultBeta,
      blockSizeTokens: options.blockSizeTokens ?? 16,
      recordLimit: options.recordLimit ?? 1_000,
      startupRegistrations: options.startupRegistrations ?? 0,
      curve: options.curve,
      network
    },
    log,
    debug
  )
  if (Result.isFailure(config)) return Effect.fail(testkitError(new InvalidOption(config.failure)))
  const binder = CoordinatorSocket.binderFor({ transport: options.transport, curve: options.curve, network }, (message) => log("Warn", message))
  if (Result.isFailure(binder)) return Effect.fail(testkitError(new InvalidOption(binder.failure)))
  return Effect.succeed({ address, network, binder: binder.success, protocol, config: config.success })
}

/** Binds, retrying briefly while a just-closed socket still holds the port. */
const bind = (
  address: string,
  config: CoordinatorConfig,
  binder: CoordinatorSocket.Binder,
  firstRequestId = 0
): Effect.Effect<FaultedCoordinator, TestkitError> =>
  Effect.tryPromise({
    try: async () => {
      const deadline = Date.now() + 2_000
      for (;;) {
        try {
          return await FaultedCoordinator.start(address, config, firstRequestId, binder)
        } catch (error) {
          const inUse = (error as { code?: string } | null)?.code === "EADDRINUSE"
          if (!inUse || Date.now() > deadline) throw error
          await new Promise((r) => setTimeout(r, 20))
        }
      }
    },
    catch: (cause) => testkitError(new BindFailed({ address, cause }))
  })

/**
 * Starts a test coordinator, bound until the scope closes (then the socket is closed with
 * linger 0 and nothing keeps running).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestCoordinator, TestEngine } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const coordinator = yield* TestCoordinator.make({ policy: "longest_prefix", blockSizeTokens: 4 })
 *   yield* TestEngine.make({ coordinatorAddress: coordinator.address, stepMs: 0 })
 *   yield* coordinator.awaitEngines(1)
 *   // connect a client to coordinator.address ...
 *   const { counters, engines } = yield* coordinator.snapshot
 * }).pipe(Effect.scoped)
 *
 * // Megatron-LM core_v0.19's wire, with an engine speaking it too:
 * const v019 = Effect.gen(function*() {
 *   const coordinator = yield* TestCoordinator.make({ protocol: "core_v0.19" })
 *   yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "core_v0.19" })
 *   // ... a client with protocol "core_v0.19"; then nothing it lacks was sent:
 *   const { rejected } = yield* coordinator.snapshot // []
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: (options?: Options) => Effect.Effect<Handle, TestkitError, Scope.Scope> = Effect.fn(
  "TestCoordinator.make"
)(function*(options?: Options) {
  const { debug, log } = yield* logging
  const resolved = yield* resolve(options ?? {}, log, debug)
  const config = resolved.config
  const listeners = new Set<() => void>()
  const fanOut = () => listeners.forEach((l) => l())
  let unhook = () => {}
  // `fc` is replaced by restart; the release closes whichever one is current.
  let fc: FaultedCoordinator = yield* Effect.acquireRelease(bind(resolved.address, config, resolved.binder), () =>
    Effect.promise(() => {
      unhook()
      fc.core.close()
      // Settles once the socket is closed, its connections too: nothing of it is left.
      return fc.core.done
    }))
  unhook = fc.core.onChange(fanOut)
  // Restart binds the address actually bound (the ephemeral port is fixed from here on).
  const address = fc.core.address
  let restarts = 0

  const read = (): Snapshot => ({
    ...snapshotOf(fc.core, address, config.policy, resolved.protocol),
    faults: fc.faults.list(),
    faultsApplied: { ...fc.faults.applied },
    restarts
  })
  const subscribe = (listener: () => void) => {
    listeners.add(listener)
    return () => listeners.delete(listener)
  }
  const waitFor: Handle["waitFor"] = (what, predicate, options) =>
    waitUntil(what, subscribe, read, predicate, options?.timeoutMillis ?? defaultTimeoutMillis)

  const handle: Handle = {
    address,
    policy: config.policy,
    protocol: resolved.protocol,
    beta: config.beta,
    blockSizeTokens: config.blockSizeTokens,
    curvePublicKey: config.curve?.publicKey,
    snapshot: Effect.sync(read),
    waitFor,
    awaitEngines: (count, options) => waitFor(`${count} engine(s) to register`, (s) => s.engines.length >= count, options),
    injectFault: (fault) => Effect.sync(() => fc.injectFault(fault)).pipe(Effect.withSpan("TestCoordinator.injectFault")),
    clearFaults: (tag) => Effect.sync(() => fc.clearFaults(tag)).pipe(Effect.withSpan("TestCoordinator.clearFaults")),
    holders: (hash) => Effect.sync(() => fc.core.holders(hash)),
    crash: Effect.sync(() => {
      fc.core.close()
      fanOut()
    }).pipe(Effect.withSpan("TestCoordinator.crash")),
    restart: Effect.gen(function*() {
      fc.core.close()
      yield* Effect.promise(() => fc.core.done)
      // Closed, the old core routes nothing more: its next id is final, and the new one starts
      // there, since engines keep running and may still answer the old requests.
      const next = yield* bind(address, config, resolved.binder, config.startupRegistrations > 0 ? 0 : fc.core.nextRequestId)
      unhook()
      fc = next
      restarts++
      unhook = fc.core.onChange(fanOut)
      fanOut()
    }).pipe(Effect.withSpan("TestCoordinator.restart")),
    awaitStopped: Effect.suspend(() => {
      const current = fc.core
      return Effect.promise(() => current.done)
    })
  }
  return handle
})

/**
 * The test coordinator as a layer: started when the layer is built, stopped when it is released.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestCoordinator } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const coordinator = yield* TestCoordinator.TestCoordinator
 *   return coordinator.address
 * }).pipe(Effect.provide(TestCoordinator.layer({ policy: "load_balanced" })))
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options?: Options): Layer.Layer<TestCoordinator, TestkitError> =>
  Layer.effect(TestCoordinator, make(options))
