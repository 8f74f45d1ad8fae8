/**
 * A ROUTER of our own: ZMTP 3.1 over `node:net` with the {@link Zmtp} codec, the side a
 * coordinator (ours, the testkit's) binds and DEALERs connect to (issue 41, step b; not used by
 * the coordinator yet).
 *
 * - **Listens** on `tcp://host:port` (`*` for every interface, as libzmq; port 0: any free one,
 *   the address then in `Router.address`) or `ipc://path` (a Unix socket, as libzmq maps it).
 * - **Each connection** is a {@link ZmtpConnection.Connection}: the handshake in libzmq's order
 *   (`Socket-Type: ROUTER`; the peer a DEALER, REQ or ROUTER; dropped when stalled in it past
 *   `handshakeMillis`), writes gathered per turn, PINGs answered, bad input refused.
 * - **Identities** as libzmq gives them: the peer's `Identity` when it sent one that no connected
 *   peer holds, else five bytes of our own (a zero, then a counter), so a reconnecting DEALER is a
 *   new peer unless it names itself.
 * - **Routing**: a message from a peer comes as `[identity, ...frames]`; {@link send} takes the
 *   same shape and refuses, with `"unreachable"`, an identity no connected peer holds (libzmq's
 *   `EHOSTUNREACH` under `ZMQ_ROUTER_MANDATORY`), nothing written.
 * - **Bad input** from a peer: told once to `refused`, that connection closed, the others
 *   untouched; never a throw.
 *
 * @example
 * ```ts
 * import { ZmtpRouter } from "@mcore-effect/protocol"
 *
 * const router = await ZmtpRouter.listen("tcp://127.0.0.1:0", {
 *   message: ([identity, ...frames]) => { router.send([identity!, ...frames]) },
 *   refused: (why) => console.warn(why)
 * })
 * console.log(router.address) // tcp://127.0.0.1:<port>
 * ```
 *
 * @since 0.2.0
 */
import * as Net from "node:net"
import * as AddressAllowlist from "./AddressAllowlist.ts"
import * as FrameSocket from "./FrameSocket.ts"
import { Inbox, socketError } from "./internal/inbox.ts"
import * as Zmtp from "./Zmtp.ts"
import * as ZmtpConnection from "./ZmtpConnection.ts"

/**
 * What a router tells its owner.
 *
 * @since 0.2.0
 */
export interface Handlers {
  /** A message from a peer: its identity first, then its frames. */
  readonly message: (frames: Array<Buffer>) => void
  /** A peer finished its handshake. */
  readonly connected?: ((identity: Buffer) => void) | undefined
  /** A connected peer went away. */
  readonly disconnected?: ((identity: Buffer) => void) | undefined
  /** A connection was closed for bad input (said once per connection), with its peer's address (tcp). */
  readonly refused?: ((why: string, reason: ZmtpConnection.RefusalReason, address: string | undefined) => void) | undefined
}

/**
 * Options of {@link listen}.
 *
 * @since 0.2.0
 */
export interface Options {
  /** The largest frame taken from a peer. Default 256 MiB. */
  readonly maxFrameBytes?: number | undefined
  /** A peer that has not finished its handshake by then is dropped. Default 30 s (libzmq's). */
  readonly handshakeMillis?: number | undefined
  /**
   * Who may connect (tcp only): a connection from an address outside it is closed as it is
   * accepted, nothing read or sent, and refused as `not-allowed`. Default: anyone.
   */
  readonly allow?: AddressAllowlist.AddressAllowlist | undefined
}

const PEERS: ReadonlySet<string> = new Set(["DEALER", "REQ", "ROUTER"])

/** One peer's connection once its handshake ended. */
interface Peer {
  readonly identity: Buffer
  readonly connection: ZmtpConnection.Connection
}

/**
 * A listening router (see the module's documentation).
 *
 * @since 0.2.0
 */
export class Router {
  private readonly peers = new Map<string, Peer>()
  /** The connected peers by the identity buffer their messages come with (see {@link send}). */
  private readonly byBuffer = new WeakMap<Uint8Array, Peer>()
  /** Every connection open, its handshake done or not (a close ends them all). */
  private readonly sockets = new Set<Net.Socket>()
  private nextIdentity = 0x2d
  private closed = false

  /** @internal */
  constructor(
    private readonly server: Net.Server,
    /** The address peers connect to (`tcp://127.0.0.1:41234`, `ipc:///tmp/x`). */
    readonly address: string,
    private readonly handlers: Handlers,
    private readonly options: {
      readonly maxFrameBytes: number
      readonly handshakeMillis: number
      readonly allow: AddressAllowlist.AddressAllowlist | undefined
    }
  ) {
    server.on("connection", (socket) => this.accept(socket))
  }

  /** Connections closed for bad input, by reason, since the router started. */
  readonly refusals: Partial<Record<ZmtpConnection.RefusalReason, number>> = {}

  /** The peers connected now. */
  get size(): number {
    return this.peers.size
  }

  /**
   * Sends `[identity, ...frames]` to the peer holding `identity`: `"sent"`, or `"unreachable"`
   * (no connected peer holds it; nothing written). Never throws.
   */
  send(frames: ReadonlyArray<Uint8Array>): "sent" | "unreachable" {
    const identity = frames[0]
    if (identity === undefined || this.closed) return "unreachable"
    // A reply's identity is most often the very buffer the peer's messages came with: found by
    // reference, with no key string made (a partial's send was a buffer, a string and its hash).
    const peer = this.byBuffer.get(identity) ??
      this.peers.get(Buffer.from(identity.buffer, identity.byteOffset, identity.byteLength).toString("latin1"))
    if (peer === undefined) return "unreachable"
    peer.connection.send(frames, Zmtp.messageSize(frames, 1), 1)
    return "sent"
  }

  /**
   * Stops listening and closes every connection, those still in their handshake too; settles
   * once the listener and every connection are closed (nothing of the router is left in the
   * process then).
   */
  close(): Promise<void> {
    this.closed = true
    for (const socket of this.sockets) socket.destroy()
    return new Promise<void>((resolve) => this.server.close(() => resolve())).then(ZmtpConnection.released)
  }

  private identityFor(asked: Uint8Array | undefined): Buffer {
    if (asked !== undefined && asked.length > 0) {
      const named = Buffer.from(asked)
      if (!this.peers.has(named.toString("latin1"))) return named
    }
    const id = Buffer.alloc(5)
    id.writeUInt32BE(this.nextIdentity++ >>> 0, 1)
    return id
  }

  private accept(socket: Net.Socket): void {
    if (this.closed) {
      socket.destroy()
      return
    }
    socket.on("error", () => {})
    const allow = this.options.allow
    if (allow !== undefined && !AddressAllowlist.admits(allow, socket.remoteAddress)) {
      socket.destroy()
      this.refusals["not-allowed"] = (this.refusals["not-allowed"] ?? 0) + 1
      const from = socket.remoteAddress
      this.handlers.refused?.(`a connection from ${from ?? "an unknown address"} is not in the allowlist`, "not-allowed", from)
      return
    }
    this.sockets.add(socket)
    let peer: Peer | undefined
    const connection: ZmtpConnection.Connection = new ZmtpConnection.Connection(socket, {
      asServer: true,
      socketType: "ROUTER",
      peers: PEERS,
      maxFrameBytes: this.options.maxFrameBytes,
      handshakeMillis: this.options.handshakeMillis,
      ready: (properties) => {
        peer = { identity: this.identityFor(properties.get("Identity")), connection }
        this.peers.set(peer.identity.toString("latin1"), peer)
        this.byBuffer.set(peer.identity, peer)
        this.handlers.connected?.(peer.identity)
      },
      message: (frames) => {
        frames.unshift(peer!.identity)
        this.handlers.message(frames)
      },
      refused: (why, reason) => {
        this.refusals[reason] = (this.refusals[reason] ?? 0) + 1
        this.handlers.refused?.(why, reason, socket.remoteAddress)
      }
    })
    socket.on("close", () => {
      this.sockets.delete(socket)
      if (peer === undefined) return
      const key = peer.identity.toString("latin1")
      if (this.peers.get(key) === peer) this.peers.delete(key)
      this.byBuffer.delete(peer.identity)
      this.handlers.disconnected?.(peer.identity)
    })
    connection.start()
  }
}

/**
 * A router listening on `address` (`tcp://host:port`, port 0 for any free one, or
 * `ipc://path`); fails when the address cannot be listened on.
 *
 * @since 0.2.0
 */
export const listen = (address: string, handlers: Handlers, options?: Options): Promise<Router> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    const resolved = {
      maxFrameBytes: options?.maxFrameBytes ?? 256 * 1024 * 1024,
      handshakeMillis: options?.handshakeMillis ?? 30_000,
      allow: options?.allow
    }
    server.once("error", reject)
    const listening = () => {
      server.off("error", reject)
      const bound = server.address()
      const actual = typeof bound === "string" || bound === null
        ? address
        : `tcp://${bound.family === "IPv6" ? `[${bound.address}]` : bound.address}:${bound.port}`
      resolve(new Router(server, actual, handlers, resolved))
    }
    const endpoint = Zmtp.endpointOf(address)
    if (endpoint === undefined) {
      reject(new Error(`only tcp://host:port and ipc://path are supported, got ${JSON.stringify(address)}`))
      return
    }
    if (resolved.allow !== undefined && !("host" in endpoint)) {
      reject(new Error(`an address allowlist applies to tcp:// only (an ipc:// socket has no peer address), got ${address}`))
      return
    }
    // `tcp://*:port`, ZeroMQ's every interface, as libzmq binds it (IPv4).
    server.listen("host" in endpoint && endpoint.host === "*" ? { ...endpoint, host: "0.0.0.0" } : endpoint, listening)
  })

/**
 * A router as a socket `FrameSocket` drives (as a zeromq.js ROUTER is one): `receive()` the next
 * `[identity, ...frames]`, `send` that fails with `EHOSTUNREACH` for an identity no connected
 * peer holds (the ZeroMQ ROUTER's `mandatory`), `close`. Unlike libzmq's, it also says when a
 * connected peer's connection closed: `receive()` gives `[identity]` alone (no frames: no ZMTP
 * message is that), after everything that peer sent.
 *
 * @since 0.2.0
 */
export interface FrameRouter extends FrameSocket.Readable, FrameSocket.Writable {
  /** The address peers connect to. */
  readonly address: string
  /**
   * Stops listening and closes every connection; a pending `receive` rejects. Settles once
   * nothing of the router is left open.
   */
  close(): Promise<void>
}

/**
 * {@link listen}, its messages taken with `receive()` rather than handed to a callback.
 *
 * @since 0.2.0
 */
export const listenFrames = async (
  address: string,
  handlers: Omit<Handlers, "message">,
  options?: Options
): Promise<FrameRouter> => {
  const inbox = new Inbox()
  const router = await listen(address, {
    ...handlers,
    message: (frames) => inbox.push(frames),
    disconnected: (identity) => {
      handlers.disconnected?.(identity)
      inbox.push([identity])
    }
  }, options)
  return {
    address: router.address,
    get closed() {
      return inbox.closed
    },
    receive: () => inbox.receive(),
    send: (message) => {
      if (inbox.closed) return Promise.reject(socketError("EBADF", "Socket is closed"))
      return router.send(message) === "sent" ? FrameSocket.sent : Promise.reject(socketError("EHOSTUNREACH", "Host unreachable"))
    },
    close: () => {
      inbox.close()
      return router.close()
    }
  }
}
