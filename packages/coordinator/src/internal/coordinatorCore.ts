/**
 * The coordinator's machinery: one ROUTER (ZeroMQ's or in-memory: `CoordinatorSocket`), its
 * reader and its one writer (`FrameSocket`), and the life of the loop: started, ended by SHUTDOWN
 * (or core_v0.16's STOP_ACKs) once what is queued has left, or closed at once (crash, scope).
 * `Coordinator` (and the testkit's `TestCoordinator`) wrap it as a scoped Effect resource. It never lets a bad message take the
 * loop down: every rejection is counted, logged and kept for inspection.
 *
 * It speaks one dialect (`DialectWire`). Behaviour follows Megatron's
 * `data_parallel_inference_coordinator` (`coordinator.py`, `handlers.py`, `state.py`) where the
 * wire format alone does not say: an engine registers by sending one empty frame, engines are
 * ordered by identity, a DISCONNECT from an engine removes it, replies from removed engines are
 * still delivered, ABORT goes to the engine holding the request, RELEASE_KV is broadcast
 * verbatim, a duplicate CONNECT is ignored, replies flagged `needs_detokenize` get
 * `generated_text` filled here.
 *
 * The parts, one concept each: the routing state they share `CoordinatorState`; one message's
 * handling `CoordinatorInbox`; clients' requests to engines `requestDispatch.ts`; control signals
 * and acknowledgements `ControlRelay`; the way back from engines `ReplyRoute`; the path to
 * clients and the reader, `Peer` (plain, or the testkit's through its faults).
 *
 * @since 0.1.0
 * @internal
 */
import { FrameSocket } from "@mcore-effect/protocol"
import type * as ControlState from "../ControlState.ts"
import type { ConnectionCount } from "./connectionCount.ts"
import { CoordinatorInbox } from "./coordinatorInbox.ts"
import * as CoordinatorSocket from "./coordinatorSocket.ts"
import type { CoordinatorConfig, Counters } from "./coordinatorConfig.ts"
import type { Rejection } from "./coordinatorRecords.ts"
import { CoordinatorState } from "./coordinatorState.ts"
import { ControlRelay } from "./controlRelay.ts"
import type { EnginePool, Reroute } from "./enginePool.ts"
import * as Peer from "./peer.ts"
import type { RecentLog } from "./recentLog.ts"
import { UndeliveredReport } from "./undeliveredReport.ts"
import { identityKey, showIdentity } from "./wireFrames.ts"

/** How long undeliverable messages are counted before one line per peer reports them. */
const UNDELIVERED_WINDOW_MILLIS = 1_000

/**
 * @internal
 */
export class CoordinatorCore {
  running = true
  shutdownReceived = false

  private readonly writer: FrameSocket.Writer<Reroute | undefined>
  private readonly peer: Peer.Peer
  private readonly s: CoordinatorState
  private readonly relay: ControlRelay
  private readonly inbox: CoordinatorInbox
  private readonly undelivered: UndeliveredReport
  private readonly stopped: Promise<void>
  private resolveStopped!: () => void

  /** The ROUTER (ZeroMQ's or in-memory: see `CoordinatorSocket`). */
  private readonly router: CoordinatorSocket.Bound["socket"]
  /** The bound address. */
  readonly address: string
  /** Connections up, as the socket reports them (counted since before it bound). */
  private readonly connections: ConnectionCount

  /** Connections closed for bad input, by reason (see `ConnectionCount.refusals`). */
  get connectionsRefused(): Readonly<Partial<Record<string, number>>> {
    return this.connections.refusals
  }

  private constructor(
    bound: CoordinatorSocket.Bound,
    readonly config: CoordinatorConfig,
    firstRequestId: number,
    makePeer: Peer.MakePeer
  ) {
    this.router = bound.socket
    this.address = bound.address
    this.connections = bound.connections
    this.undelivered = new UndeliveredReport(config.log, UNDELIVERED_WINDOW_MILLIS)
    // Immediate: every binder's socket completes a send before returning (ours writes into its
    // connection's turn; zeromq.js's is bound with `sendTimeout: 0`), so a message goes out from
    // `send` itself, with no await per message in the writer's loop (one per streamed partial).
    this.writer = new FrameSocket.Writer<Reroute | undefined>(
      this.router,
      (error, message, reroute) => this.undeliverable(error, message, reroute),
      { immediate: true }
    )
    this.peer = makePeer(this.writer)
    this.connections.onChange = () => this.peer.notify()
    this.s = new CoordinatorState(config, this.writer, this.peer.toClients, firstRequestId)
    this.relay = new ControlRelay(this.s)
    this.inbox = new CoordinatorInbox(this.s, this.relay, (outcome, why) => {
      if (outcome === "die") this.close()
      else this.end(why)
    })
    this.stopped = new Promise((resolve) => (this.resolveStopped = resolve))
  }

  /**
   * Binds a ROUTER on `address` (ZeroMQ's unless `bind` says otherwise) and starts the loop,
   * numbering requests from `firstRequestId`, its messages to clients through `makePeer`'s
   * (default: straight to the socket). Rejects when the bind fails.
   */
  static async start(
    address: string,
    config: CoordinatorConfig,
    firstRequestId = 0,
    bind: CoordinatorSocket.Binder = CoordinatorSocket.zeromq(config.curve),
    makePeer: Peer.MakePeer = Peer.plain
  ): Promise<CoordinatorCore> {
    const core = new CoordinatorCore(await bind(address), config, firstRequestId, makePeer)
    core.startReading()
    return core
  }

  /** Resolves when the loop has ended (SHUTDOWN, crash or close). */
  get done(): Promise<void> {
    return this.stopped
  }

  /** Calls `listener` after every handled message until the returned function is called. */
  onChange(listener: () => void): () => void {
    return this.peer.onChange(listener)
  }

  /**
   * Closes the socket at once (linger 0): queued messages are lost, the loop ends. {@link done}
   * settles once the socket is closed (for a ROUTER of our own, its listener and connections
   * too: nothing of it is left in the process).
   */
  close(): void {
    if (!this.running && this.router.closed) return
    this.running = false
    this.writer.close()
    this.peer.toClients.clear()
    this.undelivered.flush()
    const closing = this.router.closed ? undefined : this.router.close()
    this.peer.closed()
    if (closing instanceof Promise) closing.then(this.resolveStopped, this.resolveStopped)
    else this.resolveStopped()
    this.peer.notify()
  }

  // -------------------------------------------------------------------------------------------
  // Inspection
  // -------------------------------------------------------------------------------------------

  get state(): ControlState.State {
    return this.relay.state
  }

  get counters(): Counters {
    return this.s.counters
  }

  /** The messages dropped (most recent, up to `recordLimit`). */
  get rejections(): RecentLog<Rejection> {
    return this.s.rejections
  }

  /** The next coordinator-side request id (see `CoordinatorState.nextRequestId`). */
  get nextRequestId(): number {
    return this.s.nextRequestId
  }

  engineViews(): ReturnType<EnginePool["views"]> {
    return this.s.pool.views()
  }

  /**
   * Clients connected now that have completed CONNECT: the ZMTP connections up (from the
   * socket's events) less the registered engines' own, and never more than the clients that
   * sent CONNECT. A client that goes away leaves the count.
   */
  get clientCount(): number {
    return Math.max(0, Math.min(this.s.knownClients.size, this.connections.up - this.s.pool.size))
  }

  get inFlightCount(): number {
    return this.s.inFlight.size
  }

  get backlogCount(): number {
    return this.s.backlog.length
  }

  get heldHashes(): number {
    return this.s.ownership.size
  }

  get prefixTableSize(): number {
    return this.s.prefixTable?.size ?? 0
  }

  get pendingWrites(): number {
    return this.writer.pending
  }

  /** Which engines (by identity) hold `hash` for some request in flight. */
  holders(hash: bigint): ReadonlyArray<string> {
    return this.s.pool.engines.filter((e) => this.s.ownership.holds(e.key, hash)).map((e) => e.name)
  }

  // -------------------------------------------------------------------------------------------
  // The loop
  // -------------------------------------------------------------------------------------------

  private startReading(): void {
    const { done } = this.peer.read(this.router, {
      onMessage: (frames) => {
        if (this.running) this.inbox.handle(frames)
      },
      onHandlerError: (error) => {
        this.s.counters.internalErrors++
        this.config.log("Error", `coordinator: dropped a message after an unexpected error: ${String(error)}`)
      },
      onReceiveError: (error) => {
        this.s.counters.internalErrors++
        this.config.log("Error", `coordinator: receive failed: ${String(error)}`)
      }
    })
    // Closing the socket ends the loop (a receive under way rejects; a hang is cleared first).
    void done.finally(() => {
      // A loop that ends on its own (SHUTDOWN) closes the socket once its queue has drained.
      if (!this.shutdownReceived) this.close()
    })
  }

  private undeliverable(error: unknown, message: FrameSocket.Message, reroute: Reroute | undefined): void {
    this.s.counters.unreachable++
    const key = identityKey(message[0]!)
    const code = (error as { code?: string } | null)?.code
    if (code === "EHOSTUNREACH" && (this.s.pool.has(key) || (reroute !== undefined && this.s.pool.known(key)))) {
      // First the submission that never reached it goes to another engine (Megatron-LM main's
      // coordinator retries the send), then what the engine held is answered FAILED.
      reroute?.()
      return this.s.pool.remove(key, "it is unreachable")
    }
    // A client that went away leaves every reply to it undeliverable (a thousand after a batch):
    // one line per peer and window, with the count, not one per message.
    this.undelivered.add(key, showIdentity(message[0]!), error)
  }

  /** The loop ends: what is already queued leaves, then the socket closes, as a Python process exiting its loop would. */
  private end(why: string): void {
    this.shutdownReceived = true
    this.running = false
    this.config.log("Info", `coordinator: ${why}`)
    const deadline = Date.now() + 1000
    const poll = () => (this.writer.pending === 0 || Date.now() > deadline ? this.close() : setTimeout(poll, 5))
    poll()
  }
}
