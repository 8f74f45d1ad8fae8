/**
 * The most recent entries of a stream, up to a fixed capacity: what the coordinator and engines
 * keep of the messages they exchanged, for inspection. Adding is O(1) however full it is.
 *
 * @since 0.1.0
 * @internal
 */

/**
 * @internal
 */
export class RecentLog<A> {
  private readonly entries: Array<A> = []
  private next = 0
  /** How many entries were ever added. */
  total = 0

  constructor(readonly capacity: number) {}

  add(entry: A): void {
    this.total++
    if (this.capacity <= 0) return
    if (this.entries.length < this.capacity) this.entries.push(entry)
    else {
      this.entries[this.next] = entry
      this.next = (this.next + 1) % this.capacity
    }
  }

  /** The kept entries, oldest first. */
  toArray(): Array<A> {
    return this.entries.length < this.capacity || this.next === 0
      ? this.entries.slice()
      : [...this.entries.slice(this.next), ...this.entries.slice(0, this.next)]
  }
}
