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
 *   went.
 *
 *   A prompt shorter than one block has no block to keep. Its whole is remembered instead (a
 *   short key), and a later prompt that begins with it (the next turn of the conversation)
 *   follows it there while no longer prefix of its own was placed (prompts of at least
 *   {@link MIN_SHORT_TOKENS}). A short prompt that begins
 *   with no remembered one goes to the least loaded: a chat template's first tokens are shared
 *   by every conversation, so keying new short prompts by them would pile every new conversation
 *   on one member. Issue 44's measurement: 40 chats of 6 short turns over 3 coordinators had
 *   81% of their turns on their most-used coordinator when short prompts were not remembered.
 *
 *   A routing key (the caller's: a session, a user) overrides the prompt: the first member in
 *   the key's rendezvous order within {@link KEY_LOAD_SCALE} times the load bound, the same in
 *   every process.
 * - `least-loaded`: the member with the fewest requests in flight (the lowest index on a tie).
 * - `round-robin`: each routable member in turn.
 *
 * The two policies that spread ignore the prompt and the routing key alike.
 *
 * The load bound (Mirrokni et al., "Consistent Hashing with Bounded Loads"): a member takes a
 * new request while its load + 1 is at most `ceil(loadFactor * (total + 1) / routable) +
 * loadSlack`; the least loaded member always is, so a prefix never waits for its owner. The
 * slack (default 4 requests) is for small loads, where the proportional bound alone moves
 * conversations for an imbalance of a request or two, each move a prefill of its whole history
 * elsewhere: 40 chats of 6 short turns over 3 of Megatron main's coordinators (fleet.sh) had a
 * mean share of 0.958-0.992 of their turns on their most-used coordinator without it, 1.000 in
 * three runs with it. At the loads the bound is for, the proportional part dominates.
 *
 * @internal
 */
import type { Prompt } from "@mcore-effect/protocol"
import { PrefixTable } from "./prefixTable.ts"
import { CHARS_PER_TOKEN, keyOfString, rendezvousScore, routingKeys, seedOf, shortKeys, unitsOf } from "./routingKeys.ts"

/**
 * The shortest prompt remembered as a short key, in tokens: a prompt of a few tokens (a
 * beginning-of-text token, a greeting) begins many unrelated ones, which would all follow it.
 */
export const MIN_SHORT_TOKENS = 8

/**
 * How much more load a routing key's member takes than a prompt's: a key is the caller's word
 * that its requests belong together, and rendezvous hashing deals keys out unevenly: with the
 * prompt's bound (and its slack), fleet.sh's 40 chats over 3 of Megatron main's coordinators, a
 * `prompt_cache_key` each, had a mean share of 0.988 of their turns on their most-used
 * coordinator in one of two runs (some moved once); 1.000 in every run with twice the bound. A
 * hot key (one user's many conversations under `user`) still spills over, from three members
 * on: over two, `2 * 1.25 * (total + 1) / 2` exceeds any one member's load, so a key never moves
 * for load.
 */
export const KEY_LOAD_SCALE = 2

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
  readonly loadSlack: number
  readonly tableCapacity: number
}

/**
 * A router over a fixed list of members. `pick` returns a member index, or -1 when none is
 * routable (or every routable one is in `excluded`, a bit set by index). `key` is the caller's
 * routing key, if any (an empty one is none).
 */
export class Router {
  /** Each member's rendezvous seed, by index (`place` sets a new member's). */
  private readonly seeds: Array<number>
  readonly table: PrefixTable
  private next = 0
  /** The keys of the prompt being routed (reused: see `routingKeys`). */
  private readonly keys: Float64Array
  /** Its short keys, one per length below a block (reused). */
  private readonly shorts: Float64Array

  constructor(readonly config: RouterConfig) {
    this.seeds = config.addresses.map(seedOf)
    this.table = new PrefixTable(config.tableCapacity)
    this.keys = new Float64Array(config.maxBlocks)
    this.shorts = new Float64Array(config.blockSizeTokens * CHARS_PER_TOKEN)
  }

  /** Member `index` is now `address` (a member added to the fleet, in a new or freed place). */
  place(index: number, address: string): void {
    this.seeds[index] = seedOf(address)
  }

  pick(
    prompt: Prompt.Prompt,
    members: ReadonlyArray<Candidate>,
    excluded: ReadonlyArray<boolean> | undefined,
    key?: string | undefined
  ): number {
    switch (this.config.policy) {
      case "round-robin":
        return this.roundRobin(members, excluded)
      case "least-loaded":
        return leastLoaded(members, excluded)
      case "prefix":
        return this.prefix(prompt, members, excluded, key)
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

  private prefix(
    prompt: Prompt.Prompt,
    members: ReadonlyArray<Candidate>,
    excluded: ReadonlyArray<boolean> | undefined,
    key: string | undefined
  ): number {
    const keys = this.keys
    const blockSize = this.config.blockSizeTokens
    const count = routingKeys(prompt, blockSize, keys)
    const keyed = key !== undefined && key.length > 0
    let total = 0
    let routable = 0
    for (let i = 0; i < members.length; i++) {
      if (!members[i]!.routable || excluded?.[i] === true) continue
      total += members[i]!.load
      routable++
    }
    if (routable === 0) return -1
    const bound = Math.ceil(this.config.loadFactor * (total + 1) / routable) + this.config.loadSlack
    const fits = (i: number): boolean => members[i]!.routable && excluded?.[i] !== true && members[i]!.load + 1 <= bound
    // The short keys: below one block (in the prompt's units), and only when one is to be
    // placed (a short prompt) or may be found (a key routes without them).
    const units = unitsOf(prompt)
    const blockUnits = typeof prompt === "string" ? blockSize * CHARS_PER_TOKEN : blockSize
    const minUnits = typeof prompt === "string" ? MIN_SHORT_TOKENS * CHARS_PER_TOKEN : MIN_SHORT_TOKENS
    const short = units >= minUnits && units < blockUnits
    const shorts = short || (!keyed && this.table.holdsShort) ? Math.min(units, blockUnits - 1) : 0
    if (shorts > 0) shortKeys(prompt, shorts, this.shorts)
    let chosen = -1
    if (keyed) {
      const keyBound = Math.ceil(KEY_LOAD_SCALE * this.config.loadFactor * (total + 1) / routable) + this.config.loadSlack
      chosen = this.rendezvous(
        keyOfString(key),
        (i) => members[i]!.routable && excluded?.[i] !== true && members[i]!.load + 1 <= keyBound
      )
    } else {
      // The longest prefix placed lately, then shorter ones: the owner while it is within bound.
      for (let k = count - 1; k >= 0 && chosen < 0; k--) {
        const owner = this.table.get(keys[k]!)
        if (owner !== undefined && owner < members.length && fits(owner)) chosen = owner
      }
      // Then the longest short prompt it begins with (itself included).
      for (let p = shorts; p >= minUnits && chosen < 0; p--) {
        const owner = this.table.getShort(this.shorts[p - 1]!)
        if (owner !== undefined && owner < members.length && fits(owner)) chosen = owner
      }
      if (chosen < 0 && count > 0) chosen = this.rendezvous(keys[0]!, fits)
    }
    if (chosen < 0) chosen = leastLoaded(members, excluded)
    if (chosen >= 0) {
      this.table.place(keys, count, chosen)
      if (short) this.table.placeShort(this.shorts[units - 1]!, chosen)
    }
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
