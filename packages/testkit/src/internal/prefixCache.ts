/**
 * A test engine's prefix cache, as a model with measurable effects for routing: KV blocks of
 * `blockSizeTokens` tokens named by their block hashes, at most `capacityBlocks` of them, the
 * least recently used evicted first; each prompt's leading run of cached blocks is a hit, the
 * rest misses (counted in blocks). With `prefillMsPerBlock`, a request generates nothing until
 * its uncached blocks are prefilled, one engine's prefills one after another (a GPU's prefill
 * is compute-bound: two at once take as long as one after the other), so a request whose prefix
 * is cached gets its first token sooner, as on a real engine. The prefill pass yields the first
 * token: its time is when the prefill ended, whenever the step loop next runs (so the reported
 * `ttft` is the model's, not the event loop's lag).
 *
 * @since 0.2.0
 * @internal
 */

/** @internal */
export class PrefixCache {
  /** Block hash -> nothing; a `Map`'s insertion order is the recency order (oldest first). */
  private readonly blocks = new Map<bigint, true>()
  hits = 0
  misses = 0
  /** When (performance.now() milliseconds) the engine's last prefill queued so far ends. */
  private prefillFreeAt = 0
  /** Requests still prefilling: id -> when their prefill ends. */
  private readonly prefilling = new Map<number, number>()

  constructor(readonly capacityBlocks: number, readonly prefillMsPerBlock: number) {}

  /** Blocks held now. */
  get size(): number {
    return this.blocks.size
  }

  /** How many of `hashes`' leading blocks are cached, the recency order untouched. */
  peek(hashes: ArrayLike<bigint>): number {
    let matched = 0
    while (matched < hashes.length && this.blocks.has(hashes[matched]!)) matched++
    return matched
  }

  /**
   * A prompt's blocks arrive: returns how many of its leading blocks were cached; every block is
   * then the most recently used, and the oldest are evicted beyond capacity.
   */
  admit(hashes: ReadonlyArray<bigint>): number {
    const blocks = this.blocks
    let matched = 0
    while (matched < hashes.length && blocks.has(hashes[matched]!)) matched++
    this.hits += matched
    this.misses += hashes.length - matched
    this.insert(hashes)
    return matched
  }

  /** Blocks the engine now holds (a KV import admitted): the most recently used, the oldest evicted beyond capacity. */
  insert(hashes: ReadonlyArray<bigint>): void {
    const blocks = this.blocks
    for (const h of hashes) {
      blocks.delete(h)
      blocks.set(h, true)
    }
    let excess = blocks.size - this.capacityBlocks
    if (excess > 0) {
      for (const h of blocks.keys()) {
        blocks.delete(h)
        if (--excess === 0) break
      }
    }
  }

  /** Queues the prefill of `uncachedBlocks` blocks for `requestId` (nothing without a prefill cost). */
  prefill(requestId: number, uncachedBlocks: number, now: number): void {
    if (this.prefillMsPerBlock === 0 || uncachedBlocks === 0) return
    const done = Math.max(now, this.prefillFreeAt) + uncachedBlocks * this.prefillMsPerBlock
    this.prefillFreeAt = done
    this.prefilling.set(requestId, done)
  }

  /**
   * Whether `requestId` may generate at `now`: `false` while it prefills; once its prefill has
   * ended, when it ended (once: the prefill pass yields the first token, so that is the first
   * token's time); `true` when it had no prefill to wait for.
   */
  prefilled(requestId: number, now: number): boolean | number {
    const done = this.prefilling.get(requestId)
    if (done === undefined) return true
    if (done > now) return false
    this.prefilling.delete(requestId)
    return done
  }

  /** The request left (finished or dropped) before its prefill ended. */
  forget(requestId: number): void {
    this.prefilling.delete(requestId)
  }
}
