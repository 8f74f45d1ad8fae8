/**
 * How the coordinator picks an engine for a submission: the three policies, the affinity
 * score, and the table of which engine holds which block hashes. Pure: no sockets, so every
 * decision can be checked in isolation.
 *
 * The score follows Megatron's coordinator (`get_best_data_parallel_rank`):
 * `matched_fraction - beta * relative_load`, with
 * `relative_load = (load - mean) / max(1, mean)`. The load term is relative to the fleet, not to
 * a capacity, so it vanishes while engines are even and grows as they diverge; it is subtracted,
 * so a full prefix hit cannot cancel it and strand work on a saturated engine; and the mean is
 * floored at 1 so one request on a near-idle fleet is not a large relative load.
 *
 * @since 0.1.0
 */
import { PrefixHashing } from "@mcore-effect/protocol"

/**
 * The routing policies (Megatron's `PrefixCachingCoordinatorPolicy`).
 *
 * @category constants
 * @since 0.1.0
 */
export const Policy = PrefixHashing.PrefixCachingPolicy

/**
 * @category models
 * @since 0.1.0
 */
export type Policy = PrefixHashing.PrefixCachingPolicy

/**
 * The default weight of the load term.
 *
 * @category constants
 * @since 0.1.0
 */
export const defaultBeta = 0.5

/**
 * An engine's load measured against the fleet's mean, the mean floored at 1.
 *
 * @category utils
 * @since 0.1.0
 */
export const relativeLoad = (load: number, mean: number): number => (load - mean) / Math.max(1, mean)

/**
 * The affinity score of one engine: the fraction of the request's hashes it holds (as an unbroken
 * run from the first), less `beta` times its relative load.
 *
 * @example
 * ```ts
 * import { Routing } from "@mcore-effect/coordinator"
 *
 * // holds 2 of 3 blocks, but carries 4 requests against a mean of 2
 * Routing.affinityScore(2 / 3, 4, 2, 0.5) // 0.6667 - 0.5 * 1 = 0.1667
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const affinityScore = (matchedFraction: number, load: number, mean: number, beta: number): number =>
  matchedFraction - beta * relativeLoad(load, mean)

/**
 * The index of the engine with the fewest requests in flight; ties go to the lowest index.
 *
 * @category utils
 * @since 0.1.0
 */
export const leastLoaded = (loads: ReadonlyArray<number>): number => {
  let best = 0
  for (let i = 1; i < loads.length; i++) if (loads[i]! < loads[best]!) best = i
  return best
}

/**
 * A routing decision.
 *
 * @category models
 * @since 0.1.0
 */
export interface Decision {
  /** Index of the chosen engine. */
  readonly engine: number
  /** `affinity` when some engine held a prefix of the request; `least_loaded` otherwise. */
  readonly reason: "least_loaded" | "affinity"
  /** The per-engine scores, when affinity was scored. */
  readonly scores: ReadonlyArray<number> | null
}

/**
 * The hashes a policy routes on: none for `load_balanced`, the first for `first_prefix_block`,
 * all of them for `longest_prefix`.
 *
 * @category utils
 * @since 0.1.0
 */
export const routingHashes = (policy: Policy, hashes: ReadonlyArray<bigint>): ReadonlyArray<bigint> =>
  policy === "load_balanced" ? [] : policy === "first_prefix_block" ? hashes.slice(0, 1) : hashes

/**
 * Picks an engine. With no hashes, or no engine holding even the first one, the least-loaded
 * engine wins; otherwise the best affinity score, ties broken by lower load, then lower index.
 *
 * @example
 * ```ts
 * import { Routing } from "@mcore-effect/coordinator"
 *
 * // engine 0 holds the whole prefix and one request; engine 1 is idle
 * Routing.choose({ beta: 0.5, loads: [1, 0], depths: [3, 0], hashCount: 3 })
 * // { engine: 0, reason: "affinity", scores: [0.75, 0.25] }
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const choose = (input: {
  readonly beta: number
  readonly loads: ReadonlyArray<number>
  /** Per engine, how many of the request's hashes it holds as an unbroken run from the first. */
  readonly depths: ReadonlyArray<number>
  readonly hashCount: number
}): Decision => {
  const { beta, depths, hashCount, loads } = input
  if (hashCount === 0 || !depths.some((d) => d > 0)) {
    return { engine: leastLoaded(loads), reason: "least_loaded", scores: null }
  }
  let mean = 0
  for (const load of loads) mean += load
  mean /= loads.length
  const scores = loads.map((load, i) => affinityScore(depths[i]! / hashCount, load, mean, beta))
  let best = 0
  for (let i = 1; i < scores.length; i++) {
    const s = scores[i]!
    const b = scores[best]!
    if (s > b || (s === b && loads[i]! < loads[best]!)) best = i
  }
  return { engine: best, reason: "affinity", scores }
}

/**
 * How a prefix-aware policy weighs affinity against load. `relative_load`: the reference
 * protocol's rule ({@link choose}, over the hashes of requests in flight). `megatron`: Megatron-LM's
 * coordinator's (core_v0.17 on, {@link chooseMegatron}, over a `PrefixTable` kept after requests end).
 *
 * @category models
 * @since 0.2.0
 */
export type Scoring = "relative_load" | "megatron"

/**
 * Megatron-LM's `get_best_data_parallel_rank`: per engine `alpha * match + (1 - alpha) *
 * free / maxRequests`, with `free = max(0, maxRequests - load)`; the highest score wins, ties to
 * the most recent assignment, then the lowest index.
 *
 * @example
 * ```ts
 * import { Routing } from "@mcore-effect/coordinator"
 *
 * // engine 1 holds 2 of 3 blocks but carries 128 of 256; engine 0 holds nothing and is idle
 * Routing.chooseMegatron({ alpha: 0.5, maxRequests: 256, loads: [0, 128], match: [0, 2 / 3], recency: [0, 7] })
 * // { engine: 1, reason: "affinity", scores: [0.5, 0.5833] }
 * ```
 *
 * @category utils
 * @since 0.2.0
 */
export const chooseMegatron = (input: {
  readonly alpha: number
  readonly maxRequests: number
  readonly loads: ReadonlyArray<number>
  readonly match: ReadonlyArray<number>
  readonly recency: ReadonlyArray<number>
}): Decision => {
  const { alpha, loads, match, maxRequests, recency } = input
  const scores = loads.map((load, i) => alpha * match[i]! + (1 - alpha) * (Math.max(0, maxRequests - load) / maxRequests))
  let best = 0
  for (let i = 1; i < scores.length; i++) {
    const s = scores[i]!
    const b = scores[best]!
    if (s > b || (s === b && recency[i]! > recency[best]!)) best = i
  }
  return { engine: best, reason: match.some((m) => m > 0) ? "affinity" : "least_loaded", scores }
}

/**
 * Which engine holds which block hashes: a hash is held by an engine while at least one request
 * routed there with it is in flight, and released when the last such request completes.
 *
 * @category models
 * @since 0.1.0
 */
export class HashOwnership {
  /** hash -> engine key -> requests in flight on that engine that carry the hash */
  private readonly owners = new Map<bigint, Map<string, number>>()

  /** How many distinct hashes are held by some engine. */
  get size(): number {
    return this.owners.size
  }

  /** Records that a request carrying `hashes` was routed to `engine`. */
  claim(engine: string, hashes: ReadonlyArray<bigint>): void {
    for (const h of hashes) {
      let row = this.owners.get(h)
      if (row === undefined) {
        row = new Map()
        this.owners.set(h, row)
      }
      row.set(engine, (row.get(engine) ?? 0) + 1)
    }
  }

  /** Records that a request carrying `hashes` on `engine` completed. */
  release(engine: string, hashes: ReadonlyArray<bigint>): void {
    for (const h of hashes) {
      const row = this.owners.get(h)
      const count = row?.get(engine)
      if (row === undefined || count === undefined) continue
      if (count > 1) row.set(engine, count - 1)
      else {
        row.delete(engine)
        if (row.size === 0) this.owners.delete(h)
      }
    }
  }

  /** Forgets everything an engine held (it left). */
  dropEngine(engine: string): void {
    for (const [h, row] of this.owners) {
      if (row.delete(engine) && row.size === 0) this.owners.delete(h)
    }
  }

  /** True when `engine` holds `hash`. */
  holds(engine: string, hash: bigint): boolean {
    return this.owners.get(hash)?.has(engine) === true
  }

  /**
   * Per engine (in the order given), the length of the unbroken run of `hashes`, from the first,
   * that it holds. Prefix reuse needs the whole chain: a deep block is worthless without the
   * blocks before it.
   */
  depths(hashes: ReadonlyArray<bigint>, engines: ReadonlyArray<string>): Array<number> {
    const depth = engines.map(() => 0)
    const alive = engines.map(() => true)
    let living = engines.length
    for (const h of hashes) {
      const row = this.owners.get(h)
      if (row === undefined) break
      for (let i = 0; i < engines.length; i++) {
        if (!alive[i]) continue
        if (row.has(engines[i]!)) depth[i] = depth[i]! + 1
        else {
          alive[i] = false
          living--
        }
      }
      if (living === 0) break
    }
    return depth
  }
}
