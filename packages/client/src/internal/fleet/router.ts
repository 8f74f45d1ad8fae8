/**
 * The fleet's routing policies: which member a new request goes to, from the members' loads as
 * the fleet sees them (its own requests in flight on each) and, for `prefix`, the prompt.
 *
 * - `prefix` (the default): consistent hashing with bounded loads over the prompt's prefix.
 *   A prompt whose longest recently placed prefix (`PrefixTable`) went to a member goes there
 *   again while that member is within the load bound; any other goes to the first member, in
 *   its first block's rendezvous order, that is within the bound. The rendezvous order depends
 *   on the key and the members' addresses only, so two processes over the same fleet place a
 *   new prefix on the same coordinator without sharing anything, as long as loads keep both
 *   under the bound; the table only makes a conversation that was moved by load stay where it
 *   went. A prompt shorter than one block has no prefix to keep: it goes to the least loaded.
 * - `least-loaded`: the member with the fewest requests in flight (the lowest index on a tie).
 * - `round-robin`: each routable member in turn.
 *
 * The load bound (Mirrokni et al., "Consistent Hashing with Bounded Loads"): a member takes a
 * new request while its load + 1 is at most `ceil(loadFactor * (total + 1) / routable)`; the
 * least loaded member always is, so a prefix never waits for its owner.
 *
 * @internal
 */
import type { Prompt } from "@mcore-effect/protocol"
import { PrefixTable } from "./prefixTable.ts"
import { rendezvousScore, routingKeys, seedOf } from "./routingKeys.ts"

/**
 * The routing policies.
 *
 * @internal
 */
export type Policy = "prefix" | "least-loaded" | "round-robin"

/** What the router reads of a member. */
export interface Candidate {
  /** The fleet's requests in flight on it. */
  readonly load: number
  /** May take new requests now (connected, not stalled). */
  readonly routable: boolean
}

/** What the router is made with. */
export interface RouterConfig {
  readonly policy: Policy
  readonly addresses: ReadonlyArray<string>
  readonly blockSizeTokens: number
  readonly maxBlocks: number
  readonly loadFactor: number
  readonly tableCapacity: number
}

/**
 * A router over a fixed list of members. `pick` returns a member index, or -1 when none is
 * routable (or every routable one is in `excluded`, a bit set by index).
 */
export class Router {
  private readonly seeds: ReadonlyArray<number>
  readonly table: PrefixTable
  private next = 0
  /** The keys of the prompt being routed (reused: see `routingKeys`). */
  private readonly keys: Float64Array

  constructor(readonly config: RouterConfig) {
    this.seeds = config.addresses.map(seedOf)
    this.table = new PrefixTable(config.tableCapacity)
    this.keys = new Float64Array(config.maxBlocks)
  }

  pick(prompt: Prompt.Prompt, members: ReadonlyArray<Candidate>, excluded: ReadonlyArray<boolean> | undefined): number {
    switch (this.config.policy) {
      case "round-robin":
        return this.roundRobin(members, excluded)
      case "least-loaded":
        return leastLoaded(members, excluded)
      case "prefix":
        return this.prefix(prompt, members, excluded)
    }
  }

  private roundRobin(members: ReadonlyArray<Candidate>, excluded: ReadonlyArray<boolean> | undefined): number {
    const n = members.length
    for (let tried = 0; tried < n; tried++) {
      const i = this.next
      this.next = (i + 1) % n
      if (members[i]!.routable && excluded?.[i] !== true) return i
    }
    return -1
  }

  private prefix(prompt: Prompt.Prompt, members: ReadonlyArray<Candidate>, excluded: ReadonlyArray<boolean> | undefined): number {
    const keys = this.keys
    const count = routingKeys(prompt, this.config.blockSizeTokens, keys)
    if (count === 0) return leastLoaded(members, excluded)
    let total = 0
    let routable = 0
    for (let i = 0; i < members.length; i++) {
      if (!members[i]!.routable || excluded?.[i] === true) continue
      total += members[i]!.load
      routable++
    }
    if (routable === 0) return -1
    const bound = Math.ceil(this.config.loadFactor * (total + 1) / routable)
    const fits = (i: number): boolean => members[i]!.routable && excluded?.[i] !== true && members[i]!.load + 1 <= bound
    let chosen = -1
    // The longest prefix placed lately, then shorter ones: the owner while it is within bound.
    for (let k = count - 1; k >= 0 && chosen < 0; k--) {
      const owner = this.table.get(keys[k]!)
      if (owner !== undefined && owner < members.length && fits(owner)) chosen = owner
    }
    if (chosen < 0) chosen = this.rendezvous(keys[0]!, fits)
    if (chosen < 0) chosen = leastLoaded(members, excluded)
    if (chosen >= 0) this.table.place(keys, count, chosen)
    return chosen
  }

  /** The member of highest rendezvous score for `key` among those that `fit`, or -1. */
  private rendezvous(key: number, fits: (i: number) => boolean): number {
    let best = -1
    let bestScore = -1
    for (let i = 0; i < this.seeds.length; i++) {
      if (!fits(i)) continue
      const score = rendezvousScore(key, this.seeds[i]!)
      if (score > bestScore || (score === bestScore && i < best)) {
        best = i
        bestScore = score
      }
    }
    return best
  }
}

/** The routable member with the fewest requests in flight (the lowest index on a tie), or -1. */
export const leastLoaded = (members: ReadonlyArray<Candidate>, excluded: ReadonlyArray<boolean> | undefined): number => {
  let best = -1
  for (let i = 0; i < members.length; i++) {
    const m = members[i]!
    if (!m.routable || excluded?.[i] === true) continue
    if (best < 0 || m.load < members[best]!.load) best = i
  }
  return best
}
