/**
 * The client's one ZeroMQ DEALER to the coordinator's ROUTER, as a scoped resource: opened with
 * unbounded high-water marks, no linger and ZeroMQ heartbeats, connected on acquire, closed on
 * release. Every send goes through its single writer, because zeromq.js allows one send in flight
 * per socket; the connection's ups and downs are reported from the socket's event observer.
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

  constructor(
    private readonly socket: Zmq.Dealer,
    private readonly onError: (requestId: number, cause: unknown) => void
  ) {}

  send(frames: ReadonlyArray<Uint8Array>, requestId: number): void {
    this.frames.push(frames)
    this.ids.push(requestId)
    if (!this.running) {
      this.running = true
      void this.drain()
    }
  }

  private async drain(): Promise<void> {
    while (this.frames.length > 0) {
      const frames = this.frames
      const ids = this.ids
      this.frames = []
      this.ids = []
      for (let i = 0; i < frames.length; i++) {
        try {
          await this.socket.send(frames[i] as Array<Uint8Array>)
        } catch (cause) {
          this.onError(ids[i]!, cause)
        }
      }
    }
    this.running = false
  }
}

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
        // Nothing queued may keep the process alive after close.
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
      dealer.events.on("handshake", () => events.onUp())
      dealer.events.on("disconnect", () => {
        events.onDown()
        // ZeroMQ reconnects by itself after a connection error or a heartbeat timeout, but not
        // after a protocol error (a frame over `maxMessageSize`): a fresh connect covers both.
        if (dealer.closed) return
        dealer.disconnect(options.address)
        dealer.connect(options.address)
      })
      return Effect.succeed(dealer)
    }),
    (dealer) =>
      Effect.sync(() => {
        // Closing the socket also closes its event observer and ends a pending receive.
        dealer.close()
      })
  ).pipe(Effect.map((dealer): CoordinatorSocket => {
    const writer = new Writer(dealer, options.events.onSendError)
    return {
      address: options.address,
      send: (frames, requestId) => writer.send(frames, requestId),
      receive: () => dealer.receive(),
      isClosed: () => dealer.closed
    }
  }))
