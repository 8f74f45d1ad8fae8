/**
 * The coordinator's loop around its one socket: the path its messages to clients take, its
 * reading loop, and the listeners told after every message. Plain here, a message straight to
 * the writer; the testkit's test coordinator gives its own, through the faults a test switches
 * on (dropped, duplicated, reordered, delayed replies; a hung reader).
 *
 * @since 0.2.0
 * @internal
 */
import { FrameSocket } from "@mcore-effect/protocol"

/** Messages handled between two yields to the event loop, so timers and other sockets get a turn. */
const YIELD_EVERY = 512

/** Which request a message answers: the client (its identity key) and the client's own id. */
export interface Addressee {
  readonly clientKey: string
  readonly clientRequestId: number
}

/** The way to clients: final replies and partials, identity first. */
export interface ClientOutbox {
  send(kind: "reply" | "partial", request: Addressee, message: FrameSocket.Message): void
  /** Forgets whatever is held back (the coordinator closed). */
  clear(): void
}

/** What the loop does with what its socket delivers, and with what goes wrong there. */
export interface Handlers {
  readonly onMessage: (frames: Array<Buffer>) => void
  /** A handler threw (a bug: the message is dropped, the loop goes on). */
  readonly onHandlerError: (error: unknown) => void
  readonly onReceiveError: (error: unknown) => void
}

/** @internal */
export interface Peer {
  readonly toClients: ClientOutbox
  /** Starts the socket's one reader; listeners are told after each message. */
  read(socket: FrameSocket.Readable, handlers: Handlers): FrameSocket.Reader
  /** Calls `listener` after every handled message until the returned function is called. */
  onChange(listener: () => void): () => void
  notify(): void
  /** The coordinator closed. */
  closed(): void
}

/** Makes the peer around the coordinator's writer. */
export type MakePeer = (writer: FrameSocket.Writer<any>) => Peer

/** Listeners told after each message, for a peer of any kind. */
export class Listeners {
  private readonly listeners = new Set<() => void>()

  add(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  notify(): void {
    for (const listener of this.listeners) listener()
  }
}

/**
 * The plain peer: replies and partials go to the writer as they come, the reader is never held.
 *
 * @internal
 */
export const plain: MakePeer = (writer) => {
  const listeners = new Listeners()
  const notify = () => listeners.notify()
  return {
    toClients: {
      send: (_kind, _request, message) => writer.send(message),
      clear: () => {}
    },
    read: (socket, handlers) =>
      FrameSocket.read(socket, {
        onMessage: handlers.onMessage,
        onHandlerError: handlers.onHandlerError,
        onReceiveError: handlers.onReceiveError,
        afterMessage: notify,
        yieldEvery: YIELD_EVERY
      }),
    onChange: (listener) => listeners.add(listener),
    notify,
    closed: () => {}
  }
}
