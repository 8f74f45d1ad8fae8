/**
 * A coordinator for Megatron-LM Core's inference engines: the process that clients and engines
 * both dial. It binds one ROUTER where told (any interface: its engines may run on other hosts),
 * takes engines as Megatron's register (a DEALER named `mp-coord-<dp_rank>` sending one empty
 * message, what `start_listening_to_data_parallel_coordinator(..., launch_inference_coordinator=False)`
 * does), acknowledges clients' CONNECT, routes their submissions by policy, runs the control
 * state machine, broadcasts RELEASE_KV, and returns engines' replies to their clients with
 * `generated_text` filled in by the model's tokenizer (when given one), in one dialect (`protocol`) as that
 * Megatron-LM ref's coordinator does. A message it cannot use is dropped, counted
 * (`Snapshot.counters`) and logged, and the loop goes on.
 *
 * @since 0.2.0
 */
import type { Dialect, MemorySocket } from "@mcore-effect/protocol"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import { BindFailed, type CoordinatorError, coordinatorError, InvalidOption } from "./CoordinatorError.ts"
import type { CoordinatorTokenizer } from "./CoordinatorTokenizer.ts"
import { awaitState } from "./internal/awaitState.ts"
import * as ConfigOf from "./internal/configOf.ts"
import type { CoordinatorConfig, Log } from "./internal/coordinatorConfig.ts"
import { CoordinatorCore } from "./internal/coordinatorCore.ts"
import * as CoordinatorSocket from "./internal/coordinatorSocket.ts"
import { type CoreSnapshot, snapshotOf } from "./internal/snapshot.ts"
import * as Routing from "./Routing.ts"

export type { Counters } from "./internal/coordinatorConfig.ts"
export type { Delivery, Rejection } from "./internal/coordinatorRecords.ts"
export type { EngineView } from "./internal/snapshot.ts"

/**
 * How to start a coordinator.
 *
 * @category models
 * @since 0.2.0
 */
export interface Options {
  /**
   * Where to bind: `tcp://HOST:PORT` (`tcp://0.0.0.0:5555` for engines on other hosts; port 0
   * picks a free one, see `Handle.address`), `ipc://PATH`; on a `network`, any name.
   */
  readonly address: string
  /**
   * The dialect it speaks with clients and engines: the Megatron-LM ref the engines run (`main`,
   * `pr-6497`, `core_v0.19` ... `core_v0.16`; `reference`, the project's own). No default: engines
   * of another ref fail on the first message they cannot read.
   */
  readonly protocol: Dialect.Name
  /**
   * The model's tokenizer: finished requests are detokenized (`generated_text`) and text prompts
   * hashed for prefix routing with it, as Megatron's coordinator does. Without one, replies keep
   * the text the engine gave (for clients that detokenize themselves), and a text prompt that a
   * prefix policy would have to hash is answered FAILED, saying why (`counters.refused`);
   * `load_balanced` never hashes, so text prompts go to the engines, which tokenize them.
   */
  readonly tokenizer?: CoordinatorTokenizer | undefined
  /** Routing policy. Default `load_balanced`. */
  readonly policy?: Routing.Policy | undefined
  /**
   * How `longest_prefix` and `first_prefix_block` weigh a prefix held against load. Default
   * `megatron` in Megatron-LM's dialects: its coordinator's rule (`alpha * match + (1 - alpha) *
   * free / maxRequests`, ties to the most recent), over a prefix table kept after requests end,
   * since engines keep the prefix cached; `relative_load` (over requests in flight, weighed by
   * `beta`) in the reference protocol.
   */
  readonly scoring?: Routing.Scoring | undefined
  /** `megatron` scoring: Megatron's `prefix_caching_routing_alpha`. Default 0.5. */
  readonly alpha?: number | undefined
  /** `megatron` scoring: an engine's capacity in requests (Megatron's `max_requests`). Default 256. */
  readonly maxRequests?: number | undefined
  /**
   * `megatron` scoring: the hashes the prefix table keeps, least recently assigned forgotten first
   * (about 250 bytes each). Default 100,000 (`PrefixTable.defaultCapacity`).
   */
  readonly prefixTableCapacity?: number | undefined
  /** `relative_load` scoring: the weight of the load term. Default 0.5. */
  readonly beta?: number | undefined
  /** The engines' KV block size in tokens, for hashing prompts. Default 16. */
  readonly blockSizeTokens?: number | undefined
  /**
   * Deliveries kept per engine and refused messages kept for inspection (most recent); 0 keeps
   * none (the counters count on). Default 100.
   */
  readonly recordLimit?: number | undefined
  /** CurveZMQ: the coordinator's key pair (Z85); clients and engines need its public key. */
  readonly curve?: { readonly publicKey: string; readonly secretKey: string } | undefined
  /** Serve on this in-memory network (`MemorySocket`) instead of a ZeroMQ ROUTER. */
  readonly network?: MemorySocket.Network | undefined
  /**
   * The ROUTER on a real address: `zmtp` (our own over `node:net`, the protocol's `ZmtpRouter`;
   * no CurveZMQ) or `zeromq` (zeromq.js, libzmq underneath). Default `zmtp`, and `zeromq` when
   * `curve` is set (only libzmq speaks CurveZMQ).
   */
  readonly transport?: "zeromq" | "zmtp" | undefined
  /**
   * Who may connect, clients and engines alike: IP addresses and CIDR blocks (`"10.0.0.0/8,
   * 127.0.0.1"`, or a list). A connection from elsewhere is closed before anything of it is read
   * (our ROUTER: as it is accepted; zeromq.js's: by ZAP, during its handshake), counted in
   * `Snapshot.connectionsRefused` as `not-allowed`, and logged once per address. tcp:// only.
   * Default: anyone who can reach the address.
   */
  readonly allowFrom?: string | ReadonlyArray<string> | undefined
}

/**
 * The coordinator at one moment.
 *
 * @category models
 * @since 0.2.0
 */
export interface Snapshot extends CoreSnapshot {}

/**
 * A running coordinator.
 *
 * @category models
 * @since 0.2.0
 */
export interface Handle {
  /** The bound address, with the port actually bound: give it to clients and engines. */
  readonly address: string
  readonly protocol: Dialect.Name
  readonly policy: Routing.Policy
  /** The CurveZMQ public key, when started with `curve`. */
  readonly curvePublicKey: string | undefined
  readonly snapshot: Effect.Effect<Snapshot>
  /** The first snapshot satisfying `predicate` (checked now and after every change); no timeout of its own. */
  readonly waitFor: (predicate: (snapshot: Snapshot) => boolean) => Effect.Effect<Snapshot>
  /** Waits until at least `count` engines are registered. */
  readonly awaitEngines: (count: number) => Effect.Effect<Snapshot>
  /** Resolves when the coordinator has stopped: SHUTDOWN from a client, or the scope closing. */
  readonly awaitStopped: Effect.Effect<void>
}

/**
 * The coordinator as a service, for `layer`.
 *
 * @category services
 * @since 0.2.0
 */
export class Coordinator extends Context.Service<Coordinator, Handle>()("@mcore-effect/coordinator/Coordinator") {}

/** The options checked, the package's defaults filled, before anything is bound. */
const configWithDefaults = (options: Options, log: Log, debug: boolean): Effect.Effect<CoordinatorConfig, CoordinatorError> => {
  if (typeof options.address !== "string" || options.address === "") {
    return Effect.fail(coordinatorError(new InvalidOption({ option: "address", why: "must be an endpoint such as tcp://0.0.0.0:5555" })))
  }
  const config = ConfigOf.configOf(
    {
      ...options,
      policy: options.policy ?? "load_balanced",
      scoring: options.scoring ?? (options.protocol === "reference" ? "relative_load" : "megatron"),
      beta: options.beta ?? Routing.defaultBeta,
      blockSizeTokens: options.blockSizeTokens ?? 16,
      recordLimit: options.recordLimit ?? 100,
      // Engines register by their empty message, whenever they come (Megatron's start-up, the
      // first N messages of any content, is the testkit's to imitate).
      startupRegistrations: 0,
      tokenizer: options.tokenizer,
      curve: options.curve,
      network: options.network
    },
    log,
    debug
  )
  return Result.isFailure(config)
    ? Effect.fail(coordinatorError(new InvalidOption(config.failure)))
    : Effect.succeed(config.success)
}

/**
 * Starts a coordinator, bound until the scope closes (then its socket is closed with linger 0).
 *
 * @example
 * ```ts
 * import { Coordinator } from "@mcore-effect/coordinator"
 * import { Effect } from "effect"
 *
 * // One token per code point: a stand-in for the model's tokenizer.
 * const tokenizer = {
 *   tokenize: (text: string) => Array.from(text, (c) => c.codePointAt(0)!),
 *   detokenize: (ids: ReadonlyArray<number>) => String.fromCodePoint(...ids)
 * }
 *
 * const program = Effect.gen(function*() {
 *   const coordinator = yield* Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main", tokenizer })
 *   // Megatron's engines dial coordinator.address (launch_inference_coordinator=False) ...
 *   yield* coordinator.awaitEngines(2)
 *   // ... and clients too; it serves until SHUTDOWN:
 *   yield* coordinator.awaitStopped
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category constructors
 * @since 0.2.0
 */
export const make: (options: Options) => Effect.Effect<Handle, CoordinatorError, Scope.Scope> = Effect.fn(
  "Coordinator.make"
)(function*(options: Options) {
  const { debug, log } = yield* ConfigOf.logging
  const chosen = CoordinatorSocket.binderFor(options, (message) => log("Warn", message))
  if (Result.isFailure(chosen)) return yield* Effect.fail(coordinatorError(new InvalidOption(chosen.failure)))
  const binder = chosen.success
  const config = yield* configWithDefaults(options, log, debug)
  const core = yield* Effect.acquireRelease(
    Effect.tryPromise({
      try: () => CoordinatorCore.start(options.address, config, 0, binder),
      catch: (cause) => coordinatorError(new BindFailed({ address: options.address, cause }))
    }),
    // Settles once the socket is closed, its connections too.
    (core) =>
      Effect.promise(() => {
        core.close()
        return core.done
      })
  )
  const protocol = options.protocol
  const read = (): Snapshot => snapshotOf(core, core.address, config.policy, protocol)
  const waitFor = (predicate: (snapshot: Snapshot) => boolean) => awaitState((listener) => core.onChange(listener), read, predicate)
  return {
    address: core.address,
    protocol,
    policy: config.policy,
    curvePublicKey: config.curve?.publicKey,
    snapshot: Effect.sync(read),
    waitFor,
    awaitEngines: (count) => waitFor((s) => s.engines.length >= count),
    awaitStopped: Effect.promise(() => core.done)
  }
})

/**
 * The coordinator as a layer: bound when the layer is built, closed when it is released.
 *
 * @example
 * ```ts
 * import { Coordinator } from "@mcore-effect/coordinator"
 * import { Effect } from "effect"
 *
 * const tokenizer = { tokenize: () => [], detokenize: () => "" }
 * const program = Effect.gen(function*() {
 *   const coordinator = yield* Coordinator.Coordinator
 *   return coordinator.address
 * }).pipe(Effect.provide(Coordinator.layer({ address: "tcp://127.0.0.1:0", protocol: "main", tokenizer })))
 * ```
 *
 * @category layers
 * @since 0.2.0
 */
export const layer = (options: Options): Layer.Layer<Coordinator, CoordinatorError> => Layer.effect(Coordinator, make(options))
