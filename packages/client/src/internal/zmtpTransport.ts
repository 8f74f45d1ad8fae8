/**
 * A transport of our own: one DEALER written over `node:net` with the protocol's ZMTP codec
 * (`Zmtp`), to a coordinator's ROUTER over `tcp://` or `ipc://` (a Unix socket, as libzmq maps
 * it; `ipc://@name` the abstract namespace): `Transport.zmtp`, the default (`Transport.standard`)
 * for a client without CurveZMQ.
 *
 * What it does as libzmq's DEALER does for the client:
 *
 * - **Each connection** is a `ZmtpConnection.Connection` (the protocol's): the handshake in
 *   libzmq's order (`Socket-Type: DEALER`, no identity, so the ROUTER names us; the peer a ROUTER
 *   or DEALER; dropped when stalled in it for {@link HANDSHAKE_MILLIS}), writes gathered per
 *   turn, the peer's PINGs answered, bad input refused; then the link is up.
 * - **Queue while down**: messages sent while no connection is up wait, and go out first when one
 *   is (the CONNECT the client sends as the link opens is one), as a ZeroMQ pipe keeps them.
 * - **A bounded queue**: what waits for a connection and what the socket holds unwritten (a
 *   coordinator that does not read) together stay within `maxQueuedBytes`; a message that would
 *   go over fails its request (`sendFailed`, in a later turn, as a zeromq.js send settles), and
 *   nothing of it is sent. Nothing else is affected: what was queued before goes out.
 * - **Reconnection**: a dropped or refused connection is dialed again after
 *   {@link RECONNECT_MILLIS}, a fresh connection on which the coordinator does not know us yet.
 * - **Heartbeats** as the client's options ask: a PING every `heartbeatInterval`, and a connection
 *   on which nothing arrived for `heartbeatTimeout` is dropped; the peer's PINGs are answered.
 * - **Bad input** from the network: said once through `receiveFailed`, that connection dropped,
 *   and dialed again; nothing is thrown, nothing else is affected.
 *
 * Not here: CurveZMQ (refused when asked for: the zeromq.js transport does it).
 *
 * @since 0.2.0
 * @internal
 */
import { Zmtp, ZmtpConnection } from "@mcore-effect/protocol"
import * as Effect from "effect/Effect"
import * as Net from "node:net"
import { clientError, InvalidArgument } from "../ClientError.ts"
import type { Events, Link, LinkConfig, Service } from "./link.ts"
import { addressProblem } from "./zeroMqAddress.ts"

/** libzmq's default reconnect interval. */
export const RECONNECT_MILLIS = 100

/** libzmq's default handshake interval: a peer that has not finished the handshake by then is dropped. */
export const HANDSHAKE_MILLIS = 30_000


/** The ROUTER-compatible socket types a DEALER may talk to (RFC 28). */
const PEERS: ReadonlySet<string> = new Set(["ROUTER", "DEALER"])

/** One DEALER: its connection now (if any), what waits for one, and its timers. */
class Dealer implements Link {
  private connection: ZmtpConnection.Connection | undefined = undefined
  private up = false
  private closed = false
  /** Messages sent while no connection is up, in order, and their bytes. */
  private waiting: Array<Uint8Array> = []
  private waitingBytes = 0
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined = undefined
  private heartbeatTimer: ReturnType<typeof setInterval> | undefined = undefined
  private events!: Events
  /** Whether a connection was ever made, for `connecting` (only asked until one was). */
  private everConnected = false

  constructor(private readonly config: LinkConfig) {}

  start(events: Events): void {
    this.events = events
    this.dial()
  }

  send(frames: ReadonlyArray<Uint8Array>, requestId: number | undefined): void {
    if (this.closed) return
    const connection = this.connection
    const size = Zmtp.messageSize(frames)
    const up = this.up && connection !== undefined
    const queued = up ? connection.unsent : this.waitingBytes
    const limit = this.config.maxQueuedBytes
    if (limit !== undefined && queued + size > limit) {
      const cause = new Error(
        `the link holds ${queued} bytes unsent and this message has ${size} (at most ${limit}: maxQueuedBytes); ` +
          (up ? "the coordinator is not reading" : "no connection is up")
      )
      process.nextTick(() => this.events.sendFailed(requestId, cause))
      return
    }
    if (!up) {
      this.waiting.push(Zmtp.message(frames))
      this.waitingBytes += size
      return
    }
    // Encoded straight into the connection's write of this turn.
    connection.send(frames, size)
  }

  private dial(): void {
    if (this.closed) return
    this.reconnectTimer = undefined
    // The address was checked by `addressProblem`: tcp:// or ipc://, so an endpoint.
    const socket = Net.connect(Zmtp.endpointOf(this.config.address)!)
    const connection: ZmtpConnection.Connection = new ZmtpConnection.Connection(socket, {
      asServer: false,
      socketType: "DEALER",
      // No identity: the ROUTER names us, so each connection is a new peer to it.
      identity: "",
      peers: PEERS,
      // Twice the soft limit, as the zeromq.js transport's `maxMessageSize`: a reply a little
      // over it fails alone; a monstrous frame is never held.
      maxFrameBytes: 2 * this.config.maxFrameBytes,
      handshakeMillis: HANDSHAKE_MILLIS,
      ready: () => this.connected(connection),
      message: (frames) => {
        try {
          this.events.message(frames)
        } catch (cause) {
          this.events.handlerFailed(cause)
        }
      },
      refused: (why) => this.events.receiveFailed(new Error(`${why}; the connection is dropped and dialed again`))
    })
    this.connection = connection
    socket.on("connect", () => {
      this.everConnected = true
      this.events.connecting?.("connected")
      connection.start()
    })
    socket.on("error", (error: NodeJS.ErrnoException) => {
      if (!this.everConnected && this.events.connecting !== undefined) {
        this.events.connecting(error.code === "ECONNREFUSED" || error.code === "ENOENT" ? "refused" : "unreachable")
      }
    })
    socket.on("close", () => this.dropped(connection))
  }

  /** The handshake ended: what waited goes out first, then the link is up. */
  private connected(connection: ZmtpConnection.Connection): void {
    const waiting = this.waiting
    this.waiting = []
    this.waitingBytes = 0
    for (const bytes of waiting) connection.write(bytes)
    this.up = true
    this.startHeartbeats(connection)
    this.events.up()
  }

  private startHeartbeats(connection: ZmtpConnection.Connection): void {
    const interval = this.config.heartbeatIntervalMillis
    if (!(interval > 0) || !Number.isFinite(interval)) return
    const timeout = this.config.heartbeatTimeoutMillis
    // TTL in deciseconds (RFC 37), at most what two bytes hold.
    const ttl = Math.min(0xffff, Math.ceil(timeout / 100))
    const ping = Zmtp.command("PING", Uint8Array.of(ttl >> 8, ttl & 0xff))
    // Silence is counted only while this process could have read: libzmq's I/O thread reads
    // whatever the application does, but here a busy event loop (a burst of requests, or the
    // coordinator in the same process) leaves the peer's bytes unread, and it is not the peer
    // that is silent. So a tick that comes late moves the last arrival on by its lateness, and
    // a verdict of silence is checked again after the loop's next poll for I/O (a `setImmediate`)
    // before the connection is dropped. Without this, 4 runs of the crash-and-restart test side
    // by side dropped their own live connections (12 of 12).
    let lastTick = performance.now()
    this.heartbeatTimer = setInterval(() => {
      const now = performance.now()
      const late = now - lastTick - interval
      lastTick = now
      if (late > interval) connection.lastReceived = Math.min(now, connection.lastReceived + late)
      if (now - connection.lastReceived > timeout) {
        setImmediate(() => {
          if (performance.now() - connection.lastReceived > timeout) connection.socket.destroy()
        })
      }
      connection.write(ping)
    }, interval)
  }

  private dropped(connection: ZmtpConnection.Connection): void {
    if (connection !== this.connection) return
    this.connection = undefined
    if (this.heartbeatTimer !== undefined) clearInterval(this.heartbeatTimer)
    this.heartbeatTimer = undefined
    const wasUp = this.up
    this.up = false
    if (wasUp) this.events.down()
    if (!this.closed) this.reconnectTimer = setTimeout(() => this.dial(), RECONNECT_MILLIS)
  }

  /**
   * Closes: while a connection is up, what is queued on it is flushed for at most
   * `closeTimeout`; then the socket is closed, and nothing is dialed again.
   */
  close(): Promise<void> {
    this.closed = true
    if (this.reconnectTimer !== undefined) clearTimeout(this.reconnectTimer)
    if (this.heartbeatTimer !== undefined) clearInterval(this.heartbeatTimer)
    this.heartbeatTimer = undefined
    this.waiting = []
    this.waitingBytes = 0
    const connection = this.connection
    const socket = connection?.socket
    if (connection === undefined || socket === undefined || socket.closed) return Promise.resolve()
    // What this turn wrote goes to the socket first, to be flushed with the rest.
    connection.flush()
    // Settles once the socket is closed: nothing of the link is left in the process.
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve())).then(ZmtpConnection.released)
    if (!this.up || socket.writableLength === 0 || this.config.closeTimeoutMillis <= 0) {
      socket.destroy()
      return closed
    }
    const timer = setTimeout(() => socket.destroy(), this.config.closeTimeoutMillis)
    socket.end(() => {
      clearTimeout(timer)
      socket.destroy()
    })
    return closed.then(() => clearTimeout(timer))
  }
}

/**
 * The ZMTP transport.
 *
 * @since 0.2.0
 */
export const transport: Service = {
  name: "zmtp",
  addressProblem,
  open: (config: LinkConfig, attach: (link: Link) => Events) =>
    config.curve !== undefined
      ? Effect.fail(clientError(new InvalidArgument({
        name: "curve",
        why: "the zmtp transport speaks only ZMTP's NULL mechanism; use the zeromq transport for CurveZMQ"
      })))
      : Effect.acquireRelease(
        Effect.sync(() => {
          const dealer = new Dealer(config)
          dealer.start(attach(dealer))
          return dealer
        }),
        (dealer) => Effect.promise(() => dealer.close())
      )
}
