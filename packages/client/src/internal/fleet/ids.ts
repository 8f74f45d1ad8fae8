/**
 * The ids a fleet gives, encoded and decoded here only:
 *
 * - a **request id** (`submitWithId`, `submitAll`, `start`) names the member that took the
 *   request and the member's join it was taken in: `(localId * GENERATIONS + generation) *
 *   members + member`, where `localId` is the member's client's own id and `generation` its join
 *   count modulo {@link GENERATIONS}, so an id from before a member rejoined (its client numbered
 *   from 0 again) never reaches a request of the new client;
 * - a **hand-off id** is the engine-side request id a prefill reply names, made unique across the
 *   fleet's coordinators by folding in the coordinator's index (`id * members + member`), so that
 *   `releaseKvHandoff` can tell which coordinator's engine pinned the blocks.
 *
 * @since 0.2.0
 * @internal
 */

/** Generations a request id tells apart (see the module's header). */
export const GENERATIONS = 64

/** What a request id names: the member (its index), its client's id, and the member's join. */
export interface NamedRequest {
  readonly member: number
  readonly localId: number
  readonly generation: number
}

/** The request id of the request `localId` of member `member`'s client of `generation`. */
export const encodeRequest = (member: number, localId: number, generation: number, members: number): number =>
  (localId * GENERATIONS + (generation % GENERATIONS)) * members + member

/** What a request id names (the caller has checked that it is a non-negative safe integer). */
export const decodeRequest = (fleetId: number, members: number): NamedRequest => {
  const rest = Math.floor(fleetId / members)
  return { member: fleetId % members, localId: Math.floor(rest / GENERATIONS), generation: rest % GENERATIONS }
}

/** Whether two joins of a member are one as request ids tell them (modulo {@link GENERATIONS}). */
export const sameGeneration = (a: number, b: number): boolean => a % GENERATIONS === b % GENERATIONS

/** The hand-off id of `engineRequestId` on the coordinator `member` of `members`. */
export const encodeHandoff = (member: number, engineRequestId: number, members: number): number =>
  engineRequestId * members + member

/** The coordinator (its index) and the engine-side request id a hand-off id names. */
export const decodeHandoff = (handoffId: number, members: number): { readonly member: number; readonly engineRequestId: number } => ({
  member: handoffId % members,
  engineRequestId: Math.floor(handoffId / members)
})
