/**
 * What a transport gives the connection and reports to it (the contract of `Transport`), and
 * the machinery every transport over a socket shares: the one writer, the one reader, and the
 * bounded flush when the scope closes. A transport differs only in how it opens its socket and
 * where it hears of connections coming and going (ZeroMQ: the socket's event observer;
 * in-memory: `MemorySocket.Dealer.onLink`).
 *
 * @since 0.2.0
 * @internal
 */
import { FrameSocket } from "@mcore-effect/protocol"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import type { ClientError, ConnectSeen } from "../ClientError.ts"
import * as Writer from "./writer.ts"

/**
 * The sending side of a link: the connection's one writer. Messages go out in the order they are
 * queued, never two sends in flight at once (zeromq.js refuses a second), each tagged with the
 * request it carries (`undefined`: a CONNECT, a signal, an abort).
 *
 * @since 0.2.0
 */
export interface Link {
  /** Queues a message after every message queued before it. Never blocks, never throws. */
  send(frames: ReadonlyArray<Uint8Array>, requestId: number | undefined): void
}

/**
 * What a transport reports to the connection on top of it. Nothing is reported from within
 * `open` itself: every event comes from a later turn of the event loop (a socket's observer, a
 * receive, a settled send).
 *
 * @since 0.2.0
 */
export interface Events {
  /** A message from the coordinator, its frames. */
  readonly message: (frames: Array<Buffer>) => void
  /**
   * A connection came up (ZeroMQ: its ZMTP handshake is done). After the first, each is a new
   * connection on which the coordinator does not know this client yet.
   */
  readonly up: () => void
  /** The connection dropped; the transport reconnects by itself. */
  readonly down: () => void
  /**
   * What connecting has seen so far, for a `ConnectTimeout` to say (a connection refused, a
   * host that does not resolve). `undefined`: not wanted (no connect timeout).
   */
  readonly connecting?: ((seen: ConnectSeen) => void) | undefined
  /** The transport refused a message, tagged with its request id. */
  readonly sendFailed: (requestId: number | undefined, cause: unknown) => void
  /** `message` threw (a bug: the message is dropped and reading goes on). */
  readonly handlerFailed: (cause: unknown) => void
  /** A receive failed while the link is open (it is tried again). */
  readonly receiveFailed: (cause: unknown) => void
}

/**
 * A transport: opens one link to the coordinator at `config.address`, owned by the current scope
 * (closing it flushes what is queued, bounded by `closeTimeout`, and closes the link). `attach`
 * is called once, synchronously, with the link's writer, before the link connects: it builds the
 * connection on top of the link and returns what the link reports to. Opening fails with
 * `InvalidAddress` where the transport refuses the address.
 *
 * @since 0.2.0
 */
export interface Service {
  /** The transport's name, for messages (`zeromq`, `memory`). */
  readonly name: string
  /** Why the transport cannot connect to `address`, or `undefined` when it can. */
  readonly addressProblem: (address: string) => string | undefined
  readonly open: (
    config: LinkConfig,
    attach: (link: Link) => Events
  ) => Effect.Effect<Link, ClientError, Scope.Scope>
}

/**
 * What a link is opened with: the client's resolved options it reads.
 *
 * @since 0.2.0
 */
export interface LinkConfig {
  readonly address: string
  readonly heartbeatIntervalMillis: number
  readonly heartbeatTimeoutMillis: number
  readonly maxFrameBytes: number
  /** The most bytes held unsent (see `ClientConfig`'s `maxQueuedBytes`); unbounded when absent. */
  readonly maxQueuedBytes?: number | undefined
  readonly closeTimeoutMillis: number
  readonly curve?: {
    readonly serverKey: string
    readonly publicKey?: string | undefined
    readonly secretKey?: string | undefined
  } | undefined
}

/**
 * Whether the link is up, as the transport sees it: up from its connection events and from any
 * message received (the observer's events come on a path of their own and may trail the
 * messages), down from a drop; and what to call if it drops during the closing flush.
 *
 * @since 0.2.0
 */
export class LinkState implements Writer.Link {
  up = false
  private onDropped: (() => void) | undefined = undefined

  readonly onDown = (callback: (() => void) | undefined): void => {
    this.onDropped = callback
  }

  /**
   * The connection dropped: a flush under way stops waiting (and closes the socket as it would
   * have while the link was up), then the link is down.
   */
  dropped(): void {
    this.onDropped?.()
    this.up = false
  }
}

/**
 * A socket a link runs over: read by the one reader, written by the one writer, closed after
 * the flush (with `linger`, what ZeroMQ may still write after the close).
 *
 * @since 0.2.0
 */
export interface Socket extends FrameSocket.Readable, FrameSocket.Writable {
  linger: number
  close(): void
}

/**
 * A link over a socket: `connect` opens the socket (observing it and connecting it, or failing
 * with `InvalidAddress` having closed it) and reports its connection events to `events` and to
 * the link's state. The writer is made before `attach`, the reader started after
 * the connect. Released in this order: the reader stops, then the writer flushes (bounded by
 * `closeTimeoutMillis` while the link is up, at once while it is down) and the socket closes.
 *
 * @since 0.2.0
 */
export const overSocket = <S extends Socket>(
  open: () => S,
  connect: (socket: S, state: LinkState, events: Events) => Result.Result<S, ClientError>,
  attach: (link: Link) => Events,
  closeTimeoutMillis: number
): Effect.Effect<Link, ClientError, Scope.Scope> =>
  Effect.map(
    Effect.acquireRelease(
      Effect.suspend(() => {
        const socket = open()
        const state = new LinkState()
        // Set before anything can fail: a send settles in a later turn.
        let events!: Events
        const writer = Writer.make(socket, (requestId, cause) => events.sendFailed(requestId, cause))
        events = attach(writer)
        const connected = connect(socket, state, events)
        if (Result.isFailure(connected)) return Effect.fail(connected.failure)
        const reader = FrameSocket.read(socket, {
          onMessage: (frames) => {
            state.up = true
            events.message(frames)
          },
          onHandlerError: events.handlerFailed,
          onReceiveError: events.receiveFailed
        })
        return Effect.succeed({ socket, writer, reader, state })
      }),
      ({ reader, socket, state, writer }) =>
        Effect.promise(() => {
          reader.stop()
          return Writer.closeAfterFlush(socket, writer, state, closeTimeoutMillis)
        })
    ),
    ({ writer }) => writer
  )
