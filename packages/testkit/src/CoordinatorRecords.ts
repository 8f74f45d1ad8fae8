/**
 * The records the test coordinator keeps: its engines, the requests in flight on them, the
 * submissions waiting for an engine, and what it sent each engine (kept for inspection).
 *
 * @since 0.1.0
 * @internal
 */
import type { Frames, Headers } from "@mcore-effect/protocol"
import type { RecentLog } from "./RecentLog.ts"

/**
 * A message the coordinator sent to an engine, kept for inspection.
 *
 * @since 0.1.0
 */
export interface Delivery {
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

/** An engine the coordinator routes to. @internal */
export interface EngineEntry {
  readonly identity: Buffer
  readonly key: string
  readonly name: string
  load: number
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
