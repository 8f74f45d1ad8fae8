/**
 * Where the fleet router sent each prefix lately: a bounded map from a routing key (one block of
 * a prompt, chained: see `routingKeys.ts`) to the member it went to. Unlike Megatron's
 * coordinator, whose prefix-hash map grows with every prompt it has seen (Megatron-LM issue
 * #4145), it holds at most `capacity` keys, in two generations of at most `capacity / 2`: keys
 * are written to the young one, a key found only in the old one is copied to the young one, and
 * when the young one is full it becomes the old one and the former old one is dropped whole. A
 * key used at least once per half-capacity of placements stays; the rest go, without the
 * per-key bookkeeping of an exact LRU (re-inserting 32 keys per request into a `Map` to keep
 * its order cost 6 µs for a 2,048-token prompt; a key already young costs one lookup). A `Map`
 * entry with a number key and a small-integer value costs about 80 bytes in V8: the default
 * 65,536 keys stay under ~6 MiB however long the fleet serves.
 *
 * @internal
 */
export class PrefixTable {
  private young = new Map<number, number>()
  private old = new Map<number, number>()
  private readonly half: number

  constructor(readonly capacity: number) {
    this.half = Math.max(1, Math.floor(capacity / 2))
  }

  /** Keys held now (at most `capacity`). */
  get size(): number {
    return this.young.size + this.old.size
  }

  get(key: number): number | undefined {
    return this.young.get(key) ?? this.old.get(key)
  }

  /** Records that the first `count` of `keys` (a prompt's, shortest prefix first) went to `member`. */
  place(keys: Float64Array, count: number, member: number): void {
    // Placed here lately, longest prefix included: its shorter keys were written with it.
    if (count === 0 || this.young.get(keys[count - 1]!) === member) return
    for (let i = 0; i < count; i++) {
      const key = keys[i]!
      if (this.young.get(key) === member) continue
      if (this.young.size >= this.half) {
        this.old = this.young
        this.young = new Map()
      }
      this.young.set(key, member)
    }
  }
}
