/**
 * The state a test engine's parts share: its control state, the requests it holds, its pinned
 * KV, its records and counters, the writer and the faults in front of it, and the one way to
 * wake the step loop. Read and written by the message handlers (`EngineInbox`), the arrival of
 * requests (`EngineAdmission`), the control signals (`engineControl.ts`), the step loop
 * (`EngineStepper`) and the hand-off's two sides (`HandoffPins`, `HandoffImports`); owned by
 * `EngineCore`.
 *
 * @since 0.2.0
 * @internal
 */
import type { FrameSocket, Headers } from "@mcore-effect/protocol"
import type { EngineConfig, EngineCounters, EngineState, KvHandoff, Received } from "./engineConfig.ts"
import type { EngineRequest } from "./engineRequest.ts"
import type { FaultedPeer } from "./faultedPeer.ts"
import { HandoffImports } from "./handoffImports.ts"
import { HandoffPins } from "./handoffPins.ts"
import { PrefixCache } from "./prefixCache.ts"
import { RecentLog } from "@mcore-effect/coordinator/internal"

/** @internal */
export class EngineShared {
  state: EngineState = "RUNNING"
  running = true
  generationEpoch: number | null = null
  profiling = false
  steps = 0
  completed = 0
  registrations = 0
  readonly counters: EngineCounters = {
    malformed: 0,
    duplicateRequest: 0,
    unknownAbort: 0,
    unknownRelease: 0,
    abortWhileImporting: 0,
    invalidSignal: 0,
    unsent: 0
  }
  /** The requests held, generating or waiting their turn, in arrival order. */
  readonly active = new Map<number, EngineRequest>()
  readonly received: RecentLog<Received>
  readonly kvHandoffs: Array<KvHandoff> = []
  readonly aborted: Array<number> = []
  readonly signals: Array<Headers.HeaderName> = []
  /** Prefill side: the KV pinned for a decode to read, and its releases. */
  readonly pins: HandoffPins
  /** Decode side: the KV imports not yet admitted, and the reads not yet answered. */
  readonly imports = new HandoffImports()
  /** The prefix cache and the prefill queue. */
  readonly prefixCache: PrefixCache
  /** Why the engine ended as Megatron's would have died (`null`: it did not). */
  failure: string | null = null
  private wakeStepper: (() => void) | undefined

  constructor(
    readonly config: EngineConfig,
    /** The one writer (straight, for what no fault touches: registration, DISCONNECT, acks). */
    readonly writer: FrameSocket.Writer,
    /** The faults, and the send path through them. */
    readonly peer: FaultedPeer,
    /** Ends the engine at once (socket closed, loops stopped). */
    private readonly close: () => void
  ) {
    this.received = new RecentLog(config.recordLimit)
    this.pins = new HandoffPins(config)
    this.prefixCache = new PrefixCache(config.prefixCacheBlocks, config.prefillMsPerBlock)
  }

  /**
   * What would raise outside any `try` in Megatron's engine loop, and so end its process: the
   * engine records why, logs it and closes at once (no DISCONNECT, as a dead process sends none).
   */
  die(why: string): void {
    if (this.failure !== null) return
    this.failure = why
    this.config.log("Error", `engine ${this.config.identity}: ${why}; Megatron-LM's engine dies of it, and so does this one`)
    this.close()
  }

  /** Drops a message: counted and logged. */
  malformed(why: string): void {
    this.counters.malformed++
    this.config.log("Warn", `engine ${this.config.identity}: dropped a message: ${why}`)
  }

  /** Wakes the step loop if it waits for work (or for the state to change). */
  wake(): void {
    const wake = this.wakeStepper
    this.wakeStepper = undefined
    wake?.()
  }

  /** Resolves at the next `wake`. */
  idle(): Promise<void> {
    return new Promise<void>((resolve) => (this.wakeStepper = resolve))
  }
}
