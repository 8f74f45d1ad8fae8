/**
 * One coordinator of a fleet: its client (a connection of its own), what routing reads of it
 * (load, whether it may take new requests), and the loop that keeps it joined.
 *
 * What a member is, from Megatron-LM's coordinator (`data_parallel_inference_coordinator/`):
 *
 * - **Stalled** (connected, requests in flight, nothing received for `stallTimeout`): alive but
 *   slow is not dead. It takes no new request, but keeps its connection and identity, and what
 *   it holds waits for its replies (bounded by each request's deadline): a coordinator that is
 *   only slow routes those replies to the identity that sent them, and a 0.17+/main coordinator
 *   that routes a reply to an identity no longer connected dies (`EHOSTUNREACH`), so the fleet
 *   never drops a stalled link. It takes requests again as soon as anything arrives from it.
 * - **Down** (its link dropped: the connection was reset or refused, or the heartbeat timed
 *   out): its client has failed every request it held with `CoordinatorLost` (the coordinator
 *   knows a reconnecting DEALER by a new identity, so nothing it owed the old one can arrive),
 *   and the fleet submits again elsewhere those that had produced no output. The member's
 *   client is closed at once, so ZeroMQ does not redial by itself.
 * - **Rejoining**: after `rejoinBackoff` the member dials a fresh client (a fresh DEALER, a
 *   fresh identity). A restarting coordinator takes the first `data_parallel_size` messages it
 *   receives, of any content, as engine registrations (`coordinator.py:176-179`), so a CONNECT
 *   that arrives during its start-up is swallowed and never acknowledged: no CONNECT_ACK within
 *   `ackTimeout` of the connection coming up (1 s by default, however long `connectTimeout`
 *   is), or an answer that is not CONNECT_ACK (engine traffic, since the identity was
 *   registered as an engine), closes that client at once, and the member backs off (doubling, up to
 *   `rejoinBackoffMax`) and dials again with another fresh identity. Nothing that arrives
 *   before CONNECT_ACK is read as a reply (the client's handshake rejects it). The window in
 *   which the coordinator may route a request to the swallowed identity (lost there) is how
 *   long that client stays open: once it is closed, Megatron-LM main's coordinator finds the
 *   identity unreachable and routes the request to a real engine. Once joined, the
 *   fleet's control state (paused or suspended, the generation epoch) is applied to it before
 *   it takes requests.
 * - **Retiring** (removed from the fleet's membership, `retire`): it takes no new request; what
 *   it holds runs to its end (bounded by each request's deadline), then its client is closed and
 *   its loop ends (`retired`). One that is down or dialing when retired ends at once: what it
 *   held was already submitted again elsewhere.
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import type * as ClientConfig from "../../ClientConfig.ts"
import type { ClientError } from "../../ClientError.ts"
import { fleetCoordinatorUp, fleetResubmitted, removeSeries } from "../../ClientMetrics.ts"
import type { Service } from "../../ClientService.ts"
import type * as Connection from "../connection.ts"
import { connect } from "../service.ts"
import type { Candidate } from "./router.ts"

const ignoreLoss = (): void => {}

/**
 * Where a member is.
 *
 * @internal
 */
export type Status = "connecting" | "up" | "stalled" | "down"

/** What a member's loop needs from the fleet. */
export interface MemberConfig {
  /** Its client's configuration (resolved once for the fleet), with its own address. */
  readonly client: ClientConfig.ResolvedOptions
  readonly stallTimeoutMillis: number
  readonly rejoinBackoffMillis: number
  readonly rejoinBackoffMaxMillis: number
  /** Applies the fleet's control state to a member that (re)joined, before it takes requests. */
  readonly rejoined: (client: Service) => Effect.Effect<void, ClientError>
  /** The current time in milliseconds (the `Clock`'s, so a test clock drives stalls). */
  readonly now: () => number
  readonly warn: (message: string) => void
}

/**
 * A member.
 *
 * @internal
 */
export class FleetMember implements Candidate {
  client: Service | undefined = undefined
  private connection: Connection.Connection | undefined = undefined
  private down = false
  /**
   * What its link reports (messages received, the loss), across its joins; `received` when last
   * looked at, and when it last changed (or was idle).
   */
  private readonly watcher: { received: number; lost: () => void } = { received: 0, lost: ignoreLoss }
  private seenReceived = 0
  private quietSince = 0
  /** Requests routed here. */
  requests = 0
  /** Requests that were in flight here when it went down and were submitted again elsewhere. */
  resubmitted = 0
  /** The fleet's context with this member's `coordinator` metric attribute (set by `run`). */
  private metrics: Context.Context<never> | undefined = undefined
  /** Times it joined (the first included). */
  joins = 0
  /** Removed from the membership: no new requests; closed once what it holds has ended. */
  retiring = false
  /** Completed by {@link retire}. */
  private readonly retireSignal = Deferred.makeUnsafe<void>()
  /** Completed when its loop has ended, its client closed (after {@link retire}). */
  readonly retired = Deferred.makeUnsafe<void>()
  /** Bumped at every join: what a fleet id's generation is checked against. */
  generation = 0

  constructor(readonly index: number, readonly address: string, private readonly config: MemberConfig) {}

  /** The fleet's requests in flight here. */
  get load(): number {
    return this.connection === undefined ? 0 : this.connection.pending.size
  }

  get status(): Status {
    if (this.connection === undefined) return this.down ? "down" : "connecting"
    return this.stalled() ? "stalled" : "up"
  }

  get routable(): boolean {
    return this.connection !== undefined && !this.retiring && !this.stalled()
  }

  /** Removes its metric series (its client's and the fleet's about it): once it has left. */
  removeMetrics(): void {
    if (this.metrics !== undefined) removeSeries(this.metrics)
  }

  /** Takes it out of the fleet: see the module's documentation. */
  retire(): void {
    this.retiring = true
    Deferred.doneUnsafe(this.retireSignal, Exit.void)
  }

  /** Once retired, the moment it holds no request (polled: a retiring member is rare). */
  private drained(): Effect.Effect<void> {
    return Effect.andThen(
      Deferred.await(this.retireSignal),
      Effect.repeat(Effect.sync(() => (this.connection?.pending.size ?? 0) === 0), {
        until: (empty) => empty,
        schedule: Schedule.spaced("20 millis")
      })
    )
  }

  /** A request it held was lost with it and is submitted again elsewhere. */
  lostRequest(): void {
    this.resubmitted++
    if (this.metrics !== undefined) fleetResubmitted.updateUnsafe(1, this.metrics)
  }

  /**
   * Stalled: requests in flight and nothing received for `stallTimeout` (measured from the last
   * message, or from when it was last seen idle).
   */
  private stalled(): boolean {
    const connection = this.connection!
    const now = this.config.now()
    if (connection.pending.size === 0 || this.watcher.received !== this.seenReceived) {
      this.seenReceived = this.watcher.received
      this.quietSince = now
      return false
    }
    return now - this.quietSince > this.config.stallTimeoutMillis
  }

  /**
   * Joins and keeps the member joined until interrupted (the fleet's scope closing): dials,
   * waits for the link to drop, closes the client, backs off, dials again. `firstTry` is
   * completed after the first dial, with its outcome.
   */
  run(scope: Scope.Scope, firstTry: Deferred.Deferred<void, ClientError>): Effect.Effect<void> {
    const member = this
    const config = this.config
    return Effect.gen(function*() {
      // Its client's metrics, and the fleet's about it, carry its address.
      const context = yield* Effect.context<never>()
      const attributes = { ...Context.get(context, Metric.CurrentMetricAttributes), coordinator: member.address }
      const metrics = Context.add(context, Metric.CurrentMetricAttributes, attributes)
      member.metrics = metrics
      fleetCoordinatorUp.updateUnsafe(0, metrics)
      let failures = 0
      while (!member.retiring) {
        member.down = false
        const dialScope = yield* Scope.fork(scope, "sequential")
        const lost = Deferred.makeUnsafe<void>()
        // A loss while dialing is the dial's failure, not the member's.
        member.watcher.lost = ignoreLoss
        const dialed = yield* connect(config.client, member.watcher).pipe(
          Effect.tap(({ service }) => config.rejoined(service)),
          Scope.provide(dialScope),
          Effect.provideService(Metric.CurrentMetricAttributes, attributes),
          Effect.exit
        )
        if (Exit.isSuccess(dialed)) {
          const { connection, service } = dialed.value
          member.watcher.lost = () => {
            // Synchronously, from the transport's event: routing stops choosing it at once.
            member.connection = undefined
            member.client = undefined
            member.down = true
            fleetCoordinatorUp.updateUnsafe(0, metrics)
            Deferred.doneUnsafe(lost, Exit.void)
          }
          member.seenReceived = member.watcher.received
          member.quietSince = config.now()
          member.connection = connection
          member.client = service
          member.generation++
          member.joins++
          fleetCoordinatorUp.updateUnsafe(1, metrics)
          failures = 0
          if (member.joins > 1) config.warn(`coordinator ${member.address} rejoined the fleet`)
          Deferred.doneUnsafe(firstTry, Exit.void)
          yield* Effect.raceFirst(Deferred.await(lost), member.drained())
          if (!member.retiring) config.warn(`coordinator ${member.address} is down: redialing with a fresh identity`)
        } else {
          Deferred.doneUnsafe(firstTry, Exit.failCause(dialed.cause))
          member.down = true
          failures++
        }
        yield* Scope.close(dialScope, Exit.void)
        if (member.retiring) break
        const backoff = Math.min(config.rejoinBackoffMaxMillis, config.rejoinBackoffMillis * 2 ** Math.max(0, failures - 1))
        // A retirement ends the wait too.
        yield* Effect.raceFirst(Effect.sleep(backoff), Deferred.await(member.retireSignal))
      }
      // Retired: nothing of it is left open.
      member.connection = undefined
      member.client = undefined
      fleetCoordinatorUp.updateUnsafe(0, metrics)
      Deferred.doneUnsafe(firstTry, Exit.void)
      Deferred.doneUnsafe(member.retired, Exit.void)
      config.warn(`coordinator ${member.address} left the fleet (place ${member.index})`)
    })
  }
}
