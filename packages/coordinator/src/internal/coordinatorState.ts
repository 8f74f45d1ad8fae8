/**
 * The routing state the coordinator's handlers share: the engines and the way to them, the
 * requests in flight and the submissions waiting for an engine, the clients that connected, the
 * way back to them, and the records of what was dropped. One value, read and written by the
 * message handlers (`CoordinatorInbox`), the request dispatch (`requestDispatch.ts`) and the
 * control relay (`ControlRelay`), owned by `CoordinatorCore`.
 *
 * @since 0.2.0
 * @internal
 */
import { type FrameSocket, Headers } from "@mcore-effect/protocol"
import { type CoordinatorConfig, type Counters, newCounters } from "./coordinatorConfig.ts"
import type { InFlight, Rejection, Waiting } from "./coordinatorRecords.ts"
import type * as DialectWire from "./dialectWire.ts"
import * as EngineLoss from "./engineLoss.ts"
import { EnginePool, type Reroute } from "./enginePool.ts"
import type { ClientOutbox } from "./peer.ts"
import { InFlightRequests } from "./inFlightRequests.ts"
import { RecentLog } from "./recentLog.ts"
import type * as ReplyRoute from "./replyRoute.ts"
import { PrefixTable } from "../PrefixTable.ts"
import * as Routing from "../Routing.ts"
import { showIdentity } from "./wireFrames.ts"

/** A header's name, for log lines. */
export const nameOf = (header: number): Headers.HeaderName => Headers.nameOf(header as Headers.Header)

/** @internal */
export class CoordinatorState {
  readonly counters: Counters = newCounters()
  /** The dialect spoken. */
  readonly wire: DialectWire.DialectWire
  /** The messages dropped (most recent, up to `recordLimit`). */
  readonly rejections: RecentLog<Rejection>
  readonly knownClients = new Set<string>()
  readonly inFlight = new InFlightRequests<InFlight>()
  readonly ownership = new Routing.HashOwnership()
  /** Megatron's prefix table, kept after requests end (with `scoring: "megatron"` only). */
  readonly prefixTable: PrefixTable | undefined
  readonly pool: EnginePool
  /** The way to clients, through the faults. */
  readonly toClients: ClientOutbox
  /** The way back from engines. */
  readonly route: ReplyRoute.ReplyRoute
  /** Submissions waiting for a first engine to register. */
  backlog: Array<Waiting> = []
  /**
   * The next coordinator-side request id. A restarted coordinator starts from where the one
   * before it stopped: engines outlive it and still reply to the old requests, and such a reply
   * must not match a new request that reused the id (it is dropped as `unknownRequest`).
   */
  nextRequestId: number
  /** Messages still to be taken as engine registrations, whatever they hold (Megatron's start-up). */
  registrationsLeft: number

  constructor(
    readonly config: CoordinatorConfig,
    /** The one writer (straight, for what no fault touches: CONNECT_ACK, engine deliveries). */
    readonly writer: FrameSocket.Writer<Reroute | undefined>,
    /** The way to clients (the peer's: plain, or through a test's faults). */
    toClients: ClientOutbox,
    firstRequestId: number
  ) {
    this.wire = config.wire
    this.nextRequestId = firstRequestId
    this.registrationsLeft = config.startupRegistrations
    this.rejections = new RecentLog(config.recordLimit)
    this.toClients = toClients
    this.prefixTable = config.scoring === "megatron" ? new PrefixTable(config.prefixTableCapacity) : undefined
    this.pool = new EnginePool(writer, config, nameOf, (key, name, why) => {
      EngineLoss.failBack(this.route, key, name, why)
      this.ownership.dropEngine(key)
      this.prefixTable?.dropEngine(key)
    })
    this.route = {
      wire: config.wire,
      config,
      inFlight: this.inFlight,
      ownership: this.ownership,
      toClients: this.toClients,
      counters: this.counters,
      reject: (kind, identity, why) => this.reject(kind, identity, why)
    }
  }

  /** Drops a message: counted, logged, and kept for inspection. */
  reject(kind: keyof Counters, identity: Uint8Array, why: string): void {
    this.counters[kind]++
    const from = showIdentity(identity)
    this.rejections.add({ kind, from, why })
    this.config.log("Warn", `coordinator: dropped a message from ${from} (${kind}): ${why}`)
  }
}
