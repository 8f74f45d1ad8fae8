/**
 * A fleet's hand-off ids: the engine-side request id a prefill reply names, made unique across
 * the fleet's coordinators by folding in the coordinator's index (`id * n + member`), so that
 * `releaseKvHandoff` can tell which coordinator's engine pinned the blocks. Encoded and decoded
 * here only.
 *
 * @since 0.2.0
 * @internal
 */

/** The hand-off id of `engineRequestId` on the coordinator `member` of `members`. */
export const encode = (member: number, engineRequestId: number, members: number): number => engineRequestId * members + member

/** The coordinator (its index) and the engine-side request id a hand-off id names. */
export const decode = (handoffId: number, members: number): { readonly member: number; readonly engineRequestId: number } => ({
  member: handoffId % members,
  engineRequestId: Math.floor(handoffId / members)
})
