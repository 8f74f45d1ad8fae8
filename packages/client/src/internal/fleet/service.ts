/**
 * The fleet behind `Fleet.make`: the options checked before anything is opened, one member per
 * coordinator (each its own client, joined and kept joined by its loop), the router, and each
 * operation of the `InferenceClient` service wired over them.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type ClientError, clientError, CoordinatorLost } from "../../ClientError.ts"
import type { BatchReply, BatchRequest, BatchSettled, Service, SubmitAllOptions } from "../../ClientService.ts"
import type * as FleetConfig from "../../FleetConfig.ts"
import { named, Transport } from "../../Transport.ts"
import { Control, firstFailure, type ControlResult, type Signal } from "./control.ts"
import { FleetIds, placed, placedStream, type Placement } from "./failover.ts"
import { blockHashesOf } from "../service.ts"
import { FleetMember } from "./member.ts"
import { Router } from "./router.ts"
import { checkRequestId, invalidArgument } from "../arguments.ts"
import * as Ids from "./ids.ts"
import { resolveFleet } from "./options.ts"

/** What `Fleet.make` builds: the service and what only a fleet has. */
export interface FleetHandle {
  readonly service: Service
  readonly members: ReadonlyArray<FleetMember>
  readonly memberOf: (fleetId: number) => FleetMember | undefined
  /** The hand-off id of `engineRequestId` on the coordinator `member` (see `ids.ts`). */
  readonly handoffId: (member: number, engineRequestId: number) => number
  readonly control: (signal: Signal) => Effect.Effect<ReadonlyArray<ControlResult>>
}

/** The fleet over `options`, owned by the current scope (see `Fleet.make`). */
export const makeFleet = Effect.fnUntraced(function*(options: FleetConfig.FleetOptions) {
  // Every option resolved once; nothing is opened for options or an address the fleet refuses.
  const transport = named(options.transport) ?? (yield* Transport)
  const resolved = resolveFleet(options, transport.addressProblem)
  if (Result.isFailure(resolved)) return yield* Effect.fail(resolved.failure)
  const fleet = resolved.success
  const config = fleet.client

  const scope = yield* Effect.scope
  const clock = yield* Clock.Clock
  const context = yield* Effect.context<never>()
  const runFork = Effect.runForkWith(context)
  const warn = (message: string): void => {
    runFork(Effect.logWarning(message))
  }
  let closed = false

  const members: Array<FleetMember> = []
  // Applied by each member as it joins; made once the members exist.
  let control!: Control
  const memberAt = (index: number, address: string): FleetMember =>
    new FleetMember(index, address, {
      client: { ...config, address },
      stallTimeoutMillis: fleet.stallTimeoutMillis,
      rejoinBackoffMillis: fleet.rejoinBackoffMillis,
      rejoinBackoffMaxMillis: fleet.rejoinBackoffMaxMillis,
      rejoined: (client) => control.apply(client),
      now: () => clock.currentTimeMillisUnsafe(),
      warn
    })
  for (const [index, address] of fleet.coordinators.entries()) members.push(memberAt(index, address))
  // core_v0.16's resumeEngines sends RESUME then UNPAUSE (see controlSignals.ts).
  control = new Control(members, config.dialect.headers.values.PAUSE_ACK !== undefined)

  const router = new Router({
    policy: fleet.routing,
    addresses: fleet.coordinators,
    blockSizeTokens: fleet.routingBlockTokens,
    maxBlocks: fleet.routingMaxBlocks,
    loadFactor: fleet.loadFactor,
    loadSlack: fleet.loadSlack,
    tableCapacity: fleet.routingTableKeys
  })
  // The members now (a membership changes them), not the coordinators the fleet began with.
  const lostError = () =>
    clientError(new CoordinatorLost({ address: members.filter((m) => !m.retiring).map((m) => m.address).join(",") }))
  const placement: Placement = {
    members,
    slots: fleet.slots,
    pick: (prompt, key, excluded) => {
      let index = router.pick(prompt, members, excluded, key)
      // Every joined member stalled: a stall is a guess, a lost link is not; the least loaded
      // joined one then.
      if (index < 0) {
        for (const m of members) {
          if (m.client === undefined || m.retiring || excluded?.[m.index] === true) continue
          if (index < 0 || m.load < members[index]!.load) index = m.index
        }
      }
      return index < 0 ? undefined : members[index]!
    },
    noMember: lostError,
    closed: () => closed
  }
  const ids = new FleetIds(placement)

  // Each member joins and stays joined in a fiber of the fleet's scope; the fleet is up once
  // every member has tried once and at least one joined.
  const firstTries = members.map(() => Deferred.makeUnsafe<void, ClientError>())
  // The members' clients and loops live in a scope of their own, closed after `closed` is set
  // (finalizers run last-added first): what their closing fails is the fleet's closing
  // (`ClientClosed`), never submitted again elsewhere.
  const membersScope = yield* Scope.fork(scope, "sequential")
  for (const member of members) yield* Effect.forkIn(member.run(membersScope, firstTries[member.index]!), membersScope)
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      closed = true
    })
  )
  const tries = yield* Effect.forEach(firstTries, (d) => Effect.exit(Deferred.await(d)), { concurrency: "unbounded" })
  const first = tries[0]!
  if (tries.every(Exit.isFailure) && Exit.isFailure(first)) return yield* Effect.failCause(first.cause)

  if (options.membership !== undefined) {
    yield* Effect.forkIn(
      Stream.runForEach(options.membership, (set) => Effect.sync(() => follow(set))),
      membersScope
    )
  }

  /**
   * A new member set: each address not in the fleet joins (in the first place a retired member
   * freed, else a new one, up to `slots`); each member not in it retires. A set that is empty or
   * has an address the transport refuses changes nothing.
   */
  function follow(set: ReadonlyArray<string>): void {
    const wanted = new Set(set)
    if (wanted.size === 0) return warn("a coordinator set with no coordinator: the fleet keeps its members")
    for (const address of wanted) {
      const why = transport.addressProblem(address)
      if (why !== undefined) return warn(`a coordinator set with ${JSON.stringify(address)} (${why}): the fleet keeps its members`)
    }
    const active = new Set<string>()
    for (const member of members) {
      if (member.retiring) continue
      if (wanted.has(member.address)) active.add(member.address)
      else {
        member.retire()
        warn(`coordinator ${member.address} is leaving the fleet: no new requests; closed once the ${member.load} it holds have ended`)
        // Once it has left, its series go, unless the address is back in the fleet by then
        // (the same series are the new member's).
        runFork(Effect.forkIn(
          Effect.andThen(Deferred.await(member.retired), Effect.sync(() => {
            if (!members.some((m) => !m.retiring && m.address === member.address)) member.removeMetrics()
          })),
          membersScope
        ))
      }
    }
    for (const address of wanted) {
      if (active.has(address)) continue
      const free = members.findIndex((m) => m.retiring && Deferred.isDoneUnsafe(m.retired))
      const index = free >= 0 ? free : members.length
      if (index >= fleet.slots) {
        warn(`coordinator ${address} not added: the fleet holds ${fleet.slots} (maxCoordinators), retiring ones included`)
        continue
      }
      const member = memberAt(index, address)
      // Ids of the member this place held name its joins, not this one's (see ids.ts).
      if (free >= 0) member.generation = members[free]!.generation
      members[index] = member
      router.place(index, address)
      warn(`coordinator ${address} joins the fleet in place ${index}`)
      runFork(Effect.forkIn(member.run(membersScope, Deferred.makeUnsafe<void, ClientError>()), membersScope))
    }
  }

  const controlSignal = (signal: Signal) => () => Effect.flatMap(control.send(signal), firstFailure)

  const batch = (
    requests: Iterable<BatchRequest>,
    options: SubmitAllOptions | undefined
  ): Stream.Stream<readonly [number, BatchRequest], ClientError> => {
    const concurrency = options?.concurrency
    if (concurrency !== undefined && concurrency !== "unbounded" && !(Number.isSafeInteger(concurrency) && concurrency >= 1)) {
      return Stream.fail(invalidArgument("concurrency", `expected a positive integer or "unbounded", got ${String(concurrency)}`))
    }
    return Stream.map(Stream.fromIterable(requests), (request, index) => [index, request] as const)
  }
  const submitOne = (request: BatchRequest) =>
    ids.submitWithId(request.prompt, request.routingKey, (member) => member.client!.submitWithId(request.prompt, request.samplingParams, request))

  const service: Service = {
    submit: (prompt, samplingParams, options) =>
      placed(placement, prompt, options?.routingKey, (member) => member.client!.submit(prompt, samplingParams, options)),
    submitWithId: (prompt, samplingParams, options) =>
      ids.submitWithId(prompt, options?.routingKey, (member) => member.client!.submitWithId(prompt, samplingParams, options)),
    submitAll: (requests, options) =>
      Stream.mapEffect(
        batch(requests, options),
        ([index, request]) =>
          Effect.flatMap(submitOne(request), (submitted) =>
            Effect.map(submitted.reply, (reply): BatchReply => ({ index, requestId: submitted.requestId, reply }))),
        { concurrency: options?.concurrency ?? "unbounded", unordered: true }
      ),
    submitAllSettled: (requests, options) =>
      Stream.mapEffect(
        batch(requests, options),
        ([index, request]) =>
          Effect.matchEffect(submitOne(request), {
            onFailure: (error) => Effect.succeed<BatchSettled>({ index, requestId: undefined, exit: Exit.fail(error) }),
            onSuccess: (submitted) =>
              Effect.map(Effect.exit(submitted.reply), (exit): BatchSettled => ({ index, requestId: submitted.requestId, exit }))
          }),
        { concurrency: options?.concurrency ?? "unbounded", unordered: true }
      ),
    stream: (prompt, samplingParams, options) =>
      placedStream(placement, prompt, options?.routingKey, (member) => member.client!.stream(prompt, samplingParams, options)),
    submitWithKvHandoff: (prompt, samplingParams, kvMeta, srcBlockIds, options) =>
      placed(placement, prompt, undefined, (member) => member.client!.submitWithKvHandoff(prompt, samplingParams, kvMeta, srcBlockIds, options)),
    streamWithKvHandoff: (prompt, samplingParams, kvMeta, srcBlockIds, options) =>
      placedStream(placement, prompt, undefined, (member) => member.client!.streamWithKvHandoff(prompt, samplingParams, kvMeta, srcBlockIds, options)),
    start: (request) => ids.start(request.prompt, request.routingKey, (member) => member.client!.start(request)),
    sendAbort: (requestId) => ids.sendAbort(requestId),
    releaseKvHandoff: (handoffId, options) => {
      // A handoff id names the member whose engine pinned the KV (see `Fleet.handoffId`).
      const invalid = checkRequestId(handoffId)
      if (invalid !== undefined) return Effect.fail(invalid)
      const named = Ids.decodeHandoff(handoffId, fleet.slots)
      const member = members[named.member]
      if (member === undefined) return Effect.fail(invalidArgument("handoffId", `${handoffId} names no coordinator of this fleet`))
      const client = member.client
      if (client === undefined) return Effect.fail(clientError(new CoordinatorLost({ address: member.address })))
      return client.releaseKvHandoff(named.engineRequestId, options)
    },
    abort: (requestId) => ids.abort(requestId),
    pauseEngines: controlSignal("pauseEngines"),
    unpauseEngines: controlSignal("unpauseEngines"),
    suspendEngines: controlSignal("suspendEngines"),
    resumeEngines: controlSignal("resumeEngines"),
    stopEngines: controlSignal("stopEngines"),
    setGenerationEpoch: (generationEpoch) => controlSignal({ generationEpoch })(),
    startCudaProfiler: controlSignal("startCudaProfiler"),
    stopCudaProfiler: controlSignal("stopCudaProfiler"),
    shutdownCoordinator: controlSignal("shutdownCoordinator"),
    blockHashes: blockHashesOf(config.hashing),
    dialect: config.dialect,
    pendingCount: Effect.sync(() => members.reduce((sum, m) => sum + m.load, 0)),
    connected: Effect.sync(() => members.some((m) => m.client !== undefined))
  }
  const handle: FleetHandle = {
    service,
    members,
    memberOf: (fleetId) => ids.memberOf(fleetId),
    handoffId: (member, engineRequestId) => Ids.encodeHandoff(member, engineRequestId, fleet.slots),
    control: (signal) => control.send(signal)
  }
  return handle
})
