/**
 * The test coordinator's machinery: one ROUTER (ZeroMQ's or in-memory: `CoordinatorSocket`), its reader and its one writer (`FrameSocket`). It
 * reads every message's envelope through its dialect's codecs (and a submission's block hashes
 * or prompt when the policy routes on prefixes), forwards bodies verbatim, and never lets a bad
 * message take the loop down: every rejection is counted, logged and kept for inspection.
 * `TestCoordinator` wraps it as a scoped Effect resource.
 *
 * It speaks one dialect (`DialectWire`): header values are translated to the reference table's on
 * the way in (so the logic below reads the same in every dialect), and replies leave in the
 * dialect's layout. A message of the reference protocol that the dialect lacks (ABORT_REQUEST on
 * core_v0.19) is dropped as malformed, where Megatron's coordinator of that ref would die of it.
 * core_v0.16's coordinator forwards every control signal (no state machine), relays its engines'
 * PAUSE_ACK / STOP_ACK once all have acked, ends after the STOP_ACKs, and dies of a second ack
 * from one engine (a second PAUSE before UNPAUSE) as Megatron's does.
 *
 * Behaviour follows Megatron's `data_parallel_inference_coordinator` (`coordinator.py`,
 * `handlers.py`, `state.py`) where the wire format alone does not say: an engine registers by sending one
 * empty frame, engines are ordered by identity, a DISCONNECT from an engine removes it, replies
 * from removed engines are still delivered, ABORT goes to the engine holding the request,
 * RELEASE_KV is broadcast verbatim, a duplicate CONNECT is ignored, replies flagged
 * `needs_detokenize` get `generated_text` filled here.
 *
 * Past 400 lines: one class whose handlers all read and write the same routing state (requests
 * in flight, hash ownership, control state); split apart, they would pass it around. What stands
 * on its own lives beside it: decoding is the protocol's (`Messages` codecs), socket handling
 * `FrameSocket`'s, the engines and the way to them `EnginePool`, the way back from them
 * `ReplyRoute`, the way to clients through the faults `ClientOutbox` (its send path through them,
 * shared with the engines, `internal/faultedWriter.ts`), the requests in flight
 * `InFlightRequests`, the records it keeps `CoordinatorRecords`, the routing hashes
 * `SubmissionHashes`, the warnings about undeliverable messages `UndeliveredReport`.
 *
 * @since 0.1.0
 * @internal
 */
import { FrameSocket, type Frames, Headers, Messages, MessageSpec, Msgpack } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import * as ControlState from "../ControlState.ts"
import { ClientOutbox } from "./clientOutbox.ts"
import type { ConnectionCount } from "./connectionCount.ts"
import * as CoordinatorSocket from "./coordinatorSocket.ts"
import { type CoordinatorConfig, type Counters, newCounters } from "./coordinatorConfig.ts"
import type { InFlight, Rejection, Waiting } from "./coordinatorRecords.ts"
import * as DialectWire from "./dialectWire.ts"
import { EnginePool } from "./enginePool.ts"
import * as Faults from "../Faults.ts"
import { InFlightRequests } from "./inFlightRequests.ts"
import { FaultedWriter } from "./faultedWriter.ts"
import { RecentLog } from "./recentLog.ts"
import * as ReplyRoute from "./replyRoute.ts"
import * as Routing from "../Routing.ts"
import * as SubmissionHashes from "./submissionHashes.ts"
import { UndeliveredReport } from "./undeliveredReport.ts"
import { headerOf, identityKey, NIL, packHeader, packHeaderInt, showIdentity, withRequestId } from "./wireFrames.ts"

const H = Headers.values

/** A message read up to its metadata by one of the protocol's codecs. */
type Envelope = Frames.Envelope


/** The headers a codec reads (their reference values), from the declarations. */
const headersOf = (codec: Frames.Codec<ReadonlyArray<MessageSpec.Any>>): ReadonlySet<number> =>
  new Set(codec.specs.filter((spec) => spec.tag !== "Disconnect").map((spec) => spec.header))

/** The frame of a SUBMIT's block hashes, from the declaration. */
const HASHES_FRAME = MessageSpec.frameIndex(Messages.SubmitRequest, "blockHashes")

type Outgoing = FrameSocket.Message

const nameOf = (header: number): Headers.HeaderName => Headers.nameOf(header as Headers.Header)

const isKnownHeader = (header: unknown): header is Headers.Header =>
  typeof header === "number" && Headers.nameOf(header as Headers.Header) !== undefined

/** `[h, engine_identity]`: core_v0.16's relay of its engines' acknowledgements to clients. */
const writeAck = (header: number, identity: Uint8Array): Uint8Array => Msgpack.encode([header, new Uint8Array(identity)])

/** How long undeliverable messages are counted before one line per peer reports them. */
const UNDELIVERED_WINDOW_MILLIS = 1_000

/** Messages handled between two yields to the event loop, so timers and other sockets get a turn. */
const YIELD_EVERY = 512

/**
 * @internal
 */
export class CoordinatorCore {
  state: ControlState.State = "RUNNING"
  running = true
  shutdownReceived = false
  readonly counters: Counters = newCounters()
  readonly faults = new Faults.Switchboard()
  /**
   * The next coordinator-side request id. A restarted coordinator starts from where the one
   * before it stopped: engines outlive it and still reply to the old requests, and such a reply
   * must not match a new request that reused the id (it is dropped as `unknownRequest`).
   */
  nextRequestId: number

  private readonly writer: FrameSocket.Writer
  private readonly pool: EnginePool
  private readonly route: ReplyRoute.ReplyRoute
  private readonly knownClients = new Set<string>()
  /** core_v0.16: the engines that acked the standing PAUSE, and the STOP (by identity key). */
  private readonly pauseAcks = new Set<string>()
  private readonly stopAcks = new Set<string>()
  private readonly inFlight = new InFlightRequests<InFlight>()
  private readonly ownership = new Routing.HashOwnership()
  private backlog: Array<Waiting> = []
  private readonly out: FaultedWriter
  private readonly toClients: ClientOutbox
  private readonly changeListeners = new Set<() => void>()
  private readonly undelivered: UndeliveredReport
  private readonly stopped: Promise<void>
  private resolveStopped!: () => void
  /** The dialect spoken, and what of it the loop reads on every message. */
  private readonly wire: DialectWire.DialectWire
  private readonly engineHeaders: ReadonlySet<number>
  private readonly clientHeaders: ReadonlySet<number>
  /** The messages dropped (most recent, up to `recordLimit`). */
  readonly rejections: RecentLog<Rejection>

  /** The ROUTER (ZeroMQ's or in-memory: see `CoordinatorSocket`). */
  private readonly router: CoordinatorSocket.Bound["socket"]
  /** The bound address. */
  readonly address: string
  /** Connections up, as the socket reports them (counted since before it bound). */
  private readonly connections: ConnectionCount

  private constructor(bound: CoordinatorSocket.Bound, readonly config: CoordinatorConfig, firstRequestId: number) {
    this.router = bound.socket
    this.address = bound.address
    this.connections = bound.connections
    this.nextRequestId = firstRequestId
    this.wire = config.wire
    this.engineHeaders = headersOf(config.wire.engine)
    this.clientHeaders = headersOf(config.wire.client)
    this.rejections = new RecentLog(config.recordLimit)
    this.undelivered = new UndeliveredReport(config.log, UNDELIVERED_WINDOW_MILLIS)
    this.connections.onChange = () => this.notify()
    this.writer = new FrameSocket.Writer(this.router, (error, message) => this.undeliverable(error, message))
    this.out = new FaultedWriter(this.faults, this.writer, {
      single: config.wire.single,
      addressFrames: 1,
      // Identity, header and payload: the payload goes.
      short: (message) => message.slice(0, 2)
    })
    this.toClients = new ClientOutbox(this.out)
    this.pool = new EnginePool(this.writer, this.ownership, config, nameOf)
    this.route = {
      wire: config.wire,
      config,
      inFlight: this.inFlight,
      ownership: this.ownership,
      toClients: this.toClients,
      reject: (kind, identity, why) => this.reject(kind, identity, why)
    }
    this.stopped = new Promise((resolve) => (this.resolveStopped = resolve))
  }

  /**
   * Binds a ROUTER on `address` (ZeroMQ's unless `bind` says otherwise) and starts the loop,
   * numbering requests from `firstRequestId`. Rejects when the bind fails.
   */
  static async start(
    address: string,
    config: CoordinatorConfig,
    firstRequestId = 0,
    bind: CoordinatorSocket.Binder = CoordinatorSocket.zeromq(config.curve)
  ): Promise<CoordinatorCore> {
    const core = new CoordinatorCore(await bind(address), config, firstRequestId)
    core.startReading()
    return core
  }

  /** Resolves when the loop has ended (SHUTDOWN, crash or close). */
  get done(): Promise<void> {
    return this.stopped
  }

  /** Calls `listener` after every handled message until the returned function is called. */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener)
    return () => this.changeListeners.delete(listener)
  }

  /** Closes the socket at once (linger 0): queued messages are lost, the loop ends. */
  close(): void {
    if (!this.running && this.router.closed) return
    this.running = false
    this.writer.close()
    this.toClients.clear()
    this.undelivered.flush()
    if (!this.router.closed) this.router.close()
    // A loop parked on a hang sees that the coordinator is gone.
    this.faults.clear("Hang")
    this.resolveStopped()
    this.notify()
  }

  injectFault(fault: Faults.Fault): void {
    this.out.inject(fault)
  }

  clearFaults(tag?: Faults.FaultTag): void {
    this.out.clear(tag)
    if (this.faults.reorderWindow === 0) this.toClients.flushHeld(undefined)
  }

  // -------------------------------------------------------------------------------------------
  // Inspection
  // -------------------------------------------------------------------------------------------

  engineViews(): ReturnType<EnginePool["views"]> {
    return this.pool.views()
  }

  /**
   * Clients connected now that have completed CONNECT: the ZMTP connections up (from the
   * socket's events) less the registered engines' own, and never more than the clients that
   * sent CONNECT. A client that goes away leaves the count.
   */
  get clientCount(): number {
    return Math.max(0, Math.min(this.knownClients.size, this.connections.up - this.pool.size))
  }

  get inFlightCount(): number {
    return this.inFlight.size
  }

  get backlogCount(): number {
    return this.backlog.length
  }

  get heldHashes(): number {
    return this.ownership.size
  }

  get pendingWrites(): number {
    return this.writer.pending
  }

  /** Which engines (by identity) hold `hash` for some request in flight. */
  holders(hash: bigint): ReadonlyArray<string> {
    return this.pool.engines.filter((e) => this.ownership.holds(e.key, hash)).map((e) => e.name)
  }

  // -------------------------------------------------------------------------------------------
  // The loop
  // -------------------------------------------------------------------------------------------

  private startReading(): void {
    const { done } = FrameSocket.read(this.router, {
      // A message read just as a Hang was switched on waits for the hang to end.
      gate: () => (this.faults.hung ? this.faults.whenAnswering() : undefined),
      onMessage: (frames) => {
        if (!this.running) return
        this.handle(frames)
      },
      onHandlerError: (error) => {
        this.counters.internalErrors++
        this.config.log("Error", `coordinator: dropped a message after an unexpected error: ${String(error)}`)
      },
      onReceiveError: (error) => {
        this.counters.internalErrors++
        this.config.log("Error", `coordinator: receive failed: ${String(error)}`)
      },
      afterMessage: () => this.notify(),
      yieldEvery: YIELD_EVERY
    })
    // Closing the socket ends the loop (a receive under way rejects; a hang is cleared first).
    void done.finally(() => {
      // A loop that ends on its own (SHUTDOWN) closes the socket once its queue has drained.
      if (!this.shutdownReceived) this.close()
    })
  }

  private notify(): void {
    for (const listener of this.changeListeners) listener()
  }

  private handle(frames: Array<Buffer>): void {
    const identity = frames[0]!
    const message = frames.slice(1)
    // Megatron's engines register by sending one empty frame (a client that did CONNECT cannot
    // turn itself into an engine that way: it would be sent other clients' requests).
    if (Messages.isEngineRegistration(message)) {
      if (this.knownClients.has(identityKey(identity))) return this.reject("malformed", identity, "an empty frame from a client")
      return this.registerEngine(identity)
    }
    let header = headerOf(message[0])
    if (header === undefined) return this.reject("malformed", identity, "frame 0 is not a msgpack array starting with a header")
    if (!this.wire.isReference) {
      // The dialect's value, as the reference table numbers the same header.
      const known = DialectWire.toReference(this.wire, header)
      if (typeof known !== "number") return this.lacks(identity, header, known)
      header = known
    }
    if (!isKnownHeader(header)) return this.reject("unknownHeader", identity, `unknown header ${String(header)}`)
    const key = identityKey(identity)
    if (header === H.DISCONNECT) {
      // Megatron: only an engine's DISCONNECT means anything (it leaves the routing pool).
      if (this.pool.has(key)) this.pool.remove(key, "it sent DISCONNECT")
      return
    }
    if (this.engineHeaders.has(header)) {
      if (!this.fromEngine(identity, key, header)) return
      const envelope = this.decode(identity, this.wire.engine, message)
      if (envelope === undefined) return
      if (envelope.spec.tag === "PauseAck" || envelope.spec.tag === "StopAck") {
        return this.engineAck(identity, key, envelope.spec.tag === "PauseAck" ? "pause" : "stop")
      }
      const replies = envelope.spec.tag === "EngineReplyBatch"
      if (this.wire.single) return ReplyRoute.engineBatch(this.route, identity, envelope.frames[1]!, replies)
      return replies
        ? ReplyRoute.engineReply(this.route, identity, message, envelope.metadata as ReplyRoute.EngineReplyMetadata)
        : ReplyRoute.enginePartial(this.route, identity, message, envelope.metadata as ReplyRoute.EnginePartialMetadata)
    }
    if (!this.clientHeaders.has(header)) return this.reject("unknownHeader", identity, `${nameOf(header)} is not something a client sends`)
    if (header !== H.CONNECT && !this.knownClients.has(key)) {
      return this.reject("neverConnected", identity, `${nameOf(header)} from a client that never sent CONNECT`)
    }
    const envelope = this.decode(identity, this.wire.client, message)
    if (envelope === undefined) return
    const metadata = envelope.metadata
    switch (envelope.spec.tag as Messages.ClientMessage["_tag"]) {
      case "Connect":
        return this.connect(identity, key)
      case "SubmitRequest":
      case "SubmitRequestWithKv":
        return this.submit(identity, key, envelope)
      case "AbortRequest":
        return this.abort(identity, key, metadata.requestId as number)
      case "ReleaseKv":
        // Broadcast verbatim: the id names the engine-side request (the reply's
        // disaggregated_params), and engines that do not hold it ignore it.
        return this.pool.broadcast(header, message[0]!)
      case "StartCudaProfiler":
      case "StopCudaProfiler":
        // Not a state transition: broadcast in any state.
        return this.pool.broadcast(header, message[0]!)
      case "Shutdown":
        return this.shutdown()
      default:
        return this.control(header, message[0]!)
    }
  }

  /**
   * Reads a message's envelope (arity, header, metadata) through the codec of its direction:
   * a wrong frame count is `badArity`, anything else wrong with it `malformed`.
   */
  private decode(
    identity: Uint8Array,
    codec: Frames.Codec<ReadonlyArray<MessageSpec.Any>>,
    message: ReadonlyArray<Buffer>
  ): Envelope | undefined {
    const envelope = codec.decodeEnvelope(message)
    if (Result.isSuccess(envelope)) return envelope.success
    const reason = envelope.failure.reason
    this.reject(reason._tag === "ArityMismatch" ? "badArity" : "malformed", identity, envelope.failure.message)
    return undefined
  }

  private reject(kind: keyof Counters, identity: Uint8Array, why: string): void {
    this.counters[kind]++
    const from = showIdentity(identity)
    this.rejections.add({ kind, from, why })
    this.config.log("Warn", `coordinator: dropped a message from ${from} (${kind}): ${why}`)
  }

  /** A header off this dialect's table: one of the reference protocol's it lacks, or none at all. */
  private lacks(identity: Uint8Array, header: number, known: DialectWire.OffTable): void {
    if (known._tag === "unknown") return this.reject("unknownHeader", identity, `unknown header ${header}`)
    const { dialect } = this.wire
    this.reject(
      "malformed",
      identity,
      `header ${header} is not in the ${dialect.name} protocol (${known.name} in the reference protocol): ` +
        `Megatron-LM ${dialect.megatron} has no such message`
    )
  }

  // -------------------------------------------------------------------------------------------
  // Engines
  // -------------------------------------------------------------------------------------------

  private registerEngine(identity: Buffer): void {
    if (!this.pool.register(identity)) return
    if (this.backlog.length > 0) {
      const waiting = this.backlog
      this.backlog = []
      for (const w of waiting) this.dispatch(w)
    }
  }

  private undeliverable(error: unknown, message: Outgoing): void {
    this.counters.unreachable++
    const key = identityKey(message[0]!)
    const code = (error as { code?: string } | null)?.code
    if (code === "EHOSTUNREACH" && this.pool.has(key)) return this.pool.remove(key, "it is unreachable")
    // A client that went away leaves every reply to it undeliverable (a thousand after a batch):
    // one line per peer and window, with the count, not one per message.
    this.undelivered.add(key, showIdentity(message[0]!), error)
  }

  // -------------------------------------------------------------------------------------------
  // Clients
  // -------------------------------------------------------------------------------------------

  private connect(identity: Buffer, key: string): void {
    if (this.knownClients.has(key)) {
      this.counters.duplicateConnect++
      this.config.log("Info", `coordinator: client ${showIdentity(identity)} sent a duplicate CONNECT; ignored`)
      return
    }
    this.knownClients.add(key)
    this.writer.send([identity, packHeader(this.wire.CONNECT_ACK)])
  }

  /** A submission (SUBMIT_REQUEST or SUBMIT_REQUEST_WITH_KV), its envelope read. */
  private submit(identity: Buffer, key: string, envelope: Envelope): void {
    const clientRequestId = envelope.metadata.requestId as number
    let hashes: ReadonlyArray<bigint> = []
    if (envelope.spec.tag === "SubmitRequest" && this.config.policy !== "load_balanced") {
      const computed = SubmissionHashes.routingHashes(envelope, this.config.policy, this.config.blockSizeTokens, this.wire.client)
      if (typeof computed === "string") return this.reject("malformed", identity, computed)
      hashes = computed
    }
    this.dispatch({ envelope, client: identity, clientKey: key, clientRequestId, hashes })
  }

  /** Re-numbers a submission and sends it to the engine the policy picks (or holds it until one registers). */
  private dispatch(w: Waiting): void {
    const engines = this.pool.engines
    if (engines.length === 0) {
      this.backlog.push(w)
      return
    }
    const loads = engines.map((e) => e.load)
    const engine = engines[
      w.hashes.length === 0
        ? Routing.leastLoaded(loads)
        : Routing.choose({
          beta: this.config.beta,
          loads,
          depths: this.ownership.depths(w.hashes, engines.map((e) => e.key)),
          hashCount: w.hashes.length
        }).engine
    ]!
    const requestId = this.nextRequestId
    const f = w.envelope.frames
    let metadata: Uint8Array
    try {
      // One frame: optional bodies the client left out go to the engine as nil, as main's
      // coordinator sends `[20, crid, prompt, sp, None]` for a four-element SUBMIT_REQUEST.
      metadata = withRequestId(f[0]!, requestId, this.wire.single ? 1 + w.envelope.spec.bodyKeys.length - f.length : 0)
    } catch (error) {
      // Only a frame not laid out as Python writes it takes the re-encoding path; a value msgpackr
      // decoded into something with no msgpack form (an extension type) ends here.
      return this.reject("malformed", w.client, `cannot re-number the metadata frame: ${String(error)}`)
    }
    this.nextRequestId++
    this.inFlight.add(requestId, {
      client: w.client,
      clientKey: w.clientKey,
      clientRequestId: w.clientRequestId,
      engine,
      hashes: w.hashes
    })
    engine.load++
    if (w.hashes.length > 0) this.ownership.claim(engine.key, w.hashes)
    // The bodies as they came, but the client's block hashes: they were for routing only, and the
    // engine gets nil in their place. (One frame: the message is frame 0, its bodies views into it.)
    const out = this.wire.single
      ? [metadata]
      : f.map((frame, i) => (i === 0 ? metadata : i === HASHES_FRAME && w.envelope.spec.tag === "SubmitRequest" ? NIL : frame))
    this.pool.deliver(engine, out, w.envelope.spec.header, requestId, w.clientRequestId, w.client)
    if (this.config.debug === true) {
      this.config.log(
        "Debug",
        `coordinator: request ${requestId} (client ${showIdentity(w.client)}'s ${w.clientRequestId}) started on engine ${engine.name}`
      )
    }
  }

  private abort(identity: Buffer, key: string, clientRequestId: number): void {
    const requestId = this.inFlight.idOf(key, clientRequestId)
    const request = requestId === undefined ? undefined : this.inFlight.get(requestId)
    if (request === undefined) {
      // Not yet routed: it never reaches an engine. Otherwise unknown or finished: dropped.
      const before = this.backlog.length
      this.backlog = this.backlog.filter((w) => !(w.clientKey === key && w.clientRequestId === clientRequestId))
      if (this.backlog.length === before) this.counters.abortsDropped++
      return
    }
    // Only decoded where the dialect has ABORT_REQUEST.
    const frame = packHeaderInt(this.wire.ABORT_REQUEST!, requestId!)
    this.pool.deliver(request.engine, [frame], H.ABORT_REQUEST, requestId, clientRequestId, identity)
    if (this.config.debug === true) {
      this.config.log("Debug", `coordinator: request ${requestId} (client ${showIdentity(identity)}'s ${clientRequestId}) aborted`)
    }
  }

  /** A control signal (its metadata already checked by the codec): a state transition, broadcast. */
  private control(header: Headers.Header, metadataFrame: Uint8Array): void {
    if (!this.wire.controlStates) {
      // core_v0.16: forwarded whatever the state; UNPAUSE forgets the PAUSE acks.
      if (header === H.UNPAUSE) this.pauseAcks.clear()
      return this.pool.broadcast(header, metadataFrame)
    }
    const signal = ControlState.signalOf(header)!
    const outcome = ControlState.apply(this.state, signal)
    if (outcome._tag === "Idempotent") {
      this.counters.controlIdempotent++
      return
    }
    if (outcome._tag === "Rejected") {
      this.counters.controlRejected++
      this.config.log("Warn", `coordinator: ignoring ${signal} in state ${this.state}`)
      return
    }
    this.pool.broadcast(header, metadataFrame)
    this.state = outcome.next
  }

  /**
   * core_v0.16's PAUSE_ACK / STOP_ACK from an engine. Once every engine has acked, `[h, identity]`
   * (the last engine's) to every client that connected and `[h]` to every engine; after the
   * STOP_ACKs the loop ends. An engine acking twice (a second PAUSE before an UNPAUSE) fails
   * Megatron's `assert sender_identity not in self.data_parallel_pause_acks`: that coordinator
   * dies, and so does this one.
   */
  private engineAck(identity: Buffer, key: string, signal: "pause" | "stop"): void {
    const acks = signal === "pause" ? this.pauseAcks : this.stopAcks
    const name = signal === "pause" ? "PAUSE_ACK" : "STOP_ACK"
    if (acks.has(key)) {
      this.counters.internalErrors++
      this.config.log("Error", `coordinator: a second ${name} from engine ${showIdentity(identity)}: Megatron-LM core_v0.16's coordinator dies of it (AssertionError); so does this one`)
      return this.close()
    }
    acks.add(key)
    if (acks.size < this.pool.size) return
    const wire = this.wire
    const header = (signal === "pause" ? wire.PAUSE_ACK : wire.STOP_ACK)!
    const notice = writeAck(header, identity)
    for (const client of this.knownClients) this.writer.send([Buffer.from(client, "latin1"), notice])
    for (const engine of this.pool.engines) this.pool.deliver(engine, [packHeader(header)], signal === "pause" ? H.PAUSE_ACK : H.STOP_ACK)
    if (signal === "stop") this.end("every engine acked STOP; the loop ends, as core_v0.16's does")
  }

  private shutdown(): void {
    this.end("SHUTDOWN received; the loop ends (engines are not told)")
  }

  private end(why: string): void {
    this.shutdownReceived = true
    this.running = false
    this.config.log("Info", `coordinator: ${why}`)
    // Let what is already queued leave, then close, as a Python process exiting its loop would.
    const finish = () => this.close()
    const deadline = Date.now() + 1000
    const poll = () => (this.writer.pending === 0 || Date.now() > deadline ? finish() : setTimeout(poll, 5))
    poll()
  }

  private fromEngine(identity: Buffer, key: string, header: number): boolean {
    if (this.pool.known(key)) return true
    this.reject("notFromEngine", identity, `${nameOf(header)} from a peer that never registered as an engine`)
    return false
  }
}
