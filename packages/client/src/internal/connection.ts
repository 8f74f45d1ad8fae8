/**
 * The client's connection to the coordinator: its link (a `Transport`'s: the ZeroMQ DEALER by
 * default), the listener, the registry of requests in flight, and the one connection state, owned
 * together by one scope. The service (`InferenceClient`) talks to it through three local calls:
 * {@link Connection.available} (may anything be sent now?), {@link Connection.register}
 * (validate, encode, register and send a request, in one synchronous step) and
 * {@link Connection.send} (a message that is not a request). It plays the part
 * `makeNoSerialization` plays under Effect's `RpcClient.make`, and the transport the part of
 * `RpcClient.Protocol`. Nothing here is global: a connection is a scoped value, and a pool may
 * hold any number of them.
 *
 * The state (`ConnectionState`) is written here only, from the link's events and the listener's
 * handshake reports; nothing below this module knows it.
 *
 * Release order, when the scope closes (the reverse of acquisition: the link is opened first,
 * the finalizer below is added after it): (1) the state becomes `closed` and every pending
 * request fails with `ClientClosed` (at once, not after the flush); (2) where the dialect's
 * coordinator exits on a reply for a closed client (every Megatron-LM ref), the replies still
 * owed are aborted where the dialect can, and waited for, bounded by `drainTimeout`
 * (`Unanswered`), while the link still reads; then the link's own release (`Link.overSocket`):
 * (3) its reader stops; (4) its writer flushes what is queued, bounded by `closeTimeout`, and
 * its socket closes (see `Writer.closeAfterFlush`).
 *
 * @since 0.1.0
 * @internal
 */
import { Dialect, type Media, type Prompt, type ProtocolError, type SamplingParams, type WireTypes } from "@mcore-effect/protocol"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Result from "effect/Result"
import * as ClientConfig from "../ClientConfig.ts"
import {
  ClientClosed,
  type ClientError,
  type ConnectSeen,
  clientError,
  ConnectTimeout,
  CoordinatorLost,
  HandshakeRejected,
  InvalidRequest,
  RequestAborted,
  RequestTimeout,
  SendFailed,
  StaleConnection
} from "../ClientError.ts"
import type { Recorder } from "../ClientMetrics.ts"
import type { Link } from "./link.ts"
import * as Listener from "./listener.ts"
import { type BatchSink, type Entry, PendingRequests, type Single, singles } from "./pendingRequests.ts"
import { ConnectionState } from "./connectionState.ts"
import { named, Transport } from "../Transport.ts"
import { Unanswered } from "./unanswered.ts"
import { millisOf } from "./arguments.ts"

/**
 * One request, whichever operation made it: what `submit`, `stream` and `submitAll` take (the
 * batch request shape), plus the KV handoff's two fields.
 *
 * @since 0.1.0
 */
export interface Request {
  readonly prompt: Prompt.Prompt
  readonly samplingParams?: SamplingParams.SamplingParamsInput | undefined
  readonly multiModalData?: Media.MultiModalData | null | undefined
  readonly offloadParams?: unknown
  /** A deadline for this request, overriding the client's `requestTimeout`. */
  readonly timeout?: Duration.Input | undefined
  /** Present for a KV handoff (SUBMIT_REQUEST_WITH_KV), with {@link Request.srcBlockIds}. */
  readonly kvMeta?: WireTypes.KvMeta | undefined
  readonly srcBlockIds?: ReadonlyArray<number> | undefined
}

const invalidRequest = (error: ProtocolError.ProtocolError): ClientError => clientError(new InvalidRequest({ error }))

/**
 * Who watches a connection's link from outside (a fleet's member), given when it is made: what
 * arrives is counted, and the link's loss told.
 *
 * @since 0.2.0
 */
export interface Watcher {
  /** Messages received from the coordinator so far: what tells a fleet a stalled link from a busy one. */
  received: number
  /**
   * Called once the transport dropped and the pending requests have failed with
   * `CoordinatorLost` (a fleet takes its member out of routing and redials it then).
   */
  readonly lost: () => void
}

/**
 * The connection.
 *
 * @since 0.1.0
 */
export class Connection {
  readonly state = new ConnectionState()
  readonly pending: PendingRequests
  private nextRequestId = 0
  private readonly closedError = clientError(new ClientClosed())
  private readonly lostError: ClientError
  /** The dialect's CONNECT, and its ABORT_REQUEST when it has one (`undefined`: it has none). */
  readonly connectFrames: ReadonlyArray<Uint8Array>
  private readonly canAbort: boolean
  /** What the coordinator still owes, where closing must wait for it (see `Unanswered`). */
  readonly unanswered: Unanswered | undefined

  constructor(
    readonly config: ClientConfig.ResolvedOptions,
    readonly metrics: Recorder,
    /** The link's writer (see `Transport`). */
    private readonly link: Link,
    /** Logs a warning (from outside the fiber runtime). */
    readonly warn: (message: string) => void,
    /** Who watches the link from outside, if anyone (a fleet's member). */
    private readonly watcher?: Watcher | undefined
  ) {
    this.pending = new PendingRequests(metrics)
    this.lostError = clientError(new CoordinatorLost({ address: config.address }))
    this.connectFrames = Result.getOrThrow(Dialect.encodeClient(config.dialect, { _tag: "Connect" }))
    this.canAbort = config.dialect.features.has("abort")
    this.unanswered = config.dialect.closedClientReply === "exit" ? new Unanswered() : undefined
  }

  /**
   * The frames of a message that is not a request (a signal, a release), in the client's
   * dialect; `InvalidRequest` (`UnsupportedByDialect`) when the dialect cannot carry it.
   */
  encode(message: Dialect.Message): Result.Result<ReadonlyArray<Uint8Array>, ClientError> {
    const frames = Dialect.encodeClient(this.config.dialect, message)
    return Result.isFailure(frames) ? Result.fail(invalidRequest(frames.failure)) : Result.succeed(frames.success)
  }

  /** A new single-reply entry (not registered yet); one function per connection, not per request. */
  readonly newSingle: (requestId: number) => Single = singles(this)

  /** Why nothing may be sent now (`ClientClosed`, `CoordinatorLost`), or `undefined` when it may. */
  available(): ClientError | undefined {
    const phase = this.state.phase
    return phase === "ready" ? undefined : phase === "lost" ? this.lostError : this.closedError
  }

  /** Queues a message that is not a request's (a signal, an abort). Never blocks or throws. */
  send(frames: ReadonlyArray<Uint8Array>): void {
    this.link.send(frames, undefined)
  }

  /**
   * Validates, encodes, registers and queues a request, in one synchronous step so ids go out in
   * the order they are assigned. Nothing is registered or sent when anything is refused.
   */
  register<E extends Entry>(
    request: Request,
    streaming: boolean,
    entryOf: (requestId: number) => E
  ): Result.Result<E, ClientError> {
    const error = this.available()
    if (error !== undefined) return Result.fail(error)
    // A request's deadline: its own `timeout`, else the client's.
    const deadline = millisOf("timeout", request.timeout, this.config.requestTimeoutMillis)
    if (Result.isFailure(deadline)) return Result.fail(deadline.failure)
    const requestId = this.nextRequestId
    const dialect = this.config.dialect
    const message: Result.Result<Dialect.Message, ProtocolError.ProtocolError> = request.kvMeta === undefined
      ? dialect.submit({
        requestId,
        prompt: request.prompt,
        samplingParams: request.samplingParams,
        multiModalData: request.multiModalData,
        offloadParams: request.offloadParams,
        streaming
      }, this.config.hashing)
      : dialect.submitWithKv({
        requestId,
        prompt: request.prompt,
        samplingParams: request.samplingParams,
        kvMeta: request.kvMeta,
        srcBlockIds: request.srcBlockIds ?? [],
        streaming
      })
    if (Result.isFailure(message)) return Result.fail(invalidRequest(message.failure))
    const frames = Dialect.encodeClient(dialect, message.success)
    if (Result.isFailure(frames)) return Result.fail(invalidRequest(frames.failure))
    this.nextRequestId++
    const entry = entryOf(requestId)
    this.pending.add(entry, performance.now())
    const millis = deadline.success
    if (millis !== undefined) this.pending.setTimer(requestId, setTimeout(expire, millis, this, requestId, millis))
    this.link.send(frames.success, requestId)
    return Result.succeed(entry)
  }

  /**
   * Gives up on a pending request (its waiter was interrupted, its stream ended early): the
   * coordinator is told and the request fails with `RequestAborted`. Nothing happens if it is
   * not pending.
   */
  cancel(requestId: number): void {
    this.giveUp(requestId, clientError(new RequestAborted({ requestId })), "aborted")
  }

  /** Cancels every pending request of a batch. */
  cancelBatch(sink: BatchSink): void {
    for (const requestId of this.pending.idsOf(sink)) this.cancel(requestId)
  }

  /**
   * `abort(requestId)`: ABORT_REQUEST whether or not the id is pending here, then the local end.
   * Refused (nothing sent, nothing ended) where the dialect has no ABORT_REQUEST.
   */
  abort(requestId: number): ClientError | undefined {
    const frames = this.encode({ _tag: "AbortRequest", requestId })
    if (Result.isFailure(frames)) return frames.failure
    this.send(frames.success)
    const entry = this.pending.take(requestId)
    if (entry !== undefined) {
      this.unanswered?.add(requestId)
      this.pending.fail(entry, clientError(new RequestAborted({ requestId })), "aborted")
    }
    return undefined
  }

  /**
   * ABORT_REQUEST for a request left pending here (its next reply still reaches its entry).
   * Refused where the dialect has no ABORT_REQUEST; nothing is sent for a request not pending.
   */
  sendAbort(requestId: number): ClientError | undefined {
    const frames = this.encode({ _tag: "AbortRequest", requestId })
    if (Result.isFailure(frames)) return frames.failure
    if (this.pending.get(requestId) !== undefined) this.send(frames.success)
    return undefined
  }

  /**
   * RELEASE_KV for a pin the prefill reply named; with `connection`, only while that is the
   * current connection (else `StaleConnection`, nothing sent).
   */
  releaseKv(requestId: number, connection: number | undefined): ClientError | undefined {
    if (connection !== undefined && connection !== this.state.epoch) {
      return clientError(new StaleConnection({ address: this.config.address, connection, current: this.state.epoch }))
    }
    const frames = this.encode({ _tag: "ReleaseKv", requestId })
    if (Result.isFailure(frames)) return frames.failure
    this.send(frames.success)
    return undefined
  }

  /**
   * @internal the deadline's timer, an interrupted waiter. Where the dialect has no
   * ABORT_REQUEST (Megatron-LM's releases), nothing is sent: the engine runs the request to its
   * end, and its reply, when it comes, is for an id no longer pending here (counted and dropped).
   */
  giveUp(requestId: number, error: ClientError, as: "aborted" | "failed"): void {
    const entry = this.pending.take(requestId)
    if (entry === undefined) return
    // Not the request's own message: a failure to send it fails nothing.
    if (this.canAbort && this.state.phase === "ready") {
      this.send(Result.getOrThrow(Dialect.encodeClient(this.config.dialect, { _tag: "AbortRequest", requestId })))
    }
    this.unanswered?.add(requestId)
    this.pending.fail(entry, error, as)
  }

  // -------------------------------------------------------------------------------------------
  // What the socket and the listener report
  // -------------------------------------------------------------------------------------------

  /** The transport came up. */
  up(): void {
    if (this.state.up()) this.send(this.connectFrames)
  }

  /** The transport dropped. */
  down(): void {
    if (!this.state.down()) return
    this.warn(`lost the coordinator; failing ${this.pending.size} pending request(s)`)
    this.unanswered?.forget()
    this.pending.failAll(this.lostError)
    this.watcher?.lost()
  }

  /** ZeroMQ refused a message. */
  sendFailed(requestId: number | undefined, cause: unknown): void {
    const entry = requestId === undefined ? undefined : this.pending.take(requestId)
    if (entry !== undefined) {
      this.pending.fail(entry, clientError(new SendFailed({ requestId: entry.requestId, cause })), "failed")
      return
    }
    // Given up on before its send failed: it never went out, so no reply is owed.
    if (requestId !== undefined) this.unanswered?.done(requestId)
    if (this.state.phase !== "closed") {
      this.warn(`a message to the coordinator was not sent: ${String(cause)}`)
    }
  }

  /** The scope is closing: every pending request fails with `ClientClosed`, now. */
  close(): void {
    this.state.close()
    const unanswered = this.unanswered
    if (unanswered !== undefined) for (const requestId of this.pending.ids()) unanswered.add(requestId)
    this.pending.failAll(this.closedError)
  }

  /**
   * After {@link close}, where the dialect's coordinator exits on a reply for a closed client:
   * aborts what is still owed (where the dialect has ABORT_REQUEST: Megatron's engines then end
   * those requests at their next step and reply at once) and waits for those replies, at most
   * `drainTimeout`; past it, warns and closes anyway. Nothing to wait for when the coordinator
   * is not connected (what it owed is lost with the connection).
   */
  drain(): Effect.Effect<void> {
    const unanswered = this.unanswered
    if (unanswered === undefined || unanswered.size === 0 || !this.state.linkUp) return Effect.void
    const owed = unanswered.owed()
    if (this.canAbort) {
      for (const requestId of owed) {
        this.send(Result.getOrThrow(Dialect.encodeClient(this.config.dialect, { _tag: "AbortRequest", requestId })))
      }
    }
    const millis = this.config.drainTimeoutMillis
    return Effect.map(unanswered.settled(millis), (settled) => {
      if (settled) return
      this.warn(
        `closing with ${unanswered.size} of ${owed.length} request(s) still running on the coordinator after ` +
          `drainTimeout (${millis} ms): the ${this.config.dialect.name} coordinator exits when it routes their ` +
          `replies to this closed client`
      )
    })
  }
}

const expire = (connection: Connection, requestId: number, millis: number): void =>
  connection.giveUp(requestId, clientError(new RequestTimeout({ requestId, timeoutMillis: millis })), "failed")

/**
 * Opens the connection through the current `Transport` (ZeroMQ unless another is provided) and
 * performs the CONNECT / CONNECT_ACK handshake, failing with `ConnectTimeout` (after
 * `connectTimeout` from the start, or `ackTimeout` from the connection coming up),
 * `HandshakeRejected` or `InvalidAddress`; everything is released when the scope closes (in the
 * order the header gives). Each call opens a link of its own: connections share nothing but
 * the transport, so a pool may hold many, to one coordinator or to several.
 *
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function*(
  config: ClientConfig.ResolvedOptions,
  metrics: Recorder,
  warn: (message: string) => void,
  watcher?: Watcher | undefined
) {
  // The option's transport, when it names one, over the provided one.
  const transport = named(config.transport) ?? (yield* Transport)
  // What the transport saw before the first CONNECT_ACK, for a ConnectTimeout to say.
  let seen: ConnectSeen = "nothing"
  const firstAck = Deferred.makeUnsafe<void, ClientError>()
  // Done when a connection first comes up while CONNECT_ACK is awaited: `ackTimeout` runs from
  // there, not from the dial's start (see `ClientConfig.settings.ackTimeout`).
  const pipeUp = Deferred.makeUnsafe<void>()
  let connection!: Connection
  const listener: Omit<Listener.Options, "pending" | "unanswered"> = {
    dialect: config.dialect,
    metrics,
    deserialize: config.deserialize,
    maxFrameBytes: config.maxFrameBytes,
    maxDecodedBytes: config.maxDecodedBytes,
    warn,
    handshake: {
      awaitingFirstAck: () => connection.state.awaitingFirstAck,
      received: () => {
        connection.state.linkUp = true
      },
      acknowledged: () => {
        const outcome = connection.state.acknowledged()
        if (outcome === "first") Deferred.doneUnsafe(firstAck, Exit.void)
        else if (outcome === "back") warn("the coordinator is back (CONNECT_ACK)")
      },
      rejected: (received) => {
        Deferred.doneUnsafe(firstAck, Exit.fail(clientError(new HandshakeRejected({ address: config.address, received }))))
      }
    }
  }
  // Released last: the reader stops, the writer flushes, the link closes.
  yield* transport.open(config, (link) => {
    // Made here, with the link's writer and before the link connects: whatever the link reports
    // (from a later turn) finds the connection there.
    connection = new Connection(config, metrics, link, warn, watcher)
    const options: Listener.Options = { ...listener, pending: connection.pending, unanswered: connection.unanswered }
    return {
      message: watcher === undefined ? (frames) => Listener.handle(options, frames) : (frames) => {
        watcher.received++
        Listener.handle(options, frames)
      },
      up: () => {
        if (connection.state.awaitingFirstAck) {
          seen = "connected"
          Deferred.doneUnsafe(pipeUp, Exit.void)
        }
        connection.up()
      },
      down: () => connection.down(),
      connecting: config.connectTimeoutMillis === Infinity ? undefined : (next) => {
        if (connection.state.awaitingFirstAck && seen !== "connected") seen = next
      },
      sendFailed: (requestId, cause) => connection.sendFailed(requestId, cause),
      handlerFailed: (cause) => {
        // Not expected (decoding returns errors, it does not throw); but nothing that arrives
        // may end the reading.
        metrics.malformed()
        warn(`a message from the coordinator broke its handler: ${String(cause)}`)
      },
      receiveFailed: (cause) => warn(`receive failed: ${cause instanceof Error ? cause.message : String(cause)}`)
    }
  })

  // Runs first at scope close: from here on every operation fails with ClientClosed, and what is
  // pending fails now rather than after the link has flushed its queue; then what is owed drains
  // while the link still reads.
  yield* Effect.addFinalizer(() =>
    Effect.suspend(() => {
      connection.close()
      return connection.drain()
    })
  )

  connection.send(connection.connectFrames)
  // A connection that is up and unanswered for `ackTimeout` is closed by the caller at once (the
  // scope's release): a coordinator that swallowed the CONNECT would otherwise keep routing to it.
  const acknowledged = config.ackTimeoutMillis === Infinity ? Deferred.await(firstAck) : Effect.raceFirst(
    Deferred.await(firstAck),
    Deferred.await(pipeUp).pipe(
      Effect.andThen(Effect.sleep(Duration.millis(config.ackTimeoutMillis))),
      Effect.andThen(Effect.fail(
        clientError(new ConnectTimeout({ address: config.address, timeoutMillis: config.ackTimeoutMillis, seen: "connected" }))
      ))
    )
  )
  yield* acknowledged.pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(config.connectTimeoutMillis),
      orElse: () =>
        Effect.fail(clientError(new ConnectTimeout({ address: config.address, timeoutMillis: config.connectTimeoutMillis, seen })))
    })
  )
  return connection
})
