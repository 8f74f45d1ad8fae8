/**
 * Many coordinators behind one `InferenceClient`: a fleet holds one client (one connection) per
 * coordinator, places each request on one of them, and provides the same `InferenceClient`
 * service, so the text layer, the server and any Effect program use a fleet as they use one
 * coordinator. All of a fleet's coordinators speak one dialect (`protocol`).
 *
 * - **Routing** (`routing`): `prefix` (default) keeps prompts that share a prefix on one
 *   coordinator, so its engines' prefix caches hit, within a load bound (consistent hashing
 *   with bounded loads over the router's own block keys, deterministic across processes);
 *   `least-loaded`; `round-robin`. The router's blocks (`routingBlockTokens`) only decide
 *   placement and never reach the wire. Its memory is bounded (`routingTableKeys`).
 * - **Failover**: a coordinator whose link stalls takes no new request but keeps its connection
 *   and what it holds (each request bounded by its deadline); one whose link drops has the
 *   requests it held that produced no output submitted again on the others, and streams that
 *   already streamed end with `CoordinatorLost`. Every request ends exactly once.
 * - **Rejoin**: a coordinator that went down is redialed after `rejoinBackoff`, with a fresh
 *   identity each time, until it acknowledges CONNECT (a restarting Megatron coordinator
 *   swallows the first messages it receives as engine registrations); the fleet's control
 *   state (paused, suspended, the generation epoch) is applied to it before it takes requests.
 * - **Ids**: the ids a fleet gives (`submitWithId`, `submitAll`) name the coordinator that
 *   holds the request ({@link FleetService.memberOf}): `abort` reaches it, wherever the request
 *   failed over to. `releaseKvHandoff` takes a {@link FleetService.handoffId}.
 * - **Control signals** go to every coordinator: {@link FleetService.control} returns one `Exit`
 *   per coordinator; the service's own methods (`pauseEngines`, ...) send to every one and then
 *   fail with the first failure, if any coordinator failed.
 *
 * @since 0.2.0
 */
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as ClientConfig from "./ClientConfig.ts"
import * as FleetConfig from "./FleetConfig.ts"
import type { ClientError } from "./ClientError.ts"
import type { ReplyFor, Service } from "./ClientService.ts"
import { InferenceClient } from "./InferenceClient.ts"
import type { ControlResult, Signal } from "./internal/fleet/control.ts"
import type { FleetMember, Status } from "./internal/fleet/member.ts"
import type { Policy } from "./internal/fleet/router.ts"
import { makeFleet } from "./internal/fleet/service.ts"

export type {
  /**
   * A control signal sent to every coordinator: an `InferenceClient` method's name, or a
   * generation epoch.
   */
  Signal as ControlSignal,
  /** One coordinator's result of a control signal: its index, its address, its `Exit`. */
  ControlResult,
  /** How requests are placed: `prefix`, `least-loaded` or `round-robin`. */
  Policy as RoutingPolicy,
  /**
   * Where a coordinator is: `connecting` (dialing, not joined yet), `up`, `stalled` (joined,
   * requests in flight and nothing received for `stallTimeout`: it takes no new request) or
   * `down` (its link dropped; redialing).
   */
  Status as MemberStatus
}

/**
 * A fleet's options (declared in `FleetConfig`, beside the fleet's own settings).
 *
 * @category models
 * @since 0.2.0
 */
export type FleetOptions = FleetConfig.FleetOptions

/**
 * What a fleet's coordinator reports.
 *
 * @category models
 * @since 0.2.0
 */
export interface MemberStats {
  readonly index: number
  readonly address: string
  readonly status: Status
  /** The fleet's requests in flight on it now. */
  readonly inFlight: number
  /** Requests placed on it (re-submissions included). */
  readonly requests: number
  /** Requests it held when it went down that were submitted again on another coordinator. */
  readonly resubmitted: number
  /** Times it joined (1 for one that never went down). */
  readonly joins: number
}

/**
 * One coordinator of a fleet, for callers that need it alone (a prefill/decode pool, metrics).
 *
 * @category models
 * @since 0.2.0
 */
export interface Member<R extends import("./Reply.ts").Reply = import("./Reply.ts").Reply> {
  readonly index: number
  readonly address: string
  /** Its client now; `undefined` while it is down or dialing (each rejoin is a new client). */
  readonly client: Effect.Effect<Service<R> | undefined>
  readonly stats: Effect.Effect<MemberStats>
}

/**
 * A fleet: the `InferenceClient` service over it, and what only a fleet has.
 *
 * @category models
 * @since 0.2.0
 */
export interface FleetService<R extends import("./Reply.ts").Reply = import("./Reply.ts").Reply> {
  /** The fleet as one `InferenceClient` (what {@link layer} provides as `InferenceClient`). */
  readonly client: Service<R>
  /**
   * The coordinators now, by index (in the order of `coordinators` for a fixed fleet; with a
   * `membership`, those that joined since in the places they took, and none that left).
   */
  readonly members: ReadonlyArray<Member<R>>
  /** The index of the coordinator that holds the request a fleet id names, or `undefined` for a value no fleet id has. */
  readonly memberOf: (fleetId: number) => number | undefined
  /**
   * The id `client.releaseKvHandoff` takes for the engine-side request `engineRequestId` (what
   * a prefill reply's `disaggregated_params` names) of the coordinator `member`.
   */
  readonly handoffId: (member: number, engineRequestId: number) => number
  /** Sends a control signal to every coordinator; one result per coordinator, in order. */
  readonly control: (signal: Signal) => Effect.Effect<ReadonlyArray<ControlResult>>
}

/**
 * The fleet as a service.
 *
 * @category services
 * @since 0.2.0
 */
export class Fleet extends Context.Service<Fleet, FleetService>()("@mcore-effect/client/Fleet") {}

/**
 * Builds a fleet: checks every option and address before opening anything (`InvalidArgument`,
 * `InvalidAddress`), dials every coordinator at once, and returns when each has answered or
 * failed its first dial and at least one joined (failing with the first coordinator's error
 * when none did); the others keep being redialed. Everything is owned by the current scope.
 *
 * @example
 * ```ts
 * import { Fleet } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const fleet = yield* Fleet.make({
 *     coordinators: ["tcp://127.0.0.1:5555", "tcp://127.0.0.1:5556"],
 *     protocol: "main",
 *     routing: "prefix"
 *   })
 *   const reply = yield* fleet.client.submit([1, 2, 3, 4], { num_tokens_to_generate: 8 })
 *   const paused = yield* fleet.control("pauseEngines") // one Exit per coordinator
 *   return { reply, paused }
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category constructors
 * @since 0.2.0
 */
export const make = <const O extends FleetOptions>(
  options: O
): Effect.Effect<FleetService<ReplyFor<O & { readonly address: string }>>, ClientError, Scope.Scope> =>
  Effect.gen(function*() {
    const handle = yield* makeFleet(options)
    const asMember = (member: FleetMember): Member => ({
      index: member.index,
      address: member.address,
      client: Effect.sync(() => member.client),
      stats: Effect.sync(() => ({
        index: member.index,
        address: member.address,
        status: member.status,
        inFlight: member.load,
        requests: member.requests,
        resubmitted: member.resubmitted,
        joins: member.joins
      }))
    })
    // One view per member object: a place taken by a new member gets a new view.
    const views = new WeakMap<FleetMember, Member>()
    const service: FleetService = {
      client: handle.service,
      get members() {
        return handle.members.filter((member) => !member.retiring).map((member) => {
          let view = views.get(member)
          if (view === undefined) views.set(member, view = asMember(member))
          return view
        })
      },
      memberOf: (fleetId) => handle.memberOf(fleetId)?.index,
      handoffId: handle.handoffId,
      control: handle.control
    }
    return service as FleetService<any>
  }) as Effect.Effect<FleetService<any>, ClientError, Scope.Scope>

/**
 * The fleet as a layer providing both {@link Fleet} and `InferenceClient` (the fleet's
 * `client`): the text layer and the server run over it unchanged.
 *
 * @example
 * ```ts
 * import { Fleet, InferenceClient } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const FleetLive = Fleet.layer({ coordinators: ["tcp://127.0.0.1:5555", "tcp://127.0.0.1:5556"], protocol: "main" })
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* InferenceClient.InferenceClient // the whole fleet
 *   return yield* client.submit("Hello", { num_tokens_to_generate: 8 })
 * }).pipe(Effect.provide(FleetLive))
 * ```
 *
 * @category layers
 * @since 0.2.0
 */
export const layer = (options: FleetOptions): Layer.Layer<Fleet | InferenceClient, ClientError> =>
  Layer.effectContext(
    Effect.map(make(options), (fleet) => Context.make(Fleet, fleet).pipe(Context.add(InferenceClient, fleet.client)))
  )

/**
 * The fleet as a layer whose options are read from `Config`: the client's as a client reads them
 * (`ClientConfig.config`: `MCORE_PROTOCOL` and friends; its address is not read) and the fleet's
 * own (`FleetConfig.config`: `MCORE_ROUTING`), over the given coordinators.
 *
 * @category layers
 * @since 0.2.0
 */
export const layerConfig = (
  coordinators: ReadonlyArray<string>,
  clientConfig: Config.Config<ClientConfig.ClientOptions> = ClientConfig.config,
  fleetConfig: Config.Config<FleetConfig.FleetSettings> = FleetConfig.config
): Layer.Layer<Fleet | InferenceClient, ClientError | Config.ConfigError> =>
  Layer.unwrap(
    Effect.map(
      Effect.all([clientConfig, fleetConfig]),
      ([{ address: _, ...client }, fleet]) => layer({ ...client, ...fleet, coordinators })
    )
  )
