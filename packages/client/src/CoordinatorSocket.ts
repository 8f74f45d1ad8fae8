/**
 * The client's one ZeroMQ DEALER to the coordinator's ROUTER, as a scoped resource: opened with
 * unbounded high-water marks and ZeroMQ heartbeats, connected on acquire, flushed and closed on
 * release. Every send goes through its single writer, because zeromq.js allows one send in flight
 * per socket; the connection's ups and downs are reported from the socket's event observer.
 *
 * Closing flushes: a fire-and-forget message (a control signal, an abort) sent just before the
 * scope closes still reaches a connected coordinator. The writer finishes its queue and ZeroMQ
 * keeps writing its own (the socket's linger) for at most `closeTimeoutMillis` in all; while the
 * coordinator is not connected nothing waits and whatever is queued is dropped.
 *
 * The writer and the observer are plain callbacks and promise loops, not fibers: they are on the
 * path of every request, and the fiber runtime costs more per message than the work itself.
 *
 * @since 0.1.0
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Zmq from "zeromq"
import type { CurveOptions } from "./ClientConfig.ts"
import { type ClientError, clientError, InvalidAddress } from "./ClientError.ts"

/**
 * What the socket tells its owner about the connection.
 *
 * @since 0.1.0
 */
export interface ConnectionEvents {
  /** The ZMTP handshake with the coordinator completed (first connection or a reconnection). */
  readonly onUp: () => void
  /** The connection dropped: closed by the peer, or no heartbeat answer within the timeout. */
  readonly onDown: () => void
  /** ZeroMQ refused a message; `requestId` is `-1` for messages that are not a request's. */
  readonly onSendError: (requestId: number, cause: unknown) => void
}

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 */
export interface Options {
  readonly address: string
  readonly heartbeatIntervalMillis: number
  readonly heartbeatTimeoutMillis: number
  /** ZeroMQ drops the connection on a frame longer than this (bounds what one frame can allocate). */
  readonly maxMessageBytes: number
  readonly curve: CurveOptions | undefined
  /** The most closing may spend delivering what is still queued, while the coordinator is connected. */
  readonly closeTimeoutMillis: number
  readonly events: ConnectionEvents
}

/**
 * An open DEALER and its writer.
 *
 * @since 0.1.0
 */
export interface CoordinatorSocket {
  readonly address: string
  /**
   * Queues a message for the writer. Never blocks and never throws: a failure is reported to
   * `onSendError` with the `requestId` given here (`-1` for none).
   */
  readonly send: (frames: ReadonlyArray<Uint8Array>, requestId: number) => void
  /** The next message; rejects once the socket is closed. One call at a time (the listener's). */
  readonly receive: () => Promise<Array<Buffer>>
  /** True once the socket is closed. */
  readonly isClosed: () => boolean
}

/**
 * The one writer: a FIFO drained by a single promise loop, so sends from any number of fibers go
 * out in the order they were queued and never overlap. Queued messages are held in two parallel
 * arrays swapped out whole (no per-message node, no `shift`).
 */
class Writer {
  private frames: Array<ReadonlyArray<Uint8Array>> = []
  private ids: Array<number> = []
  private running = false
  private closed = false
  /** Called once when the queue has gone out (see {@link Writer.whenIdle}). */
  private onIdle: (() => void) | undefined = undefined

  constructor(
    private readonly socket: Zmq.Dealer,
    private readonly onError: (requestId: number, cause: unknown) => void
  ) {}

  send(frames: ReadonlyArray<Uint8Array>, requestId: number): void {
    if (this.closed) return
    this.frames.push(frames)
    this.ids.push(requestId)
    if (!this.running) {
      this.running = true
      void this.drain()
    }
  }

  /** True when nothing is queued or being sent. */
  get idle(): boolean {
    return !this.running
  }

  /** Calls `callback` once the queue has gone out to ZeroMQ (at once if it already has). */
  whenIdle(callback: () => void): void {
    if (this.running) this.onIdle = callback
    else callback()
  }

  /**
   * Stops sending: whatever is still queued is dropped, not sent to a closed socket (its requests
   * stay pending, to fail with the client's own error when it closes).
   */
  close(): void {
    this.closed = true
    this.frames = []
    this.ids = []
    this.onIdle = undefined
  }

  private async drain(): Promise<void> {
    while (this.frames.length > 0) {
      const frames = this.frames
      const ids = this.ids
      this.frames = []
      this.ids = []
      for (let i = 0; i < frames.length && !this.closed; i++) {
        try {
          await this.socket.send(frames[i] as Array<Uint8Array>)
        } catch (cause) {
          if (!this.closed) this.onError(ids[i]!, cause)
        }
      }
    }
    this.running = false
    const onIdle = this.onIdle
    this.onIdle = undefined
    onIdle?.()
  }
}

/**
 * Whether the coordinator is connected, and whom to tell when it drops. Up from the observer's
 * `handshake` event or from any message received, down from its `disconnect` event. A message
 * counts because the observer's events come in on a path of their own and may trail the
 * messages: a client can have its CONNECT_ACK, send a signal and close before `handshake` is seen.
 */
interface Link {
  up: boolean
  onDown: (() => void) | undefined
}

/**
 * Closes the socket after a bounded flush. While the coordinator is connected, the writer gets
 * until the deadline to hand its queue to ZeroMQ, and ZeroMQ gets what is left of it (as the
 * linger) to write its own queue after the close: `close()` itself returns at once, ZeroMQ's I/O
 * thread delivers in the background, and a process exiting meanwhile waits for it at most that
 * long (zeromq.js terminates its context at exit, which waits out lingering sockets). While it is
 * not connected, nothing could be delivered: the socket closes at once, with no linger, and what
 * is queued is dropped. Resolves once the socket is closed; never rejects.
 */
const flushAndClose = (dealer: Zmq.Dealer, writer: Writer, link: Link, boundMillis: number): Promise<void> =>
  new Promise((resolve) => {
    const deadline = performance.now() + boundMillis
    let timer: ReturnType<typeof setTimeout> | undefined
    let done = false
    const close = () => {
      if (done) return
      done = true
      if (timer !== undefined) clearTimeout(timer)
      link.onDown = undefined
      writer.close()
      try {
        // Set last, from the remaining time: ZeroMQ reads the linger when the socket closes.
        dealer.linger = link.up ? Math.max(0, Math.ceil(deadline - performance.now())) : 0
      } finally {
        // Closing the socket also closes its event observer and ends a pending receive.
        dealer.close()
        resolve()
      }
    }
    if (!link.up || writer.idle || boundMillis <= 0) return close()
    timer = setTimeout(close, boundMillis)
    link.onDown = close
    writer.whenIdle(close)
  })

/** The DEALER's CurveZMQ options: the server's key, and the client's key pair (made when not given). */
const curveOptions = (curve: CurveOptions | undefined) => {
  if (curve === undefined) return {}
  const pair = curve.publicKey !== undefined && curve.secretKey !== undefined
    ? { publicKey: curve.publicKey, secretKey: curve.secretKey }
    : Zmq.curveKeyPair()
  return { curveServerKey: curve.serverKey, curvePublicKey: pair.publicKey, curveSecretKey: pair.secretKey }
}

/**
 * Opens the DEALER, connects it, and closes it when the scope closes. Connecting does not wait
 * for the coordinator: ZeroMQ connects in the background, and messages sent before the
 * connection is up are queued (the handshake's timeout is the caller's). An address ZeroMQ
 * refuses fails with `InvalidAddress`.
 *
 * @since 0.1.0
 */
export const make = (options: Options): Effect.Effect<CoordinatorSocket, ClientError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const dealer = new Zmq.Dealer({
        // Unbounded, as in the reference: a burst of submissions never blocks the writer.
        sendHighWaterMark: 0,
        receiveHighWaterMark: 0,
        // No linger until the release sets one: a socket closed any other way (a refused
        // address, the process's own teardown) keeps nothing queued and nothing alive.
        linger: 0,
        heartbeatInterval: options.heartbeatIntervalMillis,
        heartbeatTimeout: options.heartbeatTimeoutMillis,
        // Asks the coordinator's side to drop us too if our heartbeats stop.
        heartbeatTimeToLive: options.heartbeatTimeoutMillis,
        maxMessageSize: options.maxMessageBytes,
        ...curveOptions(options.curve)
      })
      try {
        dealer.connect(options.address)
      } catch (cause) {
        dealer.close()
        const why = cause instanceof Error ? cause.message : String(cause)
        return Effect.fail(clientError(new InvalidAddress({ address: options.address, why })))
      }
      const { events } = options
      const link: Link = { up: false, onDown: undefined }
      dealer.events.on("handshake", () => {
        link.up = true
        events.onUp()
      })
      dealer.events.on("disconnect", () => {
        link.up = false
        link.onDown?.()
        events.onDown()
        // ZeroMQ reconnects by itself after a connection error or a heartbeat timeout, but not
        // after a protocol error (a frame over `maxMessageSize`): a fresh connect covers both.
        if (dealer.closed) return
        dealer.disconnect(options.address)
        dealer.connect(options.address)
      })
      return Effect.succeed({ dealer, link, writer: new Writer(dealer, events.onSendError) })
    }),
    ({ dealer, link, writer }) =>
      Effect.promise(() =>
        flushAndClose(dealer, writer, link, options.closeTimeoutMillis)
      )
  ).pipe(Effect.map(({ dealer, link, writer }): CoordinatorSocket => {
    const up = (frames: Array<Buffer>): Array<Buffer> => {
      link.up = true
      return frames
    }
    return {
      address: options.address,
      send: (frames, requestId) => writer.send(frames, requestId),
      // Only while the link is not known to be up: no extra promise per message otherwise.
      receive: () => link.up ? dealer.receive() : dealer.receive().then(up),
      isClosed: () => dealer.closed
    }
  }))
