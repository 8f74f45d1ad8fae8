/**
 * An inference engine for tests: a DEALER that registers with a coordinator the way Megatron's
 * engines do and generates deterministic tokens from the prompt (see `Generation`), stepping all
 * its active requests together every `stepMs`, with replies batched per step, partials for
 * streaming requests, stop conditions, pause/suspend, aborts, generation epochs, KV handoffs and
 * prefix-cache accounting. No GPU, no model. It speaks one protocol dialect (`protocol`), as that
 * Megatron-LM ref's engine does: its replies are shaped and batched as that ref's are.
 *
 * @since 0.1.0
 */
import { BlockHashes, type Dialect, Dialects, type MemorySocket } from "@mcore-effect/protocol"
import { randomUUID } from "node:crypto"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import type * as Continuations from "./Continuations.ts"
import type { Log } from "@mcore-effect/coordinator/internal"
import { DialectWire } from "@mcore-effect/coordinator/internal"
import type { CurveClientKeys, EngineConfig, EngineCounters, EngineState, KvHandoff, Received } from "./internal/engineConfig.ts"
import { EngineCore } from "./internal/engineCore.ts"
import * as EngineSocket from "./internal/engineSocket.ts"
import type * as Faults from "./Faults.ts"
import type * as KvPins from "./KvPins.ts"
import * as ReplyShapes from "./internal/replyShapes.ts"
import { ConnectFailed, InvalidOption, testkitError, type TestkitError } from "./TestkitError.ts"
import { defaultTimeoutMillis, waitUntil } from "./internal/waiting.ts"

export type { CurveClientKeys, EngineCounters, EngineState, KvHandoff, Received } from "./internal/engineConfig.ts"

/**
 * How to start a test engine.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** The coordinator's address (`TestCoordinator`'s `address`). */
  readonly coordinatorAddress: string
  /**
   * Connect over this in-memory network instead of ZeroMQ, to a coordinator serving on it
   * (`TestCoordinator`'s `network`). No CurveZMQ then.
   */
  readonly network?: MemorySocket.Network | undefined
  /**
   * The protocol dialect it speaks with its coordinator (the coordinator's own): what it reads,
   * its replies' shape and how they are batched, as that Megatron-LM ref's engine does it.
   * Default `reference`.
   */
  readonly protocol?: Dialect.Name | undefined
  /** The DEALER identity. Default `mp-coord-<rank>` (Megatron's) when `rank` is given, else a random one. */
  readonly identity?: string | undefined
  /** The data-parallel rank, used for the default identity. */
  readonly rank?: number | undefined
  /** Milliseconds between steps; 0 steps as fast as the event loop allows. Default 0. */
  readonly stepMs?: number | undefined
  /**
   * How many requests generate in each step; later ones wait in arrival order (Megatron's
   * `max_requests`). Default 1024.
   */
  readonly maxActiveRequests?: number | undefined
  /** KV block size, for `num_cached_tokens` and pinned blocks. Default 16. */
  readonly blockSizeTokens?: number | undefined
  /**
   * KV blocks the engine's prefix cache holds, the least recently used evicted first (hits and
   * misses in {@link Snapshot.prefixCache}). Default `Infinity`: every block seen stays cached.
   */
  readonly prefixCacheBlocks?: number | undefined
  /**
   * Milliseconds to prefill each block of a prompt that is not cached, before the request's first
   * token; one engine's prefills run one after another. Default 0 (free).
   */
  readonly prefillMsPerBlock?: number | undefined
  /**
   * MTP proposals per step (Megatron's `num_speculative_tokens`): a prefill's hand-off carries
   * this many plus one `resume_tokens`, and a decode refuses (dies of) any other count. Default 0.
   */
  readonly numSpeculativeTokens?: number | undefined
  /** Tokens to generate when a request sets neither `num_tokens_to_generate` nor `num_tokens_total`. Default 8. */
  readonly defaultTokensToGenerate?: number | undefined
  /**
   * Chosen continuations by prompt: a prompt the script knows generates the script's tokens
   * (then finishes) instead of the deterministic stream (see `Continuations`).
   */
  readonly continuations?: Continuations.Script | undefined
  /** Messages kept for inspection (oldest dropped first); 0 keeps none. Default 1,000 (the most recent). */
  readonly recordLimit?: number | undefined
  /**
   * What an ABORT does: `finish` completes the request at the next step with the tokens it has
   * (Megatron's behaviour: the coordinator then forgets it), `drop` makes it vanish without a
   * reply. Default `finish`.
   */
  readonly abort?: "finish" | "drop" | undefined
  /** CurveZMQ, for a coordinator started with `curve`: its public key and this engine's key pair (Z85). */
  readonly curve?: CurveClientKeys | undefined
}

/**
 * Everything a test may want to know about an engine at one moment.
 *
 * @category models
 * @since 0.1.0
 */
export interface Snapshot {
  readonly identity: string
  readonly protocol: Dialect.Name
  readonly state: EngineState
  readonly running: boolean
  /** Requests the engine holds, generating or waiting their turn (coordinator-side ids, arrival order). */
  readonly active: ReadonlyArray<number>
  readonly completed: number
  readonly steps: number
  /** How many times the engine registered (once per connection to a coordinator). */
  readonly registrations: number
  /** What the engine received, most recent last (up to `recordLimit`). */
  readonly received: ReadonlyArray<Received>
  readonly receivedTotal: number
  /** Control and profiler signals received, in order. */
  readonly signals: ReadonlyArray<string>
  readonly generationEpoch: number | null
  readonly profiling: boolean
  /** Requests aborted while active. */
  readonly aborted: ReadonlyArray<number>
  /** KV-handoff submissions (`kv_meta`, `src_block_ids`) as received. */
  readonly kvHandoffs: ReadonlyArray<KvHandoff>
  /** KV imports (SUBMIT_REQUEST_WITH_KV) not yet admitted: an ABORT for one is ignored. */
  readonly importing: ReadonlyArray<number>
  /** Requests whose KV is pinned for a peer (`do_kv_handoff`), not yet released. */
  readonly pinned: ReadonlyArray<number>
  /** Requests whose pinned KV was released by RELEASE_KV. */
  readonly released: ReadonlyArray<number>
  /** The hand-off's counts: pins, releases (repeated, foreign, early), blocks. */
  readonly kvPins: KvPins.EngineStats
  /**
   * Why the engine ended as Megatron-LM's engine would have died (a decode's KV import with a
   * text prompt, log probs, or the wrong resume-token or block count); `null` while it has not.
   */
  readonly failure: string | null
  readonly counters: EngineCounters
  /** The prefix cache: blocks held, and the prompt blocks that hit and missed it so far. */
  readonly prefixCache: { readonly blocks: number; readonly hits: number; readonly misses: number }
  readonly faults: ReadonlyArray<Faults.Fault>
  readonly faultsApplied: Readonly<Record<Faults.FaultTag, number>>
}

/**
 * A running test engine.
 *
 * @category models
 * @since 0.1.0
 */
export interface Handle {
  readonly identity: string
  readonly protocol: Dialect.Name
  readonly snapshot: Effect.Effect<Snapshot>
  /** Waits until `predicate` holds (checked after every message and step); fails with `WaitTimedOut`. */
  readonly waitFor: (
    what: string,
    predicate: (snapshot: Snapshot) => boolean,
    options?: { readonly timeoutMillis?: number | undefined }
  ) => Effect.Effect<Snapshot, TestkitError>
  readonly injectFault: (fault: Faults.Fault) => Effect.Effect<void>
  readonly clearFaults: (tag?: Faults.FaultTag) => Effect.Effect<void>
  /** How many leading blocks of a token prompt the prefix cache holds now (what an oracle router reads). */
  readonly cachedBlocks: (promptTokens: ReadonlyArray<number>) => Effect.Effect<number>
}

/**
 * The test engine as a service, for `layer`.
 *
 * @category services
 * @since 0.1.0
 */
export class TestEngine extends Context.Service<TestEngine, Handle>()("@mcore-effect/testkit/TestEngine") {}

const invalid = (option: string, why: string) => Effect.fail(testkitError(new InvalidOption({ option, why })))

const nonNegativeInt = (v: number) => Number.isSafeInteger(v) && v >= 0

/**
 * Starts a test engine connected to a coordinator; it runs until the scope closes (then its
 * socket is closed with linger 0 and its loops end).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Generation, TestCoordinator, TestEngine, Vocabulary } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const coordinator = yield* TestCoordinator.make()
 *   const engine = yield* TestEngine.make({ coordinatorAddress: coordinator.address, rank: 0, stepMs: 5 })
 *   yield* coordinator.awaitEngines(1)
 *   // a request for "the quick fox" with num_tokens_to_generate 4 gets exactly these tokens:
 *   const expected = Generation.tokens(Vocabulary.tokenize("the quick fox"), 4)
 *   const { completed } = yield* engine.snapshot
 * }).pipe(Effect.scoped)
 * // In a Megatron-LM ref's dialect: TestEngine.make({ coordinatorAddress, protocol: "main" }),
 * // with a coordinator (and clients) speaking it too.
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: (options: Options) => Effect.Effect<Handle, TestkitError, Scope.Scope> = Effect.fn("TestEngine.make")(
  function*(options: Options) {
    const stepMs = options.stepMs ?? 0
    const maxActiveRequests = options.maxActiveRequests ?? 1024
    const blockSizeTokens = options.blockSizeTokens ?? 16
    const numSpeculativeTokens = options.numSpeculativeTokens ?? 0
    const defaultTokensToGenerate = options.defaultTokensToGenerate ?? 8
    const recordLimit = options.recordLimit ?? 1_000
    const abort = options.abort ?? "finish"
    const prefixCacheBlocks = options.prefixCacheBlocks ?? Infinity
    const prefillMsPerBlock = options.prefillMsPerBlock ?? 0
    if (!(prefixCacheBlocks === Infinity || nonNegativeInt(prefixCacheBlocks))) {
      return yield* invalid("prefixCacheBlocks", "must be an integer >= 0 (or Infinity)")
    }
    if (!Number.isFinite(prefillMsPerBlock) || prefillMsPerBlock < 0) return yield* invalid("prefillMsPerBlock", "must be a finite number >= 0")
    if (!Number.isFinite(stepMs) || stepMs < 0) return yield* invalid("stepMs", "must be a finite number >= 0")
    if (!Number.isSafeInteger(blockSizeTokens) || blockSizeTokens < 1) return yield* invalid("blockSizeTokens", "must be an integer >= 1")
    if (!(maxActiveRequests === Infinity || (Number.isSafeInteger(maxActiveRequests) && maxActiveRequests >= 1))) {
      return yield* invalid("maxActiveRequests", "must be an integer >= 1 (or Infinity)")
    }
    if (!nonNegativeInt(numSpeculativeTokens)) return yield* invalid("numSpeculativeTokens", "must be an integer >= 0")
    if (!nonNegativeInt(defaultTokensToGenerate)) return yield* invalid("defaultTokensToGenerate", "must be an integer >= 0")
    if (!nonNegativeInt(recordLimit)) return yield* invalid("recordLimit", "must be an integer >= 0")
    if (abort !== "finish" && abort !== "drop") return yield* invalid("abort", "must be \"finish\" or \"drop\"")
    if (options.network !== undefined && options.curve !== undefined) return yield* invalid("curve", "CurveZMQ is ZeroMQ's: not with a network")
    const dialect = Dialects.parse(options.protocol ?? "reference")
    if (Result.isFailure(dialect)) return yield* invalid("protocol", dialect.failure)
    const protocol = dialect.success.name
    if (options.rank !== undefined && !nonNegativeInt(options.rank)) return yield* invalid("rank", "must be an integer >= 0")
    const identity = options.identity ??
      (options.rank !== undefined ? `mp-coord-${options.rank}` : `engine-${randomUUID().slice(0, 8)}`)
    if (identity.length === 0 || Buffer.byteLength(identity) > 255) return yield* invalid("identity", "must be 1 to 255 bytes")

    const context = yield* Effect.context<never>()
    const runFork = Effect.runForkWith(context)
    const log: Log = (level, message) => {
      runFork(Effect.logWithLevel(level)(message))
    }
    const config: EngineConfig = {
      wire: DialectWire.of(protocol),
      shape: ReplyShapes.of(protocol),
      identity,
      coordinatorAddress: options.coordinatorAddress,
      stepMs,
      maxActiveRequests,
      blockSizeTokens,
      prefixCacheBlocks,
      prefillMsPerBlock,
      numSpeculativeTokens,
      defaultTokensToGenerate,
      continuations: options.continuations,
      recordLimit,
      abort,
      log,
      curve: options.curve
    }
    const core = yield* Effect.acquireRelease(
      Effect.try({
        try: () => EngineCore.start(config, options.network === undefined ? EngineSocket.zeromq : EngineSocket.memory(options.network)),
        catch: (cause) => testkitError(new ConnectFailed({ address: options.coordinatorAddress, cause }))
      }),
      (core) => Effect.sync(() => core.close())
    )

    const read = (): Snapshot => {
      const e = core.shared
      return {
        identity,
        protocol,
        state: e.state,
        running: e.running,
        active: Array.from(e.active.keys()),
        completed: e.completed,
        steps: e.steps,
        registrations: e.registrations,
        received: e.received.toArray(),
        receivedTotal: e.received.total,
        signals: e.signals.slice(),
        generationEpoch: e.generationEpoch,
        profiling: e.profiling,
        aborted: e.aborted.slice(),
        kvHandoffs: e.kvHandoffs.slice(),
        importing: Array.from(e.imports.pending.keys()),
        pinned: Array.from(e.pins.pinned.keys()),
        released: e.pins.released.slice(),
        kvPins: e.pins.stats(),
        failure: e.failure,
        counters: { ...e.counters },
        prefixCache: { blocks: e.prefixCache.size, hits: e.prefixCache.hits, misses: e.prefixCache.misses },
        faults: core.faults.list(),
        faultsApplied: { ...core.faults.applied }
      }
    }
    const handle: Handle = {
      identity,
      protocol,
      snapshot: Effect.sync(read),
      waitFor: (what, predicate, options) =>
        waitUntil(`engine ${identity}: ${what}`, (l) => core.onChange(l), read, predicate, options?.timeoutMillis ?? defaultTimeoutMillis),
      injectFault: (fault) => Effect.sync(() => core.injectFault(fault)).pipe(Effect.withSpan("TestEngine.injectFault")),
      clearFaults: (tag) => Effect.sync(() => core.clearFaults(tag)).pipe(Effect.withSpan("TestEngine.clearFaults")),
      cachedBlocks: (promptTokens) =>
        Effect.sync(() => core.shared.prefixCache.peek(BlockHashes.blockHashes(promptTokens, blockSizeTokens)))
    }
    return handle
  }
)

/**
 * A test engine as a layer.
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<TestEngine, TestkitError> => Layer.effect(TestEngine, make(options))
