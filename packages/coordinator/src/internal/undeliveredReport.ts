/**
 * Messages the coordinator could not deliver, counted per peer over a window and then
 * logged as one line per peer: a client that went away leaves every reply to it undeliverable (a
 * thousand after a batch), which would otherwise be a thousand lines.
 *
 * @since 0.1.0
 * @internal
 */
import type { Log } from "./coordinatorConfig.ts"

/** @internal */
export class UndeliveredReport {
  private readonly byPeer = new Map<string, { readonly peer: string; count: number; readonly error: string }>()
  private timer: ReturnType<typeof setTimeout> | undefined = undefined

  constructor(private readonly log: Log, private readonly windowMillis: number) {}

  /** Counts one message to the peer with identity `key` (shown as `peer`); the first starts the window. */
  add(key: string, peer: string, error: unknown): void {
    const known = this.byPeer.get(key)
    if (known !== undefined) {
      known.count++
      return
    }
    this.byPeer.set(key, { peer, count: 1, error: String(error) })
    this.timer ??= setTimeout(() => this.flush(), this.windowMillis).unref()
  }

  /** Logs what was counted since the last report, one line per peer, and starts over. */
  flush(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    for (const { count, error, peer } of this.byPeer.values()) {
      this.log("Warn", `coordinator: could not deliver ${count} message(s) to ${peer}: ${error}`)
    }
    this.byPeer.clear()
  }
}
