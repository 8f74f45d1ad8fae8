/**
 * What a coordinator's core looks like at one moment, as `Coordinator.Snapshot` (and the
 * testkit's test coordinator, which adds its faults) report it.
 *
 * @since 0.2.0
 * @internal
 */
import type { Dialect } from "@mcore-effect/protocol"
import type * as ControlState from "../ControlState.ts"
import type * as Routing from "../Routing.ts"
import type { Counters } from "./coordinatorConfig.ts"
import type { CoordinatorCore } from "./coordinatorCore.ts"
import type { Delivery, Rejection } from "./coordinatorRecords.ts"

/** One engine as the coordinator sees it. */
export interface EngineView {
  readonly identity: string
  /** Requests routed to it and not yet answered. */
  readonly load: number
  /** Submissions routed to it since it registered. */
  readonly routedTotal: number
  /** What the coordinator sent it, most recent last (up to `recordLimit`). */
  readonly received: ReadonlyArray<Delivery>
  /** How many messages it was sent in all. */
  readonly receivedTotal: number
}

/** The coordinator's state at one moment. */
export interface CoreSnapshot {
  readonly address: string
  /** False after SHUTDOWN, a crash, or the scope closing. */
  readonly running: boolean
  readonly shutdownReceived: boolean
  readonly state: ControlState.State
  readonly policy: Routing.Policy
  readonly protocol: Dialect.Name
  /** Registered engines, in routing order (by identity). */
  readonly engines: ReadonlyArray<EngineView>
  /** Clients connected now that completed CONNECT (a client that goes away leaves the count). */
  readonly clients: number
  readonly inFlight: number
  /** Submissions waiting for a first engine to register. */
  readonly backlog: number
  /** Distinct block hashes held by some engine for requests in flight. */
  readonly heldHashes: number
  /** Hashes in the prefix table (`megatron` scoring; 0 otherwise), never more than its capacity. */
  readonly prefixTable: number
  /** Rejected and dropped messages, by reason. */
  readonly counters: Counters
  /**
   * The messages dropped as `malformed`, `badArity`, `unknownHeader`, `neverConnected`,
   * `notFromEngine` or `unknownRequest`, most recent last (up to `recordLimit`): from whom, and
   * why (a message the dialect lacks says which header it was). Empty: nothing was refused.
   */
  readonly rejected: ReadonlyArray<Rejection>
  /** The next coordinator-side request id: how many submissions were routed. */
  readonly nextRequestId: number
  /**
   * Connections closed for bad input, by reason: not ZMTP (`signature`), ZMTP 2.x (`version`),
   * another mechanism, a frame over the limit, a malformed command, a peer of the wrong socket
   * type (`peer-type`), a message before the handshake ended (`early-message`), a handshake that
   * did not end in time (`handshake-timeout`): our ROUTER's only (the default transport), each
   * also logged once. And, on either transport, a peer address outside `allowFrom`
   * (`not-allowed`), logged once per address.
   */
  readonly connectionsRefused: Readonly<Partial<Record<string, number>>>
}

/** Reads `core`'s state now (`address` as bound, `policy` and `protocol` as configured). */
export const snapshotOf = (
  core: CoordinatorCore,
  address: string,
  policy: Routing.Policy,
  protocol: Dialect.Name
): CoreSnapshot => ({
  address,
  running: core.running,
  shutdownReceived: core.shutdownReceived,
  state: core.state,
  policy,
  protocol,
  engines: core.engineViews(),
  clients: core.clientCount,
  inFlight: core.inFlightCount,
  backlog: core.backlogCount,
  heldHashes: core.heldHashes,
  prefixTable: core.prefixTableSize,
  counters: { ...core.counters },
  rejected: core.rejections.toArray(),
  nextRequestId: core.nextRequestId,
  connectionsRefused: { ...core.connectionsRefused }
})
