/**
 * A bounded map that forgets the least recently used entry first (a `Map`'s insertion order is
 * its recency: a hit moves the entry to the end).
 *
 * @since 0.1.0
 * @internal
 */
export class Lru<K, V> {
  private readonly entries = new Map<K, V>()

  constructor(readonly capacity: number) {}

  /** The value for `key`, now the most recently used; `undefined` when absent. */
  get(key: K): V | undefined {
    const value = this.entries.get(key)
    if (value === undefined) return undefined
    this.entries.delete(key)
    this.entries.set(key, value)
    return value
  }

  /** Stores `value`, forgetting the least recently used entry when full. */
  set(key: K, value: V): void {
    if (this.capacity <= 0) return
    this.entries.delete(key)
    this.entries.set(key, value)
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value as K)
  }

  /** How many entries it holds. */
  get size(): number {
    return this.entries.size
  }

  /** Forgets everything. */
  clear(): void {
    this.entries.clear()
  }
}
