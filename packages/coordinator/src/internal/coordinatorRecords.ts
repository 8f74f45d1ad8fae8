/**
 * The records the coordinator keeps: its engines, the requests in flight on them, the
 * submissions waiting for an engine, and what it sent each engine (kept for inspection).
 *
 * @since 0.1.0
 * @internal
 */
import type { Frames, Headers } from "@mcore-effect/protocol"
import type { Counters } from "./coordinatorConfig.ts"
import type { RecentLog } from "./recentLog.ts"

/**
 * A message the coordinator sent to an engine, kept for inspection.
 *
 * @since 0.1.0
 */
export interface Delivery {
  /** The header's value in the reference table (in every dialect: its wire value may differ, its name does not). */
  readonly header: number
  readonly name: Headers.HeaderName
  /** The coordinator's id for the request, for SUBMIT, SUBMIT_WITH_KV and ABORT. */
  readonly requestId: number | undefined
  /** The client's own id for the request, when there is one. */
  readonly clientRequestId: number | undefined
  /** The client that sent it, as `showIdentity` prints it. */
  readonly client: string | undefined
  /** The frames as sent (identity excluded). */
  readonly frames: ReadonlyArray<Uint8Array>
}

/**
 * A message the coordinator dropped, kept for inspection: a test asserts what was refused, or
 * that nothing was (a client that sent nothing its dialect lacks).
 *
 * @since 0.2.0
 */
export interface Rejection {
  /** The counter it was counted under. */
  readonly kind: keyof Counters
  /** The peer that sent it, as `showIdentity` prints it. */
  readonly from: string
  readonly why: string
}

/** An engine the coordinator routes to. @internal */
export interface EngineEntry {
  readonly identity: Buffer
  readonly key: string
  readonly name: string
  load: number
  /** Submissions routed to it since it registered (a rerouted one counts on each engine tried). */
  routed: number
  readonly received: RecentLog<Delivery>
}

/** A request on an engine, by the coordinator's id. @internal */
export interface InFlight {
  readonly client: Buffer
  readonly clientKey: string
  readonly clientRequestId: number
  readonly engine: EngineEntry
  readonly hashes: ReadonlyArray<bigint>
}

/** A submission waiting for an engine to register. @internal */
export interface Waiting {
  /** The submission, decoded up to its metadata (its bodies are forwarded as they came). */
  readonly envelope: Frames.Envelope
  readonly client: Buffer
  readonly clientKey: string
  readonly clientRequestId: number
  readonly hashes: ReadonlyArray<bigint>
}
