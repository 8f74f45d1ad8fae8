/**
 * Where the fleet router sent each prefix lately: a bounded map from a routing key (one block of
 * a prompt, chained, or a whole short prompt: see `routingKeys.ts`) to the member it went to.
 * Unlike Megatron's coordinator, whose prefix-hash map grows with every prompt it has seen
 * (Megatron-LM issue #4145), it holds at most `capacity` keys, in two generations of at most
 * `capacity / 2`: keys are written to the young one, a key found only in the old one is copied
 * to the young one, and when the young one is full it becomes the old one and the former old one
 * is dropped whole. A key used at least once per half-capacity of placements stays; the rest go,
 * without the per-key bookkeeping of an exact LRU (re-inserting 32 keys per request into a `Map`
 * to keep its order cost 6 µs for a 2,048-token prompt; a key already young costs one lookup). A
 * `Map` entry with a number key and a small-integer value costs about 80 bytes in V8: the default
 * 65,536 keys stay under ~6 MiB however long the fleet serves.
 *
 * Short prompts' keys ({@link PrefixTable.placeShort}) are also marked in a bit set per
 * generation (8 bits per key it can hold: 32 KiB each at the default capacity), because a prompt
 * looks for them at every length below a block, and a bit costs less than a `Map` lookup.
 *
 * @internal
 */
export class PrefixTable {
  private young = new Map<number, number>()
  private old = new Map<number, number>()
  private readonly half: number
  /** The short keys' bits, per generation, and how many short keys each generation took. */
  private youngShort: Uint32Array
  private oldShort: Uint32Array
  private youngShorts = 0
  private oldShorts = 0
  private readonly mask: number

  constructor(readonly capacity: number) {
    this.half = Math.max(1, Math.floor(capacity / 2))
    let bits = 1024
    while (bits < 8 * this.half && bits < 1 << 30) bits *= 2
    this.mask = bits - 1
    this.youngShort = new Uint32Array(bits >>> 5)
    this.oldShort = new Uint32Array(bits >>> 5)
  }

  /** Keys held now (at most `capacity`). */
  get size(): number {
    return this.young.size + this.old.size
  }

  /** Whether any short prompt's key is held: if none, a prompt need not compute its own. */
  get holdsShort(): boolean {
    return this.youngShorts + this.oldShorts > 0
  }

  get(key: number): number | undefined {
    return this.young.get(key) ?? this.old.get(key)
  }

  /** Where a short prompt's key went, if it is held; the bit sets answer most misses. */
  getShort(key: number): number | undefined {
    const bit = (key >>> 0) & this.mask
    const word = bit >>> 5
    const mask = 1 << (bit & 31)
    if (((this.youngShort[word]! | this.oldShort[word]!) & mask) === 0) return undefined
    return this.get(key)
  }

  /** Records that the first `count` of `keys` (a prompt's, shortest prefix first) went to `member`. */
  place(keys: Float64Array, count: number, member: number): void {
    // Placed here lately, longest prefix included: its shorter keys were written with it.
    if (count === 0 || this.young.get(keys[count - 1]!) === member) return
    for (let i = 0; i < count; i++) {
      const key = keys[i]!
      if (this.young.get(key) === member) continue
      this.write(key, member)
    }
  }

  /** Records that a prompt shorter than a block, whose key is `key`, went to `member`. */
  placeShort(key: number, member: number): void {
    if (this.young.get(key) === member) return
    this.write(key, member)
    const bit = (key >>> 0) & this.mask
    const word = bit >>> 5
    this.youngShort[word] = this.youngShort[word]! | (1 << (bit & 31))
    this.youngShorts++
  }

  private write(key: number, member: number): void {
    if (this.young.size >= this.half) {
      this.old = this.young
      this.young = new Map()
      this.oldShort = this.youngShort
      this.youngShort = new Uint32Array(this.oldShort.length)
      this.oldShorts = this.youngShorts
      this.youngShorts = 0
    }
    this.young.set(key, member)
  }
}
