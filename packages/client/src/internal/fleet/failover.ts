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
 * A fleet id names its member: `(localId * GENERATIONS + generation) * members + index`, where
 * `localId` is the member's client's own id and `generation` the member's join count modulo
 * {@link GENERATIONS}, so an id from before a member rejoined (its client numbered from 0 again)
 * never reaches a request of the new client.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { ClientError } from "../../ClientError.ts"
import type { PromptInput, Service, Submitted } from "../../ClientService.ts"
import type { Reply, StreamEvent } from "../../Reply.ts"
import type { Member } from "./member.ts"
import { checkRequestId } from "../arguments.ts"

/** Generations a fleet id tells apart (see the module's header). */
export const GENERATIONS = 64

/**
 * Failed-over requests whose new place is kept, at most, the oldest forgotten first: so that
 * `memberOf` names where a request was answered after its reply (a prefill's KV is pinned
 * there), in bounded memory. Fail-overs happen only when a coordinator goes down.
 */
export const MOVED_KEPT = 65_536

/** What the request wrappers need of the fleet. */
export interface Placement {
  readonly members: ReadonlyArray<Member>
  /** The member the router picks for `prompt`, skipping `excluded`; `undefined` when none may take it. */
  readonly pick: (prompt: PromptInput, excluded: ReadonlyArray<boolean> | undefined) => Member | undefined
  /** The failure when no member may take a request. */
  readonly noMember: () => ClientError
  /** True once the fleet's scope is closing: nothing is submitted again then. */
  readonly closed: () => boolean
}

/** A failure that means the member lost the request, not that the request failed. */
const lostWithMember = (placement: Placement) => (error: ClientError): boolean =>
  (error.reason._tag === "CoordinatorLost" || error.reason._tag === "ClientClosed") && !placement.closed()

const without = (placement: Placement, excluded: ReadonlyArray<boolean> | undefined, member: Member): Array<boolean> => {
  const next = excluded === undefined ? placement.members.map(() => false) : [...excluded]
  next[member.index] = true
  return next
}

/**
 * Runs `op` on the member picked for `prompt`, and again on another member each time the one
 * it ran on lost it.
 */
export const placed = <A>(
  placement: Placement,
  prompt: PromptInput,
  op: (client: Service, member: Member) => Effect.Effect<A, ClientError>,
  excluded?: ReadonlyArray<boolean>
): Effect.Effect<A, ClientError> =>
  Effect.suspend(() => {
    const member = placement.pick(prompt, excluded)
    if (member === undefined) return Effect.fail(placement.noMember())
    member.requests++
    return Effect.catchIf(op(member.client!, member), lostWithMember(placement), () => {
      member.lostRequest()
      return placed(placement, prompt, op, without(placement, excluded, member))
    })
  })

/** A stream placed on a member, placed again elsewhere while it has emitted nothing. */
export const placedStream = (
  placement: Placement,
  prompt: PromptInput,
  op: (client: Service) => Stream.Stream<StreamEvent, ClientError>
): Stream.Stream<StreamEvent, ClientError> =>
  Stream.suspend(() => {
    let emitted = false
    const lost = lostWithMember(placement)
    const attempt = (excluded: ReadonlyArray<boolean> | undefined): Stream.Stream<StreamEvent, ClientError> => {
      const member = placement.pick(prompt, excluded)
      if (member === undefined) return Stream.fail(placement.noMember())
      member.requests++
      return op(member.client!).pipe(
        Stream.map((event) => {
          emitted = true
          return event
        }),
        Stream.catchIf((error) => !emitted && lost(error), () => {
          member.lostRequest()
          return attempt(without(placement, excluded, member))
        })
      )
    }
    return attempt(undefined)
  })

/** The ids of one fleet's `submitWithId` requests, and where those that failed over went. */
export class FleetIds {
  /** Requests submitted again elsewhere, by their fleet id (at most {@link MOVED_KEPT}). */
  private readonly moved = new Map<number, { readonly member: Member; readonly localId: number; readonly generation: number }>()

  constructor(private readonly placement: Placement) {}

  /** The fleet id of the request `localId` of `member`'s client of `generation`. */
  encode(member: Member, localId: number, generation: number): number {
    return (localId * GENERATIONS + (generation % GENERATIONS)) * this.placement.members.length + member.index
  }

  /** The member a fleet id names now (where it went, if it failed over), or `undefined` for an id no member can hold. */
  memberOf(fleetId: number): Member | undefined {
    if (!Number.isSafeInteger(fleetId) || fleetId < 0) return undefined
    return this.moved.get(fleetId)?.member ?? this.placement.members[fleetId % this.placement.members.length]
  }

  /** `submitWithId` over the fleet. */
  submitWithId(
    prompt: PromptInput,
    op: (client: Service) => Effect.Effect<Submitted, ClientError>,
    again: (client: Service) => Effect.Effect<Submitted, ClientError>
  ): Effect.Effect<Submitted, ClientError> {
    let member!: Member
    let generation = 0
    const started = placed(this.placement, prompt, (client, chosen) => {
      member = chosen
      generation = chosen.generation
      return op(client)
    })
    return Effect.flatMap(started, (submitted) => {
      const fleetId = this.encode(member, submitted.requestId, generation)
      const failedOver = Effect.catchIf(submitted.reply, lostWithMember(this.placement), () => {
        member.lostRequest()
        return this.resubmit(fleetId, prompt, again, without(this.placement, undefined, member))
      })
      return Effect.map(Effect.cached(failedOver), (reply) => ({ requestId: fleetId, reply }))
    })
  }

  private resubmit(
    fleetId: number,
    prompt: PromptInput,
    again: (client: Service) => Effect.Effect<Submitted, ClientError>,
    excluded: ReadonlyArray<boolean>
  ): Effect.Effect<Reply, ClientError> {
    return Effect.suspend(() => {
      const member = this.placement.pick(prompt, excluded)
      if (member === undefined) return Effect.fail(this.placement.noMember())
      member.requests++
      const generation = member.generation
      return again(member.client!).pipe(
        Effect.flatMap((submitted) => {
          this.moved.delete(fleetId)
          this.moved.set(fleetId, { member, localId: submitted.requestId, generation })
          if (this.moved.size > MOVED_KEPT) this.moved.delete(this.moved.keys().next().value!)
          return submitted.reply
        }),
        Effect.catchIf(lostWithMember(this.placement), () => {
          member.lostRequest()
          return this.resubmit(fleetId, prompt, again, without(this.placement, excluded, member))
        })
      )
    })
  }

  /**
   * Aborts the request a fleet id names, on the member that holds it now. An id whose member has
   * rejoined since (its request ended when the member went down) aborts nothing.
   */
  abort(fleetId: number): Effect.Effect<void, ClientError> {
    return this.onHolder(fleetId, (client, localId) => client.abort(localId))
  }

  /** `sendAbort` on the member that holds the request a fleet id names (see {@link abort}). */
  sendAbort(fleetId: number): Effect.Effect<void, ClientError> {
    return this.onHolder(fleetId, (client, localId) => client.sendAbort(localId))
  }

  private onHolder(
    fleetId: number,
    op: (client: Service, localId: number) => Effect.Effect<void, ClientError>
  ): Effect.Effect<void, ClientError> {
    const invalid = checkRequestId(fleetId)
    if (invalid !== undefined) return Effect.fail(invalid)
    const moved = this.moved.get(fleetId)
    const n = this.placement.members.length
    const member = moved?.member ?? this.placement.members[fleetId % n]!
    const rest = Math.floor(fleetId / n)
    const localId = moved?.localId ?? Math.floor(rest / GENERATIONS)
    const generation = moved?.generation ?? rest % GENERATIONS
    const client = member.client
    if (client === undefined || member.generation % GENERATIONS !== generation % GENERATIONS) return Effect.void
    return op(client, localId)
  }
}
