/**
 * What the coordinator's loop is configured with, how it logs, and what it counts.
 *
 * @since 0.1.0
 * @internal
 */
import type { CoordinatorTokenizer } from "../CoordinatorTokenizer.ts"
import type { DialectWire } from "./dialectWire.ts"
import type * as Routing from "../Routing.ts"

/** Severity of a log line from the loop. */
export type LogLevel = "Debug" | "Info" | "Warn" | "Error"

/** How the loop reports what it drops (bridged to Effect's logger by `Coordinator` and the testkit's `TestCoordinator`). */
export type Log = (level: LogLevel, message: string) => void

/**
 * What the coordinator was configured with.
 */
export interface CoordinatorConfig {
  /** The dialect it speaks with clients and engines. */
  readonly wire: DialectWire
  readonly policy: Routing.Policy
  readonly beta: number
  /**
   * How prefix-aware policies score (`Routing.Scoring`); absent: `relative_load`. With
   * `megatron`, `alpha`, `maxRequests` and `prefixTableCapacity` apply.
   */
  readonly scoring?: Routing.Scoring | undefined
  /** Megatron's `prefix_caching_routing_alpha` (default 0.5). */
  readonly alpha?: number | undefined
  /** Megatron's `max_requests`, an engine's capacity in requests (default 256). */
  readonly maxRequests?: number | undefined
  /** Hashes the prefix table keeps (default `PrefixTable.defaultCapacity`). */
  readonly prefixTableCapacity?: number | undefined
  readonly blockSizeTokens: number
  /**
   * What text prompts are hashed and finished requests detokenized with. None: replies keep the
   * text the engine gave (clients detokenize), and a text prompt a prefix policy would have to
   * hash is answered FAILED.
   */
  readonly tokenizer: CoordinatorTokenizer | undefined
  /** How many messages per engine are kept for inspection (oldest dropped first). */
  readonly recordLimit: number
  /** Megatron's start-up: the first this many messages after a start register their senders as engines. */
  readonly startupRegistrations: number
  readonly log: Log
  /**
   * Whether debug lines are wanted: a request's start, completion and abort are logged at debug
   * only then, so that a coordinator whose logs stop at info does not format a line per request.
   */
  readonly debug?: boolean | undefined
  /** CurveZMQ: the coordinator's key pair (Z85); clients and engines must then hold its public key. */
  readonly curve?: { readonly publicKey: string; readonly secretKey: string } | undefined
}

/**
 * Why messages were dropped, by kind.
 *
 * @since 0.1.0
 */
export interface Counters {
  /** Messages from a client that never sent CONNECT (ignored, as Megatron does). */
  neverConnected: number
  /** A second CONNECT from a known client (ignored, no second ACK). */
  duplicateConnect: number
  /** Messages with the wrong number of frames (a SUBMIT that is not five, a KV handoff not three, ...). */
  badArity: number
  /**
   * Frame 0 not decodable, not an array, or with metadata of the wrong shape; or a message of the
   * reference protocol that the coordinator's dialect lacks (ABORT_REQUEST on core_v0.19: it
   * would kill Megatron's coordinator of that ref; this one drops it).
   */
  malformed: number
  /** Frame 0's header is not in the protocol's table, or not one this side handles. */
  unknownHeader: number
  /** Engine replies or partials for a request id the coordinator does not hold. */
  unknownRequest: number
  /** Replies or partials from a peer that never registered as an engine. */
  notFromEngine: number
  /** ABORT_REQUEST for a request that is not in flight (dropped, as Megatron does). */
  abortsDropped: number
  /** Control signals not allowed in the current state (dropped with a warning). */
  controlRejected: number
  /** Control signals redundant in the current state (dropped silently). */
  controlIdempotent: number
  /** Messages that could not be delivered (peer gone; a submission to an engine gone is routed to another). */
  unreachable: number
  /** Exceptions caught in the loop (a bug: the message is dropped, the loop goes on). */
  internalErrors: number
  /**
   * Requests in flight on an engine that left (unreachable, or DISCONNECT), answered to their
   * clients as FAILED instead of left hanging (Megatron's coordinator leaves them).
   */
  failedBack: number
  /** Submissions answered FAILED rather than routed (a text prompt to hash and no tokenizer). */
  refused: number
}

/** All counters at zero. */
export const newCounters = (): Counters => ({
  neverConnected: 0,
  duplicateConnect: 0,
  badArity: 0,
  malformed: 0,
  unknownHeader: 0,
  unknownRequest: 0,
  notFromEngine: 0,
  abortsDropped: 0,
  controlRejected: 0,
  controlIdempotent: 0,
  unreachable: 0,
  internalErrors: 0,
  failedBack: 0,
  refused: 0
})
