/**
 * The state a test engine's parts share: its control state, the requests it holds, its pinned
 * KV, its records and counters, the writer and the faults in front of it, and the one way to
 * wake the step loop. Read and written by the message handlers (`EngineInbox`), the arrival of
 * requests (`EngineAdmission`), the control signals (`engineControl.ts`), the step loop
 * (`EngineStepper`) and the hand-off pins (`KvPins`); owned by `EngineCore`.
 *
 * @since 0.2.0
 * @internal
 */
import type { FrameSocket, Headers } from "@mcore-effect/protocol"
import type { EngineConfig, EngineCounters, EngineState, KvHandoff, Received } from "./engineConfig.ts"
import type { EngineRequest } from "./engineRequest.ts"
import type { FaultedPeer } from "./faultedPeer.ts"
import { KvPins } from "./kvPins.ts"
import { PrefixCache } from "./prefixCache.ts"
import { RecentLog } from "./recentLog.ts"

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
    invalidSignal: 0,
    unsent: 0
  }
  /** The requests held, generating or waiting their turn, in arrival order. */
  readonly active = new Map<number, EngineRequest>()
  readonly received: RecentLog<Received>
  readonly kvHandoffs: Array<KvHandoff> = []
  readonly aborted: Array<number> = []
  readonly signals: Array<Headers.HeaderName> = []
  /** The prefills' KV pinned for a peer to pull, and their releases. */
  readonly pins: KvPins
  /** The prefix cache and the prefill queue. */
  readonly prefixCache: PrefixCache
  private wakeStepper: (() => void) | undefined

  constructor(
    readonly config: EngineConfig,
    /** The one writer (straight, for what no fault touches: registration, DISCONNECT, acks). */
    readonly writer: FrameSocket.Writer,
    /** The faults, and the send path through them. */
    readonly peer: FaultedPeer
  ) {
    this.received = new RecentLog(config.recordLimit)
    this.pins = new KvPins(config, this.counters)
    this.prefixCache = new PrefixCache(config.prefixCacheBlocks, config.prefillMsPerBlock)
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
