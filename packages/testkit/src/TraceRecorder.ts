/**
 * Records a conversation with a coordinator as a {@link Trace}: a transparent proxy between the
 * peers and the coordinator. Peers connect to the recorder's ROUTER (on loopback) instead of the
 * coordinator; for each peer the recorder opens its own DEALER to the coordinator, so every peer
 * stays a distinct connection upstream (request ids that collide across clients stay apart), and
 * forwards every message both ways unchanged, writing each one down (direction, peer, monotonic
 * time, frames) as it passes.
 *
 * A peer whose first message is one empty frame registered as an engine: its messages are
 * recorded with the engine directions, and its DEALER upstream keeps its identity (the
 * coordinator knows engines by identity). Other explicit identities are kept as well; ZeroMQ's
 * generated ones (a zero byte first) cannot be set and are not.
 *
 * @since 0.1.0
 */
import { type Dialect, FrameSocket, Messages } from "@mcore-effect/protocol"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Zmq from "zeromq"
import { isLoopback } from "./Loopback.ts"
import { BindFailed, ConnectFailed, NotLoopback } from "./TestkitError.ts"
import * as Trace from "./Trace.ts"
import { traceError, type TraceError } from "./TraceError.ts"
import { defaultTimeoutMillis, waitUntil } from "./internal/waiting.ts"

/**
 * How to start a recorder.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** The coordinator to forward to (`TestCoordinator`'s `address`, or a real one). */
  readonly upstream: string
  /** Where peers connect: loopback only. Default `tcp://127.0.0.1:0` (an ephemeral port). */
  readonly address?: string | undefined
  /** Also write the trace to this file as it is recorded (the rest is written when the scope closes). */
  readonly path?: string | undefined
  /** The header's `meta`: who recorded it, with which settings. */
  readonly meta?: Record<string, unknown> | undefined
  /**
   * The dialect the peers and the coordinator speak, recorded in the header (`protocol`) so that
   * a replay speaks it too. The recorder itself forwards bytes and never decodes them. Absent,
   * the header names no dialect (read as the reference protocol's, as every version-1 trace;
   * `mcore trace replay` refuses such a trace unless told the dialect).
   */
  readonly protocol?: Dialect.Name | undefined
}

/**
 * A running recorder.
 *
 * @category models
 * @since 0.1.0
 */
export interface Handle {
  /** Where peers connect instead of the coordinator, with the actual port. */
  readonly address: string
  readonly upstream: string
  /** The trace so far: the header and every message recorded. */
  readonly trace: Effect.Effect<Trace.Trace>
  /** Waits until the messages recorded so far satisfy `predicate` (checked after every message). */
  readonly waitFor: (
    what: string,
    predicate: (entries: ReadonlyArray<Trace.Entry>) => boolean,
    options?: { readonly timeoutMillis?: number | undefined }
  ) => Effect.Effect<ReadonlyArray<Trace.Entry>, TraceError>
  /** Waits until everything recorded so far is in the file (when recording to one). */
  readonly flush: Effect.Effect<void, TraceError>
}

/**
 * The recorder as a service, for `layer`.
 *
 * @category services
 * @since 0.1.0
 */
export class TraceRecorder extends Context.Service<TraceRecorder, Handle>()("@mcore-effect/testkit/TraceRecorder") {}

type Role = "client" | "engine"

interface Peer {
  readonly name: string
  readonly role: Role
  readonly identity: Buffer
  readonly dealer: Zmq.Dealer
  readonly writer: FrameSocket.Writer
}

const socketOptions = { linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0 } as const

/** An identity ZeroMQ lets a socket take: not generated (no zero byte first), valid UTF-8. */
const settableIdentity = (identity: Buffer): string | undefined => {
  if (identity.length === 0 || identity[0] === 0) return undefined
  const text = identity.toString("utf8")
  return Buffer.from(text, "utf8").equals(identity) ? text : undefined
}

/** The proxy's sockets and loops; plain async code, wrapped as a scoped resource by `make`. */
class Proxy {
  readonly entries: Array<Trace.Entry> = []
  private readonly peers = new Map<string, Peer>()
  private readonly counts: Record<Role, number> = { client: 0, engine: 0 }
  private readonly listeners = new Set<() => void>()
  private readonly routerWriter: FrameSocket.Writer
  private readonly origin = process.hrtime.bigint()
  private running = true

  private constructor(
    private readonly router: Zmq.Router,
    readonly address: string,
    private readonly upstream: string,
    private readonly onEntry: (entry: Trace.Entry) => void
  ) {
    this.routerWriter = new FrameSocket.Writer(router)
  }

  static async start(address: string, upstream: string, onEntry: (entry: Trace.Entry) => void): Promise<Proxy> {
    const router = new Zmq.Router(socketOptions)
    try {
      await router.bind(address)
    } catch (error) {
      router.close()
      throw error
    }
    const proxy = new Proxy(router, router.lastEndpoint ?? address, upstream, onEntry)
    proxy.read(router, (frames) => proxy.fromPeer(frames))
    return proxy
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  close(): void {
    if (!this.running) return
    this.running = false
    this.routerWriter.close()
    this.router.close()
    for (const peer of this.peers.values()) {
      peer.writer.close()
      peer.dealer.close()
    }
  }

  private record(dir: Trace.Direction, peer: Peer, frames: ReadonlyArray<Uint8Array>): void {
    const t = Number((process.hrtime.bigint() - this.origin) / 1000n)
    const entry: Trace.Entry = { dir, peer: peer.name, t, frames }
    this.entries.push(entry)
    this.onEntry(entry)
    for (const listener of this.listeners) listener()
  }

  /** The one reader of a socket of the proxy; closing the socket ends it. */
  private read(socket: FrameSocket.Readable, onMessage: (frames: Array<Buffer>) => void): void {
    FrameSocket.read(socket, {
      onMessage: (frames) => {
        if (this.running) onMessage(frames)
      },
      onHandlerError: (error) => console.error(`trace proxy: dropped a message: ${String(error)}`),
      onReceiveError: () => {}
    })
  }

  private fromPeer(frames: Array<Buffer>): void {
    const [identity, ...message] = frames
    if (identity === undefined) return
    const peer = this.peerOf(identity, message)
    this.record(peer.role === "engine" ? "engine->coordinator" : "client->coordinator", peer, message)
    peer.writer.send(message)
  }

  private peerOf(identity: Buffer, firstMessage: ReadonlyArray<Buffer>): Peer {
    const key = identity.toString("hex")
    const known = this.peers.get(key)
    if (known !== undefined) return known
    // Megatron's engines register by sending one empty frame.
    const role: Role = Messages.isEngineRegistration(firstMessage) ? "engine" : "client"
    const routingId = settableIdentity(identity)
    const dealer = new Zmq.Dealer(routingId === undefined ? socketOptions : { ...socketOptions, routingId })
    dealer.connect(this.upstream)
    const peer: Peer = {
      name: `${role}-${this.counts[role]++}`,
      role,
      identity: Buffer.from(identity),
      dealer,
      writer: new FrameSocket.Writer(dealer)
    }
    this.peers.set(key, peer)
    this.read(dealer, (frames) => {
      this.record(peer.role === "engine" ? "coordinator->engine" : "coordinator->client", peer, frames)
      this.routerWriter.send([peer.identity, ...frames])
    })
    return peer
  }
}

/** Connecting parses the address; a bad one is better refused now than in the proxy's loop. */
const checkUpstream = (upstream: string) =>
  Effect.try({
    try: () => {
      const probe = new Zmq.Dealer({ linger: 0 })
      try {
        probe.connect(upstream)
      } finally {
        probe.close()
      }
    },
    catch: (cause) => traceError(new ConnectFailed({ address: upstream, cause }))
  })

/**
 * Starts a recorder in front of a coordinator; it runs until the scope closes, which closes its
 * sockets and writes the rest of the trace file.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestCluster, Trace, TraceRecorder } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const cluster = yield* TestCluster.make({ engines: 1 })
 *   const recorder = yield* TraceRecorder.make({ upstream: cluster.address, path: "/tmp/s.trace.jsonl" })
 *   // point the client at recorder.address instead of cluster.address, run the session ...
 *   const trace = yield* recorder.trace
 *   return trace.entries.length
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make: (options: Options) => Effect.Effect<Handle, TraceError, Scope.Scope> = Effect.fn("TraceRecorder.make")(
  function*(options: Options) {
    const address = options.address ?? "tcp://127.0.0.1:0"
    if (!isLoopback(address)) return yield* Effect.fail(traceError(new NotLoopback({ address })))
    yield* checkUpstream(options.upstream)
    const header = Trace.makeHeader({ meta: options.meta, protocol: options.protocol })
    // Acquired before the proxy, so released after it: the file gets every message recorded.
    const file = options.path === undefined ? undefined : yield* Trace.writer(options.path, header)
    const proxy = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => Proxy.start(address, options.upstream, file === undefined ? () => {} : file.append),
        catch: (cause) => traceError(new BindFailed({ address, cause }))
      }),
      (proxy) => Effect.sync(() => proxy.close())
    )
    const handle: Handle = {
      address: proxy.address,
      upstream: options.upstream,
      trace: Effect.sync(() => ({ header, entries: proxy.entries.slice() })),
      waitFor: (what, predicate, waitOptions) =>
        waitUntil(
          `recorder: ${what}`,
          (listener) => proxy.onChange(listener),
          (): ReadonlyArray<Trace.Entry> => proxy.entries,
          predicate,
          waitOptions?.timeoutMillis ?? defaultTimeoutMillis
        ).pipe(
          // The predicate saw the live list; the caller gets a copy.
          Effect.map((entries) => entries.slice()),
          Effect.mapError((e) => traceError(e.reason as WaitReason))
        ),
      flush: file === undefined ? Effect.void : file.flush
    }
    return handle
  }
)

type WaitReason = Extract<TraceError["reason"], { readonly _tag: "WaitTimedOut" }>

/**
 * The recorder as a layer: started when the layer is built, closed (file written) when released.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TraceRecorder } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const recorder = yield* TraceRecorder.TraceRecorder
 *   return recorder.address // connect the client here
 * }).pipe(Effect.provide(TraceRecorder.layer({ upstream: "tcp://127.0.0.1:5555", path: "/tmp/s.trace.jsonl" })))
 * ```
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (options: Options): Layer.Layer<TraceRecorder, TraceError> => Layer.effect(TraceRecorder, make(options))
