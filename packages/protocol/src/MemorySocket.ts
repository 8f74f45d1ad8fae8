/**
 * In-memory sockets: a ROUTER-like endpoint and DEALER-like peers in one process, for a client
 * and a test coordinator (and its engines) to meet without ZeroMQ. They are the protocol's
 * sockets as {@link FrameSocket} drives them ({@link FrameSocket.Readable},
 * {@link FrameSocket.Writable}), with the ZeroMQ behaviour the peers rely on:
 *
 * - a {@link Router} receives each message with the sender's identity first, and routes what it
 *   sends by that identity; a send to a peer it does not have fails with `EHOSTUNREACH`, as a
 *   ROUTER with `mandatory` does;
 * - a {@link Dealer} connects to an address whether or not anything is bound there yet, queues
 *   what it sends until it is connected, and reconnects by itself when a router is bound there
 *   again (after a crash or a restart); what was queued for a connection that dropped is lost with
 *   it;
 * - a connection is made in a turn of its own (after `connect`, or after `bind` for dealers
 *   waiting), and both sides hear of it ({@link Router.onPeer}, {@link Dealer.onLink}) before any
 *   message on it arrives, as ZMTP's handshake comes before them; a connection's end is heard in a
 *   later turn than what caused it (a close);
 * - frames are copied on send (ZeroMQ copies them too: a sender may reuse its buffers) and
 *   received as `Buffer`s.
 *
 * Sending is synchronous (the message is in the peer's inbox when `send` returns), so at most one
 * send is ever in flight, and a connected dealer has nothing left to flush when it closes. What is
 * not modelled: heartbeats, high-water marks, CurveZMQ, linger (nothing is ever held back).
 *
 * @example
 * ```ts
 * import { MemorySocket } from "@mcore-effect/protocol"
 *
 * const network = new MemorySocket.Network()
 * const router = network.bind("inproc://coordinator")
 * const dealer = network.connect("inproc://coordinator")
 * void dealer.send([Uint8Array.of(0x91, 0x00)])
 * void router.receive().then(([identity, ...frames]) => router.send([identity!, ...frames]))
 * ```
 *
 * @since 0.2.0
 */
import { Inbox, socketError } from "./internal/inbox.ts"

/**
 * What a side hears of a connection: it came up, or went down.
 *
 * @since 0.2.0
 */
export type LinkEvent = "up" | "down"

const later = (f: () => void): void => void setImmediate(f)

/** Frames as received: copies, as `Buffer`s. */
const copy = (message: ReadonlyArray<Uint8Array>): Array<Buffer> => message.map((frame) => Buffer.from(frame))

/**
 * Addresses and what is bound at them: where routers bind and dealers connect. One per test (or
 * per process); nothing is shared between networks.
 *
 * @since 0.2.0
 */
export class Network {
  private readonly routers = new Map<string, Router>()
  /** Dealers connected to each address, attached or waiting for a router to be bound there. */
  private readonly dealers = new Map<string, Set<Dealer>>()
  private nextRouter = 0

  /**
   * Binds a router at `address` (any string; `inproc://name` by convention, and one of its own
   * when left out). Throws `EADDRINUSE` when a router is bound there already. Dealers connected
   * to the address connect to it.
   */
  bind(address?: string | undefined): Router {
    const at = address ?? `inproc://router-${this.nextRouter++}`
    if (this.routers.has(at)) throw socketError("EADDRINUSE", `Address already in use: ${at}`)
    const router = new Router(this, at)
    this.routers.set(at, router)
    for (const dealer of this.dealers.get(at) ?? []) later(() => dealer.attach())
    return router
  }

  /** A dealer connecting to `address` (now if a router is bound there, else once one is). */
  connect(address: string, options?: { readonly routingId?: string | undefined }): Dealer {
    const dealer = new Dealer(this, address, options?.routingId)
    let at = this.dealers.get(address)
    if (at === undefined) this.dealers.set(address, at = new Set())
    at.add(dealer)
    later(() => dealer.attach())
    return dealer
  }

  /** The router bound at `address` now. */
  routerAt(address: string): Router | undefined {
    return this.routers.get(address)
  }

  /** @internal */
  unbind(router: Router): void {
    if (this.routers.get(router.address) === router) this.routers.delete(router.address)
  }

  /** @internal */
  forget(dealer: Dealer): void {
    this.dealers.get(dealer.address)?.delete(dealer)
  }
}

let nextIdentity = 0

/**
 * The ROUTER-like side: every message received starts with the sending dealer's identity, and
 * every message sent starts with the identity of the dealer it goes to.
 *
 * @since 0.2.0
 */
export class Router {
  private readonly inbox = new Inbox()
  private readonly peers = new Map<string, Dealer>()
  private readonly listeners = new Set<(event: LinkEvent, identity: Buffer) => void>()

  /** @internal */
  constructor(private readonly network: Network, readonly address: string) {}

  get closed(): boolean {
    return this.inbox.closed
  }

  /** The next message: the sender's identity, then its frames. Rejects once closed. */
  receive(): Promise<Array<Buffer>> {
    return this.inbox.receive()
  }

  /** Routes `[identity, ...frames]` to that dealer; `EHOSTUNREACH` when it is not connected. */
  send(message: Array<Uint8Array>): Promise<void> {
    if (this.closed) return Promise.reject(socketError("EBADF", "Socket is closed"))
    const identity = message[0]
    const peer = identity === undefined ? undefined : this.peers.get(Buffer.from(identity).toString("latin1"))
    if (peer === undefined) return Promise.reject(socketError("EHOSTUNREACH", "Host unreachable"))
    peer.deliver(copy(message.slice(1)))
    return Promise.resolve()
  }

  /** Hears every connection that comes up or goes down, with the dealer's identity. */
  onPeer(listener: (event: LinkEvent, identity: Buffer) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Peers connected now. */
  get peerCount(): number {
    return this.peers.size
  }

  /**
   * Closes the router: what it had not received yet is lost, every connected dealer sees its
   * connection go down (and waits for the next router bound at the address).
   */
  close(): void {
    if (this.closed) return
    this.inbox.close()
    this.network.unbind(this)
    const peers = Array.from(this.peers.values())
    this.peers.clear()
    this.listeners.clear()
    for (const peer of peers) peer.detach()
  }

  /** @internal a dealer connects; false when its identity is taken (ZeroMQ refuses it too). */
  join(dealer: Dealer): boolean {
    const key = dealer.identity.toString("latin1")
    if (this.closed || this.peers.has(key)) return false
    this.peers.set(key, dealer)
    // Told at once: the connection is made in a turn of its own, and its messages follow it.
    for (const listener of this.listeners) listener("up", dealer.identity)
    return true
  }

  /** @internal a dealer's connection ends (it closed). */
  leave(dealer: Dealer): void {
    const key = dealer.identity.toString("latin1")
    if (this.peers.get(key) !== dealer) return
    this.peers.delete(key)
    this.tell("down", dealer.identity)
  }

  /** @internal a message from a dealer. */
  deliver(identity: Buffer, message: Array<Buffer>): void {
    message.unshift(identity)
    this.inbox.push(message)
  }

  private tell(event: LinkEvent, identity: Buffer): void {
    later(() => {
      for (const listener of this.listeners) listener(event, identity)
    })
  }
}

/**
 * The DEALER-like side: one connection to whatever router is bound at its address.
 *
 * @since 0.2.0
 */
export class Dealer {
  private readonly inbox = new Inbox()
  private router: Router | undefined = undefined
  /** Sent while not connected: delivered once connected. */
  private outbox: Array<Array<Buffer>> = []
  private readonly listeners = new Set<(event: LinkEvent) => void>()
  /** The routing identity the router sees. */
  readonly identity: Buffer
  /**
   * Kept for the code that closes a ZeroMQ socket after setting it: a send is delivered before it
   * returns, so nothing is ever left to linger over.
   */
  linger = 0

  /** @internal */
  constructor(private readonly network: Network, readonly address: string, routingId: string | undefined) {
    // ZeroMQ's own identities are a zero byte and a 32-bit number.
    const id = nextIdentity++
    this.identity = routingId !== undefined
      ? Buffer.from(routingId)
      : Buffer.from([0, (id >>> 24) & 0xff, (id >>> 16) & 0xff, (id >>> 8) & 0xff, id & 0xff])
  }

  get closed(): boolean {
    return this.inbox.closed
  }

  /** Whether it is connected to a router now. */
  get connected(): boolean {
    return this.router !== undefined
  }

  receive(): Promise<Array<Buffer>> {
    return this.inbox.receive()
  }

  /** Delivers the message to the router (or queues it until connected). */
  send(message: Array<Uint8Array>): Promise<void> {
    if (this.closed) return Promise.reject(socketError("EBADF", "Socket is closed"))
    const frames = copy(message)
    if (this.router === undefined) this.outbox.push(frames)
    else this.router.deliver(this.identity, frames)
    return Promise.resolve()
  }

  /** Hears its connection come up and go down. */
  onLink(listener: (event: LinkEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Closes the dealer: its connection goes down on the router's side, what is queued is dropped. */
  close(): void {
    if (this.closed) return
    this.inbox.close()
    this.outbox = []
    this.network.forget(this)
    this.listeners.clear()
    const router = this.router
    this.router = undefined
    router?.leave(this)
  }

  /**
   * @internal connects to the router bound at the address, if any (in a turn of its own, after
   * `connect` or `bind`): both sides hear of it, then what was queued goes.
   */
  attach(): void {
    const router = this.network.routerAt(this.address)
    if (this.closed || this.router !== undefined || router === undefined || !router.join(this)) return
    this.router = router
    // What was queued goes first, as it does out of a ZeroMQ pipe right after the handshake,
    // before the socket's monitor event can reach the program: what the dealer sends on hearing
    // "up" (a client's CONNECT) follows it. A message queued in the window between a drop and
    // its "down" reaches the next router ahead of that CONNECT, from a peer it does not know yet.
    const queued = this.outbox
    this.outbox = []
    for (const frames of queued) router.deliver(this.identity, frames)
    for (const listener of this.listeners) listener("up")
  }

  /** @internal its router closed. */
  detach(): void {
    if (this.router === undefined) return
    this.router = undefined
    this.tell("down")
  }

  /** @internal a message from the router. */
  deliver(message: Array<Buffer>): void {
    this.inbox.push(message)
  }

  private tell(event: LinkEvent): void {
    later(() => {
      for (const listener of this.listeners) listener(event)
    })
  }
}
