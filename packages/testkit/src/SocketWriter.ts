/**
 * The one writer of a socket. zeromq.js allows a single `send` in flight per socket, so every
 * outgoing message goes into this queue and one loop sends them in order.
 *
 * @since 0.1.0
 * @internal
 */
import type * as Zmq from "zeromq"

/** A message as frames (for a ROUTER, the peer's identity first). */
export type Outgoing = ReadonlyArray<Uint8Array>

/**
 * @internal
 */
export class SocketWriter {
  private queue: Array<Outgoing> = []
  private head = 0
  private running = false
  private closed = false
  private paused = false
  private readonly timers = new Set<ReturnType<typeof setTimeout>>()
  /** Messages that could not be sent (peer unreachable, socket closed). */
  failed = 0

  constructor(
    private readonly socket: Zmq.Writable<Array<Uint8Array>>,
    private readonly onError: (error: unknown, message: Outgoing) => void = () => {}
  ) {}

  /** Queues a message; it is sent after every message queued before it. */
  send(message: Outgoing): void {
    if (this.closed) return
    this.queue.push(message)
    if (!this.running && !this.paused) void this.drain()
  }

  /** Queues a message after `millis` (at once when 0 or less); {@link close} cancels it. */
  sendAfter(millis: number, message: Outgoing): void {
    if (millis <= 0) return this.send(message)
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      this.send(message)
    }, millis)
    this.timers.add(timer)
  }

  /** Holds queued messages back until {@link resume} (a hung peer). */
  pause(): void {
    this.paused = true
  }

  resume(): void {
    this.paused = false
    if (!this.running && this.head < this.queue.length) void this.drain()
  }

  /** Drops whatever is queued or waiting in {@link sendAfter}; later sends are ignored. */
  close(): void {
    this.closed = true
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.clear()
    this.queue = []
    this.head = 0
  }

  /** How many messages wait to be sent. */
  get pending(): number {
    return this.queue.length - this.head
  }

  private async drain(): Promise<void> {
    this.running = true
    try {
      while (!this.closed && !this.paused && this.head < this.queue.length) {
        const message = this.queue[this.head]!
        this.queue[this.head] = undefined as unknown as Outgoing
        this.head++
        // Compact now and then, so a long burst does not keep a huge sparse array alive.
        if (this.head > 4096 && this.head * 2 > this.queue.length) {
          this.queue = this.queue.slice(this.head)
          this.head = 0
        }
        try {
          await this.socket.send(message as Array<Uint8Array>)
        } catch (error) {
          if (this.closed) return
          this.failed++
          this.onError(error, message)
        }
      }
      if (this.head === this.queue.length) {
        this.queue = []
        this.head = 0
      }
    } finally {
      this.running = false
    }
  }
}
