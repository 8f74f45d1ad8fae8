/**
 * A fleet's requests: each placed on one member by the router, and placed again elsewhere when
 * that member goes down before the request produced any output. What ends a request is the
 * member's own client (a reply, a deadline, an abort, `CoordinatorLost`), so each request ends
 * exactly once, as a single client's do: a member that goes down fails what it held at once and
 * never delivers it afterwards, and the fleet submits a new request (a new id on another
 * coordinator) only for one that failed so.
 *
 * - `submit`, `submitWithKvHandoff`: nothing reaches the caller before the final reply, so a
 *   request lost with its member is always submitted again, on each member at most once.
 * - `stream`: submitted again while no event has reached the stream's consumer; one that
 *   already streamed ends with the member's `CoordinatorLost`: what the consumer has seen is
 *   never repeated.
 * - `submitWithId`: the reply, when awaited, fails over like `submit`; the fleet id it returned
 *   keeps naming the request (`abort` follows it to where it went).
 *
 * Every one of them is placed by one loop, {@link placeWith}: pick a member, count the request
 * there, and on a loss pick again without it. A fleet id names its member (`ids.ts`).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { ClientError } from "../../ClientError.ts"
import type { PromptInput, Started, Submitted } from "../../ClientService.ts"
import type { Reply, StreamEvent } from "../../Reply.ts"
import { checkRequestId, invalidArgument } from "../arguments.ts"
import { Renamed } from "../started.ts"
import * as Ids from "./ids.ts"
import type { FleetMember } from "./member.ts"

/**
 * Failed-over requests whose new place is kept, at most, the oldest forgotten first: so that
 * `memberOf` names where a request was answered after its reply (a prefill's KV is pinned
 * there), in bounded memory. Fail-overs happen only when a coordinator goes down.
 */
export const MOVED_KEPT = 65_536

/** What the request wrappers need of the fleet. */
export interface Placement {
  /** The members, by index (a place may hold another member later: see `Fleet`'s membership). */
  readonly members: ReadonlyArray<FleetMember>
  /** The places fleet ids encode (`ids.ts`): fixed for the fleet's life. */
  readonly slots: number
  /**
   * The member the router picks for `prompt` and the caller's routing `key`, skipping `excluded`;
   * `undefined` when none may take it.
   */
  readonly pick: (prompt: PromptInput, key: string | undefined, excluded: ReadonlyArray<boolean> | undefined) => FleetMember | undefined
  /** The failure when no member may take a request. */
  readonly noMember: () => ClientError
  /** True once the fleet's scope is closing: nothing is submitted again then. */
  readonly closed: () => boolean
}

/** A failure that means the member lost the request, not that the request failed. */
const lostWithMember = (placement: Placement) => (error: ClientError): boolean =>
  (error.reason._tag === "CoordinatorLost" || error.reason._tag === "ClientClosed") && !placement.closed()

const without = (placement: Placement, excluded: ReadonlyArray<boolean> | undefined, member: FleetMember): Array<boolean> => {
  const next = excluded === undefined ? placement.members.map(() => false) : [...excluded]
  next[member.index] = true
  return next
}

/**
 * The placement loop, for an effect or a stream (`F`): the member picked for `prompt` and `key` (skipping
 * `excluded`) is given to `attempt` with the request counted there, and `again` places it anew
 * without that member, counting the loss, for `attempt` to call when the member lost it. No
 * member that may take it: `fail` with the fleet's failure. Called when the request runs (the
 * callers suspend it), so that each run picks anew.
 */
const placeWith = <F>(
  placement: Placement,
  prompt: PromptInput,
  key: string | undefined,
  fail: (error: ClientError) => F,
  attempt: (member: FleetMember, again: () => F) => F,
  excluded?: ReadonlyArray<boolean>
): F => {
  if (key !== undefined && typeof key !== "string") {
    return fail(invalidArgument("routingKey", `expected a string, got ${typeof key}`))
  }
  const member = placement.pick(prompt, key, excluded)
  if (member === undefined) return fail(placement.noMember())
  member.requests++
  return attempt(member, () => {
    member.lostRequest()
    return placeWith(placement, prompt, key, fail, attempt, without(placement, excluded, member))
  })
}

/**
 * Runs `op` on the member picked for `prompt`, and again on another member each time the one
 * it ran on lost it.
 */
export const placed = <A>(
  placement: Placement,
  prompt: PromptInput,
  key: string | undefined,
  op: (member: FleetMember) => Effect.Effect<A, ClientError>,
  excluded?: ReadonlyArray<boolean>
): Effect.Effect<A, ClientError> =>
  Effect.suspend(() =>
    placeWith(
      placement,
      prompt,
      key,
      Effect.fail,
      (member, again: () => Effect.Effect<A, ClientError>) => Effect.catchIf(op(member), lostWithMember(placement), again),
      excluded
    )
  )

/** A stream placed on a member, placed again elsewhere while it has emitted nothing. */
export const placedStream = (
  placement: Placement,
  prompt: PromptInput,
  key: string | undefined,
  op: (member: FleetMember) => Stream.Stream<StreamEvent, ClientError>
): Stream.Stream<StreamEvent, ClientError> =>
  Stream.suspend(() => {
    let emitted = false
    const lost = lostWithMember(placement)
    return placeWith(placement, prompt, key, Stream.fail, (member, again: () => Stream.Stream<StreamEvent, ClientError>) =>
      op(member).pipe(
        Stream.map((event) => {
          emitted = true
          return event
        }),
        Stream.catchIf((error) => !emitted && lost(error), again)
      ))
  })

/** Where a request that failed over went: its member, its id there, the member's join. */
interface Moved {
  readonly member: FleetMember
  readonly localId: number
  readonly generation: number
}

/** The ids of one fleet's requests, and where those that failed over went. */
export class FleetIds {
  /** Requests submitted again elsewhere, by their fleet id (at most {@link MOVED_KEPT}). */
  private readonly moved = new Map<number, Moved>()

  constructor(private readonly placement: Placement) {}

  /** The member a fleet id names now (where it went, if it failed over), or `undefined` for an id no member can hold. */
  memberOf(fleetId: number): FleetMember | undefined {
    if (!Number.isSafeInteger(fleetId) || fleetId < 0) return undefined
    return this.moved.get(fleetId)?.member ?? this.named(fleetId)?.member
  }

  /**
   * `submitWithId` over the fleet: `op` on the member picked, its reply failing over (`op` again
   * elsewhere) when the member lost it; the fleet id keeps naming the request.
   */
  submitWithId(
    prompt: PromptInput,
    key: string | undefined,
    op: (member: FleetMember) => Effect.Effect<Submitted, ClientError>
  ): Effect.Effect<Submitted, ClientError> {
    const n = this.placement.slots
    return placed(this.placement, prompt, key, (member) => {
      const generation = member.generation
      return Effect.flatMap(op(member), (submitted) => {
        const fleetId = Ids.encodeRequest(member.index, submitted.requestId, generation, n)
        const failedOver = Effect.catchIf(submitted.reply, lostWithMember(this.placement), () => {
          member.lostRequest()
          return this.resubmit(fleetId, prompt, key, op, without(this.placement, undefined, member))
        })
        return Effect.map(Effect.cached(failedOver), (reply): Submitted => ({ requestId: fleetId, reply }))
      })
    })
  }

  /** `op` placed again (the fleet id `fleetId`'s request, lost with its member), until it is answered. */
  private resubmit(
    fleetId: number,
    prompt: PromptInput,
    key: string | undefined,
    op: (member: FleetMember) => Effect.Effect<Submitted, ClientError>,
    excluded: ReadonlyArray<boolean>
  ): Effect.Effect<Reply, ClientError> {
    return placed(
      this.placement,
      prompt,
      key,
      (member) => {
        const generation = member.generation
        return Effect.flatMap(op(member), (submitted) => {
          this.moved.delete(fleetId)
          this.moved.set(fleetId, { member, localId: submitted.requestId, generation })
          if (this.moved.size > MOVED_KEPT) this.moved.delete(this.moved.keys().next().value!)
          return submitted.reply
        })
      },
      excluded
    )
  }

  /**
   * `start` over the fleet: placed like any other request but never submitted again (a started
   * request is the caller's to end, see `Service.start`); its fleet id names its member.
   */
  start(
    prompt: PromptInput,
    key: string | undefined,
    op: (member: FleetMember) => Effect.Effect<Started, ClientError>
  ): Effect.Effect<Started, ClientError> {
    const n = this.placement.slots
    return Effect.suspend(() =>
      placeWith(this.placement, prompt, key, Effect.fail, (member) => {
        const generation = member.generation
        return Effect.map(op(member), (started) => new Renamed(Ids.encodeRequest(member.index, started.requestId, generation, n), started))
      })
    )
  }

  /**
   * Aborts the request a fleet id names, on the member that holds it now. An id whose member has
   * rejoined since (its request ended when the member went down) aborts nothing.
   */
  abort(fleetId: number): Effect.Effect<void, ClientError> {
    return this.onHolder(fleetId, (member, localId) => member.client!.abort(localId))
  }

  /** `sendAbort` on the member that holds the request a fleet id names (see {@link abort}). */
  sendAbort(fleetId: number): Effect.Effect<void, ClientError> {
    return this.onHolder(fleetId, (member, localId) => member.client!.sendAbort(localId))
  }

  private onHolder(
    fleetId: number,
    op: (member: FleetMember, localId: number) => Effect.Effect<void, ClientError>
  ): Effect.Effect<void, ClientError> {
    const invalid = checkRequestId(fleetId)
    if (invalid !== undefined) return Effect.fail(invalid)
    const held = this.moved.get(fleetId) ?? this.named(fleetId)
    // A place no member has held: nothing to abort.
    if (held === undefined) return Effect.void
    const member = held.member
    if (member.client === undefined || !Ids.sameGeneration(held.generation, member.generation)) return Effect.void
    return op(member, held.localId)
  }

  /**
   * Where a fleet id that did not fail over names: the member, its id there, the join; or
   * `undefined` for a place no member holds.
   */
  private named(fleetId: number): Moved | undefined {
    const named = Ids.decodeRequest(fleetId, this.placement.slots)
    const member = this.placement.members[named.member]
    return member === undefined ? undefined : { member, localId: named.localId, generation: named.generation }
  }
}
