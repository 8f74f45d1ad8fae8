/**
 * A transport of our own: one DEALER written over `node:net` with the protocol's ZMTP codec
 * (`Zmtp`), to a coordinator's ROUTER over `tcp://` or `ipc://` (a Unix socket, as libzmq maps
 * it; `ipc://@name` the abstract namespace). Not the default (issue 41, step a): `Transport.zmtp`.
 *
 * What it does as libzmq's DEALER does for the client:
 *
 * - **Handshake** in libzmq's order: our greeting, the peer's, our READY (`Socket-Type: DEALER`,
 *   no identity: the ROUTER names us), the peer's READY (a ROUTER), then the link is up. A peer
 *   stalled mid-handshake for {@link HANDSHAKE_MILLIS} is dropped.
 * - **Queue while down**: messages sent while no connection is up wait, and go out first when one
 *   is (the CONNECT the client sends as the link opens is one), as a ZeroMQ pipe keeps them.
 * - **Reconnection**: a dropped or refused connection is dialed again after
 *   {@link RECONNECT_MILLIS}, a fresh connection on which the coordinator does not know us yet.
 * - **Heartbeats** as the client's options ask: a PING every `heartbeatInterval`, and a connection
 *   on which nothing arrived for `heartbeatTimeout` is dropped; the peer's PINGs are answered.
 * - **Bad input** from the network (the codec's refusals): said once through `receiveFailed`, that
 *   connection dropped, and dialed again; nothing is thrown, nothing else is affected.
 * - **Writes gathered**: what is sent in one turn of the event loop goes out in one write (the
 *   socket corked until the next tick).
 *
 * Not here: CurveZMQ (refused when asked for: the zeromq.js transport does it).
 *
 * @since 0.2.0
 * @internal
 */
import { Zmtp } from "@mcore-effect/protocol"
import * as Effect from "effect/Effect"
import * as Net from "node:net"
import { clientError, InvalidArgument } from "../ClientError.ts"
import type { Events, Link, LinkConfig, Service } from "./link.ts"
import { addressProblem } from "./zeroMqAddress.ts"

/** libzmq's default reconnect interval. */
export const RECONNECT_MILLIS = 100

/** libzmq's default handshake interval: a peer that has not finished the handshake by then is dropped. */
export const HANDSHAKE_MILLIS = 30_000

const GREETING = Zmtp.greeting(false)
const READY = Zmtp.ready({ "Socket-Type": "DEALER", Identity: "" })

/** The ROUTER-compatible socket types a DEALER may talk to (RFC 28). */
const PEERS: ReadonlySet<string> = new Set(["ROUTER", "DEALER"])

/** One DEALER: its connection now (if any), what waits for one, and its timers. */
class Dealer implements Link {
  private socket: Net.Socket | undefined = undefined
  private up = false
  private closed = false
  /** Messages sent while no connection is up, in order. */
  private waiting: Array<Uint8Array> = []
  private corked = false
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined = undefined
  private heartbeatTimer: ReturnType<typeof setInterval> | undefined = undefined
  private handshakeTimer: ReturnType<typeof setTimeout> | undefined = undefined
  private lastReceived = 0
  private events!: Events
  /** Whether a connection was ever attempted and refused, for `connecting`. */
  private everConnected = false

  constructor(private readonly config: LinkConfig) {}

  start(events: Events): void {
    this.events = events
    this.dial()
  }

  send(frames: ReadonlyArray<Uint8Array>): void {
    if (this.closed) return
    const bytes = Zmtp.message(frames)
    const socket = this.socket
    if (!this.up || socket === undefined) {
      this.waiting.push(bytes)
      return
    }
    this.write(socket, bytes)
  }

  private write(socket: Net.Socket, bytes: Uint8Array): void {
    if (!this.corked) {
      this.corked = true
      socket.cork()
      process.nextTick(() => {
        this.corked = false
        socket.uncork()
      })
    }
    socket.write(bytes)
  }

  private dial(): void {
    if (this.closed) return
    this.reconnectTimer = undefined
    // The address was checked by `addressProblem`: tcp:// or ipc://, so an endpoint.
    const socket = Net.connect(Zmtp.endpointOf(this.config.address)!)
    socket.setNoDelay(true)
    this.socket = socket
    let handshook = false
    const parser = new Zmtp.Parser({
      // Twice the soft limit, as the zeromq.js transport's `maxMessageSize`: a reply a little
      // over it fails alone; a monstrous frame is never held.
      maxFrameBytes: 2 * this.config.maxFrameBytes,
      greeting: () => {
        socket.write(READY)
      },
      command: (command) => {
        if (command.name === "READY" && !handshook) {
          const name = Zmtp.socketTypeOf(command.data)
          if (name === undefined || !PEERS.has(name)) {
            this.refused(socket, `the peer is a ${name ?? "socket without a type"}, not a ROUTER`)
            return
          }
          handshook = true
          this.connected(socket)
        } else if (command.name === "PING") {
          socket.write(Zmtp.pongFor(command.data))
        }
      },
      message: (frames) => {
        if (!handshook) return this.refused(socket, "a message before the handshake ended")
        try {
          this.events.message(frames)
        } catch (cause) {
          this.events.handlerFailed(cause)
        }
      },
      refused: (refusal) => this.refused(socket, `${refusal.reason}: ${refusal.detail}`)
    })
    socket.on("connect", () => {
      this.everConnected = true
      this.events.connecting?.("connected")
      socket.write(GREETING)
      this.handshakeTimer = setTimeout(() => this.refused(socket, "the handshake did not end in time"), HANDSHAKE_MILLIS)
    })
    socket.on("data", (chunk: Buffer) => {
      this.lastReceived = performance.now()
      parser.push(chunk)
    })
    socket.on("error", (error: NodeJS.ErrnoException) => {
      if (!this.everConnected && this.events.connecting !== undefined) {
        this.events.connecting(error.code === "ECONNREFUSED" || error.code === "ENOENT" ? "refused" : "unreachable")
      }
    })
    socket.on("close", () => this.dropped(socket))
  }

  /** The handshake ended: what waited goes out first, then the link is up. */
  private connected(socket: Net.Socket): void {
    if (this.handshakeTimer !== undefined) clearTimeout(this.handshakeTimer)
    this.handshakeTimer = undefined
    const waiting = this.waiting
    this.waiting = []
    for (const bytes of waiting) this.write(socket, bytes)
    this.up = true
    this.lastReceived = performance.now()
    this.startHeartbeats(socket)
    this.events.up()
  }

  private startHeartbeats(socket: Net.Socket): void {
    const interval = this.config.heartbeatIntervalMillis
    if (!(interval > 0) || !Number.isFinite(interval)) return
    const timeout = this.config.heartbeatTimeoutMillis
    // TTL in deciseconds (RFC 37), at most what two bytes hold.
    const ttl = Math.min(0xffff, Math.ceil(timeout / 100))
    const ping = Zmtp.command("PING", Uint8Array.of(ttl >> 8, ttl & 0xff))
    this.heartbeatTimer = setInterval(() => {
      if (performance.now() - this.lastReceived > timeout) {
        socket.destroy()
        return
      }
      this.write(socket, ping)
    }, interval)
  }

  /** Bad input, or a peer that is not a ROUTER: said once, that connection dropped. */
  private refused(socket: Net.Socket, why: string): void {
    this.events.receiveFailed(new Error(`ZMTP: ${why}; the connection is dropped and dialed again`))
    socket.destroy()
  }

  private dropped(socket: Net.Socket): void {
    if (socket !== this.socket) return
    this.socket = undefined
    if (this.handshakeTimer !== undefined) clearTimeout(this.handshakeTimer)
    if (this.heartbeatTimer !== undefined) clearInterval(this.heartbeatTimer)
    this.handshakeTimer = undefined
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
    this.waiting = []
    const socket = this.socket
    if (socket === undefined) return Promise.resolve()
    if (!this.up || socket.writableLength === 0 || this.config.closeTimeoutMillis <= 0) {
      socket.destroy()
      return Promise.resolve()
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        socket.destroy()
        resolve()
      }
      const timer = setTimeout(done, this.config.closeTimeoutMillis)
      socket.end(done)
    })
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
