/**
 * Megatron-LM's prefix table (`_hash_table` in its coordinator, from core_v0.17 on): for each
 * block hash, the engines a request carrying it was sent to, and when (an assignment counter).
 * Kept after the request ends, since an engine's KV prefix cache outlives the request: the next
 * request with the same prefix goes where that prefix is cached.
 *
 * Megatron's grows without bound (NVIDIA/Megatron-LM#4145: every distinct hash stays for the
 * life of the process). This one holds at most `capacity` hashes and forgets the least recently
 * assigned first, as an engine's cache evicts its least recently used blocks. About 250 bytes per
 * hash held by one engine (`node --expose-gc packages/coordinator/bench/prefix-table-memory.mjs`:
 * 100,000 hashes, heap 2.9 MB before, 27.8 MB after, 249 B each; 1,000,000: 241 B each), so the
 * default capacity, 100,000, costs ~25 MB.
 *
 * @since 0.2.0
 */

/**
 * What a request's hashes match: per engine (in the order asked), Megatron's `_match_vector`:
 * `match` is `(i + 1) / n` for the engines holding the deepest hash `i` that any engine holds
 * (0 for the others), `recency` their assignment counter for it.
 *
 * @category models
 * @since 0.2.0
 */
export interface Match {
  readonly match: ReadonlyArray<number>
  readonly recency: ReadonlyArray<number>
}

/**
 * The default capacity, in hashes.
 *
 * @category constants
 * @since 0.2.0
 */
export const defaultCapacity = 100_000

/**
 * The table.
 *
 * @example
 * ```ts
 * import { PrefixTable } from "@mcore-effect/coordinator"
 *
 * const table = new PrefixTable.PrefixTable(1_000)
 * table.assign("mp-coord-1", [11n, 12n])
 * table.match([11n, 12n, 13n], ["mp-coord-0", "mp-coord-1"])
 * // { match: [0, 2 / 3], recency: [0, 1] }
 * ```
 *
 * @category models
 * @since 0.2.0
 */
export class PrefixTable {
  /** hash -> engine key -> assignment counter; in the order of last assignment (oldest first). */
  private readonly rows = new Map<bigint, Map<string, number>>()
  private counter = 0

  constructor(readonly capacity: number = defaultCapacity) {}

  /** How many hashes it holds (never more than `capacity`). */
  get size(): number {
    return this.rows.size
  }

  /** Records that a request carrying `hashes` was sent to `engine` (Megatron's `_update_rank_hashes`). */
  assign(engine: string, hashes: ReadonlyArray<bigint>): void {
    if (this.capacity === 0 || hashes.length === 0) return
    const stamp = ++this.counter
    for (const hash of hashes) {
      let row = this.rows.get(hash)
      if (row === undefined) row = new Map()
      // Re-inserted: the Map's order is the order of last assignment.
      else this.rows.delete(hash)
      row.set(engine, stamp)
      this.rows.set(hash, row)
    }
    if (this.rows.size <= this.capacity) return
    for (const hash of this.rows.keys()) {
      this.rows.delete(hash)
      if (this.rows.size <= this.capacity) break
    }
  }

  /** Forgets an engine (it left): its entries go, and hashes no engine holds any more. */
  dropEngine(engine: string): void {
    for (const [hash, row] of this.rows) {
      if (row.delete(engine) && row.size === 0) this.rows.delete(hash)
    }
  }

  /** Which of `engines` a request carrying `hashes` matches, and how deep (see {@link Match}). */
  match(hashes: ReadonlyArray<bigint>, engines: ReadonlyArray<string>): Match {
    const n = hashes.length
    for (let i = n - 1; i >= 0; i--) {
      const row = this.rows.get(hashes[i]!)
      if (row === undefined) continue
      let any = false
      const match = engines.map((engine) => (row.has(engine) ? ((any = true), (i + 1) / n) : 0))
      if (any) return { match, recency: engines.map((engine) => row.get(engine) ?? 0) }
    }
    const zeros = engines.map(() => 0)
    return { match: zeros, recency: zeros }
  }
}
