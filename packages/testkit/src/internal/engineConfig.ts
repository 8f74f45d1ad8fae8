/**
 * What a test engine is configured with, and the records it keeps (its messages received, its
 * KV hand-offs, its counters): the engine's data, beside the machinery that uses it
 * (`EngineCore`), as `CoordinatorConfig` is the coordinator's.
 *
 * @since 0.2.0
 * @internal
 */
import type { Headers } from "@mcore-effect/protocol"
import type * as Continuations from "../Continuations.ts"
import type { Log } from "@mcore-effect/coordinator/internal"
import type { DialectWire } from "@mcore-effect/coordinator/internal"
import type { ReplyShape } from "./replyShapes.ts"

/**
 * An engine's state (Megatron's `EngineState`, without the transient -ING states).
 *
 * @since 0.1.0
 */
export type EngineState = "RUNNING" | "PAUSED" | "SUSPENDED" | "STOPPED"

/**
 * What the engine was configured with.
 */
export interface EngineConfig {
  /** The dialect it speaks with its coordinator. */
  readonly wire: DialectWire.DialectWire
  /** Its replies' shape (`undefined`: the reference protocol's). */
  readonly shape: ReplyShape | undefined
  readonly identity: string
  readonly coordinatorAddress: string
  readonly stepMs: number
  /** Requests generated per step; later ones wait their turn in arrival order (Megatron's `max_requests`). */
  readonly maxActiveRequests: number
  readonly blockSizeTokens: number
  /** KV blocks the prefix cache holds (least recently used evicted first); `Infinity`: all. */
  readonly prefixCacheBlocks: number
  /** Milliseconds to prefill each block not cached; 0: prefill is free. */
  readonly prefillMsPerBlock: number
  /** MTP proposals per step: a hand-off's `resume_tokens` hold one more than this (Megatron's `num_speculative_tokens`). */
  readonly numSpeculativeTokens: number
  readonly defaultTokensToGenerate: number
  readonly continuations?: Continuations.Script | undefined
  readonly recordLimit: number
  /** `finish`: an aborted request completes at the next step with what it has (Megatron). `drop`: it vanishes, no reply. */
  readonly abort: "finish" | "drop"
  readonly log: Log
  /** CurveZMQ: the coordinator's public key and this engine's key pair (Z85). */
  readonly curve?: CurveClientKeys | undefined
}

/**
 * The keys a CurveZMQ client (an engine, or a client of the coordinator) holds, all Z85 text.
 *
 * @since 0.1.0
 */
export interface CurveClientKeys {
  /** The coordinator's public key. */
  readonly serverKey: string
  readonly publicKey: string
  readonly secretKey: string
}

/**
 * A message the engine received, kept for inspection.
 *
 * @since 0.1.0
 */
export interface Received {
  /** The header's value in the reference table (in every dialect: its wire value may differ, its name does not). */
  readonly header: number | undefined
  readonly name: Headers.HeaderName | undefined
  /** The request id in frame 0, for messages that carry one. */
  readonly requestId: number | undefined
  readonly frames: ReadonlyArray<Uint8Array>
}

/**
 * A KV-handoff submission as the engine received it.
 *
 * @since 0.1.0
 */
export interface KvHandoff {
  readonly requestId: number
  readonly kvMeta: Readonly<Record<string, unknown>>
  readonly srcBlockIds: ReadonlyArray<number>
}

/**
 * Why the engine dropped messages, by kind.
 *
 * @since 0.1.0
 */
export interface EngineCounters {
  /** Undecodable frame 0, wrong arity or wrong metadata. */
  malformed: number
  /** A SUBMIT for an id already active. */
  duplicateRequest: number
  /** ABORT for a request this engine does not hold. */
  unknownAbort: number
  /** RELEASE_KV for a request this engine does not hold pinned (released already, or never pinned here). */
  unknownRelease: number
  /**
   * ABORT for a KV import not yet admitted: Megatron's engine ignores it, since the request
   * enters its `requests` only when the import is admitted.
   */
  abortWhileImporting: number
  /** Control signals not valid in the engine's state (Megatron asserts; here they are dropped). */
  invalidSignal: number
  /** Messages that could not be sent. */
  unsent: number
}
