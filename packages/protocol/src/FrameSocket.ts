/**
 * A ZeroMQ socket's two sides as every peer of the protocol drives them: one reader loop that
 * hands each message to a handler, and one writer that sends queued messages one at a time.
 * The client, the test coordinator, the test engines, the trace proxy and the test support all
 * use these two and nothing else.
 *
 * Why one writer: zeromq.js allows a single `send` in flight per socket; a second one throws.
 * Why plain promise loops and not fibers: both sides are on the path of every message, and the
 * fiber runtime costs more per message than the work itself.
 *
 * The socket is structural ({@link Readable}, {@link Writable}): zeromq.js's sockets are both,
 * and this package does not depend on zeromq.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

/**
 * One message as frames (for a ROUTER, the peer's identity first).
 *
 * @category models
 * @since 0.1.0
 */
export type Message = ReadonlyArray<Uint8Array>

/**
 * What the reader needs of a socket (a zeromq.js socket is one).
 *
 * @category models
 * @since 0.1.0
 */
export interface Readable {
  receive(): Promise<Array<Buffer>>
  readonly closed: boolean
}

/**
 * What the writer needs of a socket (a zeromq.js socket is one).
 *
 * @category models
 * @since 0.1.0
 */
export interface Writable {
  send(message: Array<Uint8Array>): Promise<void>
}

const EMPTY: Array<never> = []

/**
 * What a socket's `send` may return once the message is already out (our ZMTP router writes it
 * at once): the writer then attaches no handler to it. Any other settled promise works too, at
 * the cost of a reaction and a microtask per message (our coordinator sends one message per
 * streamed partial).
 *
 * @example
 * ```ts
 * import { FrameSocket } from "@mcore-effect/protocol"
 *
 * const socket: FrameSocket.Writable = {
 *   send: (_message) => FrameSocket.sent
 * }
 * ```
 *
 * @category constants
 * @since 0.2.0
 */
export const sent: Promise<void> = Promise.resolve()

/**
 * Options of {@link Writer}.
 *
 * @category models
 * @since 0.1.0
 */
export interface WriterOptions {
  /**
   * The socket completes each send before `send` returns (zeromq.js with `sendTimeout: 0`, whose
   * queue is unbounded with `sendHighWaterMark: 0`): a message with nothing queued ahead of it
   * goes to the socket from {@link Writer.send} itself, with no promise loop and no await per
   * message. Measured in the side-by-side burst (20,000 in flight), this took a quarter of the
   * client's send-side CPU. Default false: every message goes through the loop.
   */
  readonly immediate?: boolean | undefined
  /**
   * With {@link immediate}: the first message sent during a turn of the event loop goes to the
   * socket at once, and those sent after it in the same turn go together, back to back, from one
   * `setImmediate` after it (in order, still one writer), rather than each from its own
   * {@link Writer.send}. Requests made one at a time so wait for no `setImmediate` hop (the
   * one-at-a-time p50 and p99 of `pnpm bench client --quick` move too much between runs on a
   * 2-core VM to show the hop's cost either way). Handing ZeroMQ its messages in bursts wakes its
   * I/O thread once per burst instead of once per message, and lets it write them with one
   * system call: a server taking requests one at a time from many HTTP connections sends in
   * bursts as a batch submitter does. The cost is one `setImmediate` hop per turn (same loop
   * iteration). Default false.
   */
  readonly coalesce?: boolean | undefined
  /**
   * With {@link coalesce}: the most messages one burst holds. Once this many have queued during
   * a turn they go to the socket at once, and the turn's later ones make up the next burst, so a
   * turn that queues thousands (a batch registered in one go) has the peer working on the first
   * while the rest are still being made, rather than sending nothing until the turn ends.
   * Default: no limit.
   */
  readonly maxBurst?: number | undefined
}

/**
 * The one writer of a socket: a FIFO drained by a single promise loop, so messages queued from
 * anywhere go out in order and never overlap. Each message may carry a `tag` (the client's
 * request id), handed back with a send failure. Queued messages are held in two parallel arrays
 * swapped out whole as the loop takes them (no node per message, no `shift`).
 *
 * @example
 * ```ts
 * import { FrameSocket } from "@mcore-effect/protocol"
 *
 * declare const socket: FrameSocket.Writable
 * const writer = new FrameSocket.Writer<number>(socket, (cause, _message, requestId) =>
 *   console.warn(`request ${requestId} was not sent: ${String(cause)}`)
 * )
 * writer.send([Uint8Array.of(0x91, 0x00)], -1)
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Writer<Tag = undefined> {
  private queued: Array<Message> = []
  private queuedTags: Array<Tag> = []
  /** The messages the loop is sending, taken from `queued` whole; `index` is the next one. */
  private batch: Array<Message> = EMPTY
  private batchTags: Array<Tag> = EMPTY
  private index = 0
  private running = false
  private paused = false
  private closed = false
  private timers: Set<ReturnType<typeof setTimeout>> | undefined = undefined
  /** Called once when the queue has gone out (see {@link Writer.whenIdle}). */
  private onIdle: Array<() => void> | undefined = undefined
  /** Messages the socket refused. */
  failed = 0
  /** The last send made by {@link Writer.sendNow} (immediate mode). */
  private lastSent: Promise<void> | undefined = undefined
  /** A burst is scheduled ({@link WriterOptions.coalesce}). */
  private scheduled = false
  /** {@link WriterOptions.maxBurst}. */
  private readonly maxBurst: number

  constructor(
    private readonly socket: Writable,
    private readonly onError: (cause: unknown, message: Message, tag: Tag) => void = () => {},
    private readonly options?: WriterOptions
  ) {
    this.maxBurst = options?.maxBurst ?? Infinity
  }

  /** Queues a message after every message queued before it. Never blocks, never throws. */
  send(message: Message, tag?: Tag): void {
    if (this.closed) return
    const options = this.options
    if (options?.immediate === true && !this.running && !this.paused) {
      if (options.coalesce === true) {
        if (!this.scheduled) {
          // The first message of a turn goes at once (no latency added when requests come one
          // at a time); the turn's later ones wait for the burst after it.
          this.scheduled = true
          setImmediate(this.sendBurst)
          if (this.queued.length === 0) return void this.sendNow(message, tag as Tag)
        }
        this.queued.push(message)
        this.queuedTags.push(tag as Tag)
        if (this.queued.length >= this.maxBurst) this.sendQueued()
        return
      }
      if (this.queued.length === 0) return void this.sendNow(message, tag as Tag)
    }
    this.queued.push(message)
    this.queuedTags.push(tag as Tag)
    if (!this.running && !this.paused) void this.drain()
  }

  /** Queues a message after `millis` (at once when 0 or less); {@link close} cancels it. */
  sendAfter(millis: number, message: Message, tag?: Tag): void {
    if (millis <= 0) return this.send(message, tag)
    const timers = this.timers ??= new Set()
    const timer = setTimeout(() => {
      timers.delete(timer)
      this.send(message, tag)
    }, millis)
    timers.add(timer)
  }

  /** Holds queued messages back until {@link resume} (a peer that hangs). */
  pause(): void {
    this.paused = true
  }

  resume(): void {
    this.paused = false
    if (!this.running && this.pending > 0) void this.drain()
  }

  /** How many messages wait to be sent. */
  get pending(): number {
    return this.queued.length + this.batch.length - this.index
  }

  /** True when nothing is queued or being sent. */
  get idle(): boolean {
    return !this.running && this.pending === 0
  }

  /** Calls `callback` once the queue has gone out to the socket (at once if it already has). */
  whenIdle(callback: () => void): void {
    if (this.idle) callback()
    else (this.onIdle ??= []).push(callback)
  }

  /**
   * Stops sending: whatever is queued or waiting in {@link sendAfter} is dropped, later sends are
   * ignored, and failures of a send already under way are not reported.
   */
  close(): void {
    this.closed = true
    if (this.timers !== undefined) for (const timer of this.timers) clearTimeout(timer)
    this.timers = undefined
    this.queued = []
    this.queuedTags = []
    this.batch = EMPTY
    this.batchTags = EMPTY
    this.index = 0
    this.onIdle = undefined
  }

  /**
   * Hands a message to a socket that completes every send before returning (see
   * {@link WriterOptions.immediate}): no loop, no await; the settled promise only reports a
   * refusal. A send that throws (the socket is busy after all) queues the message instead.
   */
  private sendNow(message: Message, tag: Tag): boolean {
    let outcome: Promise<void>
    try {
      outcome = this.socket.send(message as Array<Uint8Array>)
    } catch {
      // Busy: the socket deferred the previous send after all. The loop takes over once it is out.
      this.queued.push(message)
      this.queuedTags.push(tag)
      const previous = this.lastSent
      if (previous === undefined) {
        void this.drain()
        return false
      }
      this.running = true
      previous.then(this.resumeAfterBusy, this.resumeAfterBusy)
      return false
    }
    this.lastSent = outcome
    if (outcome === sent) return true
    outcome.then(undefined, (cause) => {
      if (this.closed) return
      this.failed++
      this.onError(cause, message, tag)
    })
    return true
  }

  /** Sends what was queued during the last turn ({@link WriterOptions.coalesce}). */
  private readonly sendBurst = (): void => {
    this.scheduled = false
    this.sendQueued()
  }

  /**
   * Sends what is queued, in order (a turn's burst, or {@link WriterOptions.maxBurst} of it); a
   * busy socket hands the rest to the loop, in order.
   */
  private sendQueued(): void {
    if (this.closed || this.paused || this.running || this.queued.length === 0) return
    const messages = this.queued
    const tags = this.queuedTags
    this.queued = []
    this.queuedTags = []
    for (let i = 0; i < messages.length; i++) {
      if (this.sendNow(messages[i]!, tags[i]!)) continue
      // `sendNow` queued message i and handed the queue to the loop: the rest go after it.
      for (let j = i + 1; j < messages.length; j++) {
        this.queued.push(messages[j]!)
        this.queuedTags.push(tags[j]!)
      }
      return
    }
    const onIdle = this.onIdle
    this.onIdle = undefined
    if (onIdle !== undefined) for (const callback of onIdle) callback()
  }

  private readonly resumeAfterBusy = (): void => {
    this.running = false
    this.lastSent = undefined
    void this.drain()
  }

  private async drain(): Promise<void> {
    this.running = true
    try {
      for (;;) {
        if (this.closed || this.paused) return
        if (this.index >= this.batch.length) {
          if (this.queued.length === 0) break
          this.batch = this.queued
          this.batchTags = this.queuedTags
          this.index = 0
          this.queued = []
          this.queuedTags = []
        }
        const i = this.index++
        const message = this.batch[i]!
        try {
          await this.socket.send(message as Array<Uint8Array>)
        } catch (cause) {
          if (this.closed) return
          this.failed++
          this.onError(cause, message, this.batchTags[i]!)
        }
      }
      this.batch = EMPTY
      this.batchTags = EMPTY
      this.index = 0
    } finally {
      this.running = false
    }
    const onIdle = this.onIdle
    this.onIdle = undefined
    if (onIdle !== undefined) for (const callback of onIdle) callback()
  }
}

/**
 * Options of {@link read}.
 *
 * @category models
 * @since 0.1.0
 */
export interface ReaderOptions {
  /** Handles one message. A throw is reported to `onHandlerError` and the loop goes on. */
  readonly onMessage: (frames: Array<Buffer>) => void
  /** A handler threw (a bug in the handler: the message is dropped). */
  readonly onHandlerError: (cause: unknown, frames: Array<Buffer>) => void
  /** A receive failed while the socket is open; the loop tries again 10 ms later. */
  readonly onReceiveError: (cause: unknown) => void
  /**
   * Checked before each receive and again before handling what was received: a promise holds
   * the loop until it settles (a peer that plays dead), `undefined` lets it go on.
   */
  readonly gate?: (() => Promise<void> | undefined) | undefined
  /** Called after each message is handled. */
  readonly afterMessage?: (() => void) | undefined
  /**
   * Messages handled between two turns given to the event loop (default: none given), so timers
   * and other sockets get a turn during a long burst.
   */
  readonly yieldEvery?: number | undefined
}

/**
 * A running reader: {@link Reader.stop} ends it at its next step (closing the socket ends a
 * receive under way); `done` resolves when the loop has ended.
 *
 * @category models
 * @since 0.1.0
 */
export interface Reader {
  readonly stop: () => void
  readonly done: Promise<void>
}

const pause = (millis: number) => new Promise<void>((resolve) => setTimeout(resolve, millis))
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * Starts the one reader of a socket: receives each message and hands it to `onMessage`, until
 * {@link Reader.stop} or the socket closes. Nothing that arrives ends the loop.
 *
 * @category constructors
 * @since 0.1.0
 */
export const read = (socket: Readable, options: ReaderOptions): Reader => {
  let stopped = false
  const yieldEvery = options.yieldEvery ?? Infinity
  const gate = options.gate
  const loop = async (): Promise<void> => {
    let handled = 0
    while (!stopped) {
      const before = gate?.()
      if (before !== undefined) await before
      if (stopped) return
      let frames: Array<Buffer>
      try {
        frames = await socket.receive()
      } catch (cause) {
        if (stopped || socket.closed) return
        options.onReceiveError(cause)
        await pause(10)
        continue
      }
      const held = gate?.()
      if (held !== undefined) await held
      if (stopped) return
      try {
        options.onMessage(frames)
      } catch (cause) {
        options.onHandlerError(cause, frames)
      }
      options.afterMessage?.()
      if (++handled % yieldEvery === 0) await nextTurn()
    }
  }
  return {
    stop: () => {
      stopped = true
    },
    done: loop()
  }
}

/**
 * {@link read} as a scoped resource: the reader starts on acquire and stops when the scope
 * closes (the socket's own release, which ends a receive under way, belongs to whoever opened
 * it).
 *
 * @category constructors
 * @since 0.1.0
 */
export const reader = (socket: Readable, options: ReaderOptions): Effect.Effect<Reader, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.sync(() => read(socket, options)), (reader) => Effect.sync(reader.stop))
