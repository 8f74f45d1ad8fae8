/**
 * The client of a Megatron-LM Core inference coordinator, as an Effect service: the Python
 * `InferenceClient` (submit, stream, KV handoff, abort, control signals), with a typed error for
 * every failure, interruption as abort, and liveness instead of hanging.
 *
 * @since 0.1.0
 */
import {
  type Media,
  Messages,
  PrefixHashing,
  Prompt,
  type ProtocolError,
  Reply as ProtocolReply,
  type SamplingParams,
  Submission,
  type WireTypes
} from "@mcore-effect/protocol"
import type * as Config from "effect/Config"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Effectable from "effect/Effectable"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as References from "effect/References"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import * as ClientConfig from "./ClientConfig.ts"
import {
  ClientClosed,
  type ClientError,
  clientError,
  ConnectTimeout,
  CoordinatorLost,
  HandshakeRejected,
  InvalidAddress,
  InvalidArgument,
  InvalidRequest,
  RequestAborted,
  RequestTimeout,
  SendFailed
} from "./ClientError.ts"
import { Recorder } from "./ClientMetrics.ts"
import * as CoordinatorSocket from "./CoordinatorSocket.ts"
import * as Listener from "./Listener.ts"
import * as PendingRequests from "./PendingRequests.ts"

/**
 * A finished request: the raw reply map with `latency` when the client was built with
 * `deserialize: false` (the default), the typed `DynamicInferenceRequest` (also with `latency`)
 * when `deserialize: true`. Tell them apart with {@link isDeserialized}.
 *
 * @since 0.1.0
 */
export type Reply = Listener.AnyReply

/**
 * The raw reply map plus `latency` (seconds from submission, a float).
 *
 * @since 0.1.0
 */
export type RawReply = Listener.RawReply

/**
 * True for a typed reply (a client built with `deserialize: true`).
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const tokens = Effect.gen(function*() {
 *   const client = yield* InferenceClient.InferenceClient
 *   const reply = yield* client.submit("Hello")
 *   return InferenceClient.isDeserialized(reply) ? reply.generated_tokens : reply.generated_tokens
 * })
 * ```
 *
 * @since 0.1.0
 */
export const isDeserialized = (reply: Reply): reply is ProtocolReply.DynamicInferenceRequest =>
  reply instanceof ProtocolReply.DynamicInferenceRequest

/**
 * One event of a streamed request: `Partial`s (new tokens, in order), then exactly one `Final`.
 *
 * @since 0.1.0
 */
export type StreamEvent = PendingRequests.StreamEvent<Reply>

/**
 * New tokens of a streamed request, in order.
 *
 * @since 0.1.0
 */
export type Partial = PendingRequests.Partial

/**
 * The last event of a streamed request: its reply.
 *
 * @since 0.1.0
 */
export type Final = PendingRequests.Final<Reply>

/**
 * A prompt: text, or token ids (an array or an integer typed array).
 *
 * @since 0.1.0
 */
export type PromptInput = Prompt.Prompt

/**
 * Options of a submission.
 *
 * @since 0.1.0
 */
export interface SubmitOptions {
  /** vLLM-style modality map: `image` and/or `video` (raw bytes, a list of them, or tensors). */
  readonly multiModalData?: Media.MultiModalData | null | undefined
  /** Opaque metadata for the engine's payload stager; any msgpack-encodable value. */
  readonly offloadParams?: unknown
  /** A deadline for this request, overriding the client's `requestTimeout`. */
  readonly timeout?: Duration.Input | undefined
}

/**
 * Options of a KV handoff submission.
 *
 * @since 0.1.0
 */
export interface HandoffOptions {
  /** A deadline for this request, overriding the client's `requestTimeout`. */
  readonly timeout?: Duration.Input | undefined
}

/**
 * A submitted request: its id (what `abort` takes) and its reply, to await. Interrupting the
 * fiber awaiting `reply` aborts the request.
 *
 * @since 0.1.0
 */
export interface Submitted {
  readonly requestId: number
  readonly reply: Effect.Effect<Reply, ClientError>
}

/**
 * One request of a {@link Service.submitAll} batch: what `submit` takes, as one object.
 *
 * @since 0.1.0
 */
export interface BatchRequest extends SubmitOptions {
  readonly prompt: PromptInput
  readonly samplingParams?: SamplingParams.SamplingParamsInput | undefined
}

/**
 * A finished request of a {@link Service.submitAll} batch: its position in the input, its id and
 * its reply.
 *
 * @since 0.1.0
 */
export interface BatchReply {
  readonly index: number
  readonly requestId: number
  readonly reply: Reply
}

/**
 * Options of {@link Service.submitAll}.
 *
 * @since 0.1.0
 */
export interface SubmitAllOptions {
  /**
   * Requests in flight at once (default: all of them). A place frees when a reply arrives, not
   * when the stream's consumer takes it: replies the consumer has not reached yet wait in the
   * stream's buffer.
   */
  readonly concurrency?: number | "unbounded" | undefined
}

/**
 * The service.
 *
 * @since 0.1.0
 */
export interface Service {
  /**
   * Submits a request and waits for its reply. Interrupting the wait aborts the request on the
   * coordinator. Nothing is sent when the prompt, parameters or media are refused.
   */
  readonly submit: (
    prompt: PromptInput,
    samplingParams?: SamplingParams.SamplingParamsInput | undefined,
    options?: SubmitOptions | undefined
  ) => Effect.Effect<Reply, ClientError>
  /** Submits a request and returns at once with its id and its reply to await. */
  readonly submitWithId: (
    prompt: PromptInput,
    samplingParams?: SamplingParams.SamplingParamsInput | undefined,
    options?: SubmitOptions | undefined
  ) => Effect.Effect<Submitted, ClientError>
  /**
   * Submits many requests and streams their replies as they finish (in completion order; `index`
   * tells which input each answers), keeping at most `concurrency` in flight. No fiber waits per
   * request: each pending request costs about a tenth of what a `submit` in its own fiber costs,
   * which is what a rollout driver with 100,000 prompts in flight wants. Like `Effect.forEach`,
   * the first failure (an invalid request, a deadline, the coordinator lost) fails the stream and
   * aborts the requests still in flight; so does ending consumption early.
   */
  readonly submitAll: (
    requests: Iterable<BatchRequest>,
    options?: SubmitAllOptions | undefined
  ) => Stream.Stream<BatchReply, ClientError>
  /**
   * A streamed request, submitted when the stream is run (with `streaming` forced on): its
   * partials in order, then its final reply, then the end. Ending consumption early aborts it.
   */
  readonly stream: (
    prompt: PromptInput,
    samplingParams?: SamplingParams.SamplingParamsInput | undefined,
    options?: SubmitOptions | undefined
  ) => Stream.Stream<StreamEvent, ClientError>
  /**
   * A decode request carrying the prefill peer's KV metadata: the decode engine pulls the KV from
   * `srcBlockIds` on the peer `kvMeta` describes, then generates.
   */
  readonly submitWithKvHandoff: (
    prompt: PromptInput,
    samplingParams: SamplingParams.SamplingParamsInput | undefined,
    kvMeta: WireTypes.KvMeta,
    srcBlockIds: ReadonlyArray<number>,
    options?: HandoffOptions | undefined
  ) => Effect.Effect<Reply, ClientError>
  /** {@link Service.submitWithKvHandoff}, streamed. */
  readonly streamWithKvHandoff: (
    prompt: PromptInput,
    samplingParams: SamplingParams.SamplingParamsInput | undefined,
    kvMeta: WireTypes.KvMeta,
    srcBlockIds: ReadonlyArray<number>,
    options?: HandoffOptions | undefined
  ) => Stream.Stream<StreamEvent, ClientError>
  /** Tells every engine to release the KV blocks pinned for `requestId` (fire-and-forget). */
  readonly releaseHandoff: (requestId: number) => Effect.Effect<void, ClientError>
  /**
   * Cancels a request on the coordinator; whatever waits for it here fails with `RequestAborted`.
   */
  readonly abort: (requestId: number) => Effect.Effect<void, ClientError>
  /** PAUSE to every engine. */
  readonly pauseEngines: () => Effect.Effect<void, ClientError>
  /** UNPAUSE to every engine. */
  readonly unpauseEngines: () => Effect.Effect<void, ClientError>
  /** SUSPEND to every engine (requires PAUSED). */
  readonly suspendEngines: () => Effect.Effect<void, ClientError>
  /** RESUME to every engine (requires SUSPENDED). */
  readonly resumeEngines: () => Effect.Effect<void, ClientError>
  /** STOP to every engine (requires PAUSED or SUSPENDED); does not affect the coordinator. */
  readonly stopEngines: () => Effect.Effect<void, ClientError>
  /** Stamps every in-flight request with a generation epoch. */
  readonly setGenerationEpoch: (generationEpoch: number) => Effect.Effect<void, ClientError>
  /** START_CUDA_PROFILER to every engine. */
  readonly startCudaProfiler: () => Effect.Effect<void, ClientError>
  /** STOP_CUDA_PROFILER to every engine. */
  readonly stopCudaProfiler: () => Effect.Effect<void, ClientError>
  /** Tells the coordinator to exit its loop; does not affect the engines. */
  readonly shutdownCoordinator: () => Effect.Effect<void, ClientError>
  /**
   * The routing hashes this client sends in frame 2 for a prompt: `null` when it does not hash
   * (text prompt, or block size or prefix policy not configured), else one hash per full block,
   * salted by `mediaCacheKey` when given.
   */
  readonly blockHashes: (
    prompt: PromptInput,
    mediaCacheKey?: string | null | undefined
  ) => Effect.Effect<BigUint64Array | null, ClientError>
  /** Requests in flight (submitted, neither finished nor aborted). */
  readonly pendingCount: Effect.Effect<number>
}

/**
 * The `InferenceClient` service.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* InferenceClient.InferenceClient
 *   const reply = yield* client.submit([1, 2, 3, 4], { num_tokens_to_generate: 16 })
 *   return reply.latency
 * }).pipe(Effect.provide(InferenceClient.layer({ address: "tcp://127.0.0.1:5555" })))
 * ```
 *
 * @since 0.1.0
 */
export class InferenceClient extends Context.Service<InferenceClient, Service>()(
  "@mcore-effect/client/InferenceClient"
) {}

type State = "connecting" | "ready" | "lost" | "closed"

/**
 * The effect of `submit`, `submitWithId` and `submitWithKvHandoff`: one small object holding the
 * call's arguments, which runs `start` when evaluated. Not a chain of closures, because
 * `Effect.forEach` and its kin keep each item's effect until the item's fiber ends: at 100,000
 * requests in flight, whatever this effect holds is paid per request (the closures it replaces
 * held about 250 bytes; this holds under 100).
 */
class SingleRequest<A> {
  constructor(
    readonly start: (request: SingleRequest<unknown>, fiber: Fiber.Fiber<unknown, unknown>) => Effect.Effect<unknown, ClientError>,
    readonly kind: keyof typeof SPAN_NAMES,
    readonly prompt: PromptInput,
    readonly samplingParams: SamplingParams.SamplingParamsInput | undefined,
    readonly options: SubmitOptions | HandoffOptions | undefined,
    readonly kvMeta: WireTypes.KvMeta | undefined,
    readonly srcBlockIds: ReadonlyArray<number> | undefined
  ) {}
}

interface SingleRequest<A> extends Effect.Effect<A, ClientError> {}

Object.setPrototypeOf(
  SingleRequest.prototype,
  Effectable.Prototype<SingleRequest<unknown>>({
    label: "InferenceClient.request",
    evaluate(fiber) {
      return this.start(this, fiber)
    }
  })
)

const SPAN_NAMES = {
  submit: "InferenceClient.submit",
  submitWithId: "InferenceClient.submitWithId",
  handoff: "InferenceClient.submitWithKvHandoff"
} as const

const encodeConstant = (message: Messages.ClientMessage): ReadonlyArray<Uint8Array> =>
  Result.getOrThrow(Messages.Client.encode(message))

const CONNECT = encodeConstant({ _tag: "Connect" })

/** The span attribute naming a request. */
const REQUEST_ID = "mcore.request_id"

/**
 * Whether a tracing backend is installed. Per-request spans on the submission path cost more
 * than the rest of the client's own work (a span, its context and its fiber cache, measured at
 * ~2 KB and several µs a request); with the built-in native tracer nobody can see them, so they
 * are made only when someone can (as `Tracer.nativeTracer`'s documentation suggests).
 */
const tracing = (fiber: Fiber.Fiber<unknown, unknown>): boolean =>
  fiber.getRef(References.TracerEnabled) && fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer

const invalidRequest = (error: ProtocolError.ProtocolError): ClientError =>
  clientError(new InvalidRequest({ error }))

const invalidArgument = (name: string, why: string): ClientError =>
  clientError(new InvalidArgument({ name, why }))

const checkRequestId = (requestId: number): ClientError | undefined =>
  Number.isSafeInteger(requestId) && requestId >= 0
    ? undefined
    : invalidArgument("requestId", `expected a non-negative integer, got ${String(requestId)}`)

const noDeadline = Result.succeed(undefined)

const timeoutMillis = (
  input: Duration.Input | undefined,
  fallback: number | undefined
): Result.Result<number | undefined, ClientError> => {
  if (input === undefined) return fallback === undefined ? noDeadline : Result.succeed(fallback)
  const duration = Duration.fromInput(input)
  if (duration._tag === "None") return Result.fail(invalidArgument("timeout", `not a duration: ${String(input)}`))
  const millis = Duration.toMillis(duration.value)
  return millis >= 0 && !Number.isNaN(millis)
    ? Result.succeed(millis === Infinity ? undefined : millis)
    : Result.fail(invalidArgument("timeout", "must not be negative"))
}

/**
 * Builds the client: opens the socket, performs the CONNECT / CONNECT_ACK handshake and starts
 * the listener, all owned by the current scope. Closing the scope fails every pending request
 * and stream with `ClientClosed`, stops the listener and closes the socket. {@link layer} is this
 * as a `Layer`.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const once = Effect.gen(function*() {
 *   const client = yield* InferenceClient.make({ address: "ipc:///tmp/coordinator.sock" })
 *   return yield* client.submit("Hello", { num_tokens_to_generate: 4 })
 * }).pipe(Effect.scoped) // the client closes here
 * ```
 *
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function*(options: ClientConfig.ClientOptions) {
  const config = ClientConfig.resolve(options)
  const { address } = config
  // Nothing is opened for an address or options the client does not accept.
  const badAddress = ClientConfig.addressProblem(address)
  if (badAddress !== undefined) return yield* Effect.fail(clientError(new InvalidAddress({ address, why: badAddress })))
  const badOption = ClientConfig.optionProblem(config)
  if (badOption !== undefined) return yield* Effect.fail(invalidArgument(badOption.name, badOption.why))
  const context = yield* Effect.context<never>()
  const metrics = new Recorder(context)
  const runFork = Effect.runForkWith(context)
  const warn = (message: string): void => {
    runFork(Effect.logWarning(message).pipe(Effect.annotateLogs({ coordinator: address })))
  }

  let state: State = "connecting"
  let nextRequestId = 0
  let connections = 0
  const firstAck = Deferred.makeUnsafe<void, ClientError>()
  const closedError = clientError(new ClientClosed())
  const lostError = clientError(new CoordinatorLost({ address }))

  const pending = yield* PendingRequests.make<Reply>(metrics, {
    onClose: () => closedError,
    // Not the request's own message: a failure to send it fails nothing.
    sendAbort: (requestId) => {
      if (state === "ready") socket.send(encodeConstant({ _tag: "AbortRequest", requestId }), -1)
    }
  })

  const socket = yield* CoordinatorSocket.make({
    address,
    heartbeatIntervalMillis: config.heartbeatIntervalMillis,
    heartbeatTimeoutMillis: config.heartbeatTimeoutMillis,
    // Twice the soft limit: a reply a little over it fails alone; a monstrous frame is never held.
    maxMessageBytes: 2 * config.maxFrameBytes,
    curve: config.curve,
    closeTimeoutMillis: config.closeTimeoutMillis,
    events: {
      onUp: () => {
        // A new connection (after a loss, or after the first one dropped before its
        // CONNECT_ACK): the coordinator on the other end does not know it, so say CONNECT again;
        // submissions resume at its CONNECT_ACK. The first connection's CONNECT is already queued.
        connections++
        if (state === "lost" || (state === "connecting" && connections > 1)) socket.send(CONNECT, -1)
      },
      onDown: () => {
        if (state !== "ready") return
        state = "lost"
        warn(`lost the coordinator; failing ${pending.size} pending request(s)`)
        pending.failAll(lostError)
      },
      onSendError: (requestId, cause) => {
        const entry = requestId >= 0 ? pending.take(requestId) : undefined
        if (entry !== undefined) {
          pending.fail(entry, clientError(new SendFailed({ requestId, cause })), "failed")
        } else if (state !== "closed") {
          warn(`a message to the coordinator was not sent: ${String(cause)}`)
        }
      }
    }
  })

  yield* Listener.make({
    socket,
    pending,
    metrics,
    deserialize: config.deserialize,
    maxFrameBytes: config.maxFrameBytes,
    maxDecodedBytes: config.maxDecodedBytes,
    warn,
    handshake: {
      awaitingFirstAck: () => state === "connecting",
      acknowledged: () => {
        if (state === "connecting") {
          state = "ready"
          Deferred.doneUnsafe(firstAck, Exit.void)
        } else if (state === "lost") {
          state = "ready"
          warn("the coordinator is back (CONNECT_ACK)")
        }
      },
      rejected: (received) => {
        Deferred.doneUnsafe(firstAck, Exit.fail(clientError(new HandshakeRejected({ address, received }))))
      }
    }
  })

  // Runs first at scope close: from here on every operation fails with ClientClosed, and what is
  // pending fails now rather than after the socket has flushed its queue.
  yield* Effect.addFinalizer(() =>
    Effect.sync(() => {
      state = "closed"
      pending.failAll(closedError)
    })
  )

  socket.send(CONNECT, -1)
  yield* Deferred.await(firstAck).pipe(
    Effect.timeoutOrElse({
      duration: Duration.millis(config.connectTimeoutMillis),
      orElse: () =>
        Effect.fail(clientError(new ConnectTimeout({ address, timeoutMillis: config.connectTimeoutMillis })))
    })
  )

  // ------------------------------------------------------------------------------------------
  // Sending
  // ------------------------------------------------------------------------------------------

  const unavailable = (): ClientError | undefined =>
    state === "ready" ? undefined : state === "lost" ? lostError : closedError

  /** Interruption or early end of a stream: abort, if the request is still pending. */
  const cancel = (requestId: number): void =>
    pending.abort(requestId, clientError(new RequestAborted({ requestId })), "aborted")

  const expire = (requestId: number, millis: number): void =>
    pending.abort(requestId, clientError(new RequestTimeout({ requestId, timeoutMillis: millis })), "failed")

  /**
   * Validates, encodes, registers and queues a request, in one synchronous step so ids go out in
   * the order they are assigned. Nothing is registered or sent when anything is refused.
   */
  const register = <E extends PendingRequests.Entry<Reply>>(
    build: (requestId: number) => Result.Result<Messages.ClientMessage, ProtocolError.ProtocolError>,
    entryOf: (requestId: number, startedAt: number) => E,
    timeout: Duration.Input | undefined
  ): Result.Result<E, ClientError> => {
    const error = unavailable()
    if (error !== undefined) return Result.fail(error)
    const deadline = timeoutMillis(timeout, config.requestTimeoutMillis)
    if (Result.isFailure(deadline)) return Result.fail(deadline.failure)
    const requestId = nextRequestId
    const message = build(requestId)
    if (Result.isFailure(message)) return Result.fail(invalidRequest(message.failure))
    const frames = Messages.Client.encode(message.success)
    if (Result.isFailure(frames)) return Result.fail(invalidRequest(frames.failure))
    nextRequestId++
    const entry = entryOf(requestId, performance.now())
    pending.add(entry)
    const millis = deadline.success
    if (millis !== undefined) entry.timer = setTimeout(expire, millis, requestId, millis)
    socket.send(frames.success, requestId)
    return Result.succeed(entry)
  }

  const newSingle = (requestId: number, startedAt: number) => pending.single(requestId, startedAt)

  /** Waits for the reply; interrupting the wait aborts the request (the entry is that effect). */
  const awaitReply = (entry: PendingRequests.Single<Reply>): Effect.Effect<Reply, ClientError> =>
    Effect.callback<Reply, ClientError>((resume) => {
      entry.listen(resume)
      if (entry.exit === undefined) return entry
    })

  /**
   * A single-reply operation, run by `fiber`: registers the request and continues with `then`,
   * in a span named for the operation and carrying the request id when a tracer is installed.
   */
  const single = <A>(
    fiber: Fiber.Fiber<unknown, unknown>,
    name: string,
    build: (requestId: number) => Result.Result<Messages.ClientMessage, ProtocolError.ProtocolError>,
    timeout: Duration.Input | undefined,
    then: (entry: PendingRequests.Single<Reply>) => Effect.Effect<A, ClientError>
  ): Effect.Effect<A, ClientError> => {
    if (!tracing(fiber)) {
      const registered = register(build, newSingle, timeout)
      return Result.isFailure(registered) ? Effect.fail(registered.failure) : then(registered.success)
    }
    return Effect.useSpan(name, (span) => {
      const registered = register(build, newSingle, timeout)
      if (Result.isFailure(registered)) return Effect.fail(registered.failure)
      span.attribute(REQUEST_ID, registered.success.requestId)
      return then(registered.success)
    })
  }

  const withId = (entry: PendingRequests.Single<Reply>): Effect.Effect<Submitted, ClientError> =>
    Effect.succeed({ requestId: entry.requestId, reply: awaitReply(entry) })

  /** What a {@link SingleRequest} does when it is run. */
  const startSingle = (request: SingleRequest<unknown>, fiber: Fiber.Fiber<unknown, unknown>) => {
    const { kind, prompt, samplingParams } = request
    const build = kind === "handoff"
      ? handoff(prompt, samplingParams, request.kvMeta!, request.srcBlockIds!, false)
      : submission(prompt, samplingParams, request.options, false)
    const timeout = request.options?.timeout
    return kind === "submitWithId"
      ? single(fiber, SPAN_NAMES[kind], build, timeout, withId)
      : single(fiber, SPAN_NAMES[kind], build, timeout, awaitReply)
  }

  const submission = (
    prompt: PromptInput,
    samplingParams: SamplingParams.SamplingParamsInput | undefined,
    options: SubmitOptions | undefined,
    streaming: boolean
  ) =>
  (requestId: number) =>
    Submission.submitRequest({
      requestId,
      prompt,
      samplingParams,
      multiModalData: options?.multiModalData,
      offloadParams: options?.offloadParams,
      streaming
    }, config.hashing)

  const handoff = (
    prompt: PromptInput,
    samplingParams: SamplingParams.SamplingParamsInput | undefined,
    kvMeta: WireTypes.KvMeta,
    srcBlockIds: ReadonlyArray<number>,
    streaming: boolean
  ) =>
  (requestId: number) => Submission.submitRequestWithKv({ requestId, prompt, samplingParams, kvMeta, srcBlockIds, streaming })

  /** Runs `start` in a span named `name` for the stream's lifetime, when a tracer is installed. */
  const inStreamSpan = <A>(
    fiber: Fiber.Fiber<unknown, unknown>,
    name: string,
    start: (span: Tracer.Span | undefined) => Effect.Effect<A, ClientError, Scope.Scope>
  ): Effect.Effect<A, ClientError, Scope.Scope> => {
    if (!tracing(fiber)) return start(undefined)
    return Effect.makeSpan(name).pipe(
      Effect.tap((span) =>
        Effect.addFinalizer((exit) =>
          Effect.clockWith((clock) => Effect.sync(() => span.end(clock.currentTimeNanosUnsafe(), exit)))
        )
      ),
      Effect.flatMap(start)
    )
  }

  /**
   * A streamed operation: the request is registered when the stream starts, with the stream's
   * queue as its entry; the stream's end (or its consumer stopping) aborts it if still pending.
   */
  const streamed = (
    name: string,
    build: (requestId: number) => Result.Result<Messages.ClientMessage, ProtocolError.ProtocolError>,
    timeout: Duration.Input | undefined
  ): Stream.Stream<StreamEvent, ClientError> =>
    Stream.callback<StreamEvent, ClientError>((queue) =>
      Effect.withFiber((fiber) => {
        const start = (span: Tracer.Span | undefined) => {
          const registered = register(
            build,
            (requestId, startedAt) => new PendingRequests.Streamed<Reply>(requestId, startedAt, queue),
            timeout
          )
          if (Result.isFailure(registered)) return Effect.fail(registered.failure)
          const { requestId } = registered.success
          span?.attribute(REQUEST_ID, requestId)
          return Effect.addFinalizer(() => Effect.sync(() => cancel(requestId)))
        }
        return inStreamSpan(fiber, name, start)
      })
    )

  /**
   * A batch: requests are registered while fewer than `concurrency` are in flight, each next one
   * as a reply frees a place (from the listener, synchronously); replies go to the stream's queue.
   */
  const batch = (requests: Iterable<BatchRequest>, options: SubmitAllOptions | undefined) =>
    Stream.callback<BatchReply, ClientError>((queue) =>
      Effect.withFiber((fiber) => {
        const concurrency = options?.concurrency === undefined || options.concurrency === "unbounded"
          ? Infinity
          : options.concurrency
        if (!(concurrency >= 1)) {
          return Effect.fail(invalidArgument("concurrency", `expected at least 1, got ${String(options?.concurrency)}`))
        }
        return inStreamSpan(fiber, "InferenceClient.submitAll", (span) => {
          let iterator: Iterator<BatchRequest>
          try {
            iterator = requests[Symbol.iterator]()
          } catch (cause) {
            return Effect.fail(invalidArgument("requests", `not iterable: ${String(cause)}`))
          }
          let next = 0
          let inFlight = 0
          let exhausted = false
          let ended = false
          const end = (error: ClientError | undefined): void => {
            if (ended) return
            ended = true
            if (error === undefined) {
              Queue.endUnsafe(queue)
            } else {
              pending.abortBatch(sink)
              Queue.failCauseUnsafe(queue, Cause.fail(error))
            }
          }
          const sink: PendingRequests.BatchSink<Reply> = {
            completed: (entry, reply) => {
              inFlight--
              Queue.offerUnsafe(queue, { index: entry.index, requestId: entry.requestId, reply })
              fill()
            },
            failed: (_, error) => {
              inFlight--
              end(error)
            }
          }
          const fill = (): void => {
            while (!ended && !exhausted && inFlight < concurrency) {
              let item: IteratorResult<BatchRequest>
              try {
                item = iterator.next()
              } catch (cause) {
                return end(invalidArgument("requests", `the iterator threw: ${String(cause)}`))
              }
              if (item.done === true) {
                exhausted = true
                break
              }
              const index = next++
              const request = item.value
              const registered = register(
                submission(request.prompt, request.samplingParams, request, false),
                (requestId, startedAt) => new PendingRequests.Batched<Reply>(sink, index, requestId, startedAt),
                request.timeout
              )
              if (Result.isFailure(registered)) return end(registered.failure)
              inFlight++
            }
            if (exhausted && inFlight === 0) end(undefined)
          }
          fill()
          span?.attribute("mcore.batch_size", next)
          return Effect.addFinalizer(() =>
            Effect.sync(() => {
              // The consumer stopped early: what is still in flight is aborted.
              if (!ended) {
                ended = true
                pending.abortBatch(sink)
              }
            })
          )
        })
      })
    )

  const signal = (name: string, message: Messages.ClientMessage) => {
    const frames = encodeConstant(message)
    return Effect.fn(name)(function*() {
      const error = unavailable()
      if (error !== undefined) return yield* Effect.fail(error)
      socket.send(frames, -1)
    })
  }

  const sendWithId = (
    name: string,
    message: (requestId: number) => Messages.ClientMessage,
    local: (requestId: number) => void
  ) =>
    Effect.fn(name)(function*(requestId: number) {
      yield* Effect.annotateCurrentSpan("mcore.request_id", requestId)
      const invalid = checkRequestId(requestId)
      if (invalid !== undefined) return yield* Effect.fail(invalid)
      const error = unavailable()
      if (error !== undefined) return yield* Effect.fail(error)
      socket.send(encodeConstant(message(requestId)), -1)
      local(requestId)
    })

  return InferenceClient.of({
    submit: (prompt, samplingParams, options) =>
      new SingleRequest<Reply>(startSingle, "submit", prompt, samplingParams, options, undefined, undefined),
    submitWithId: (prompt, samplingParams, options) =>
      new SingleRequest<Submitted>(startSingle, "submitWithId", prompt, samplingParams, options, undefined, undefined),
    submitAll: batch,
    stream: (prompt, samplingParams, options) =>
      streamed("InferenceClient.stream", submission(prompt, samplingParams, options, true), options?.timeout),
    submitWithKvHandoff: (prompt, samplingParams, kvMeta, srcBlockIds, options) =>
      new SingleRequest<Reply>(startSingle, "handoff", prompt, samplingParams, options, kvMeta, srcBlockIds),
    streamWithKvHandoff: (prompt, samplingParams, kvMeta, srcBlockIds, options) =>
      streamed(
        "InferenceClient.streamWithKvHandoff",
        handoff(prompt, samplingParams, kvMeta, srcBlockIds, true),
        options?.timeout
      ),
    releaseHandoff: sendWithId("InferenceClient.releaseHandoff", (requestId) => ({ _tag: "ReleaseKv", requestId }), () => {}),
    abort: sendWithId("InferenceClient.abort", (requestId) => ({ _tag: "AbortRequest", requestId }), (requestId) => {
      const entry = pending.take(requestId)
      if (entry !== undefined) pending.fail(entry, clientError(new RequestAborted({ requestId })), "aborted")
    }),
    pauseEngines: signal("InferenceClient.pauseEngines", { _tag: "Pause" }),
    unpauseEngines: signal("InferenceClient.unpauseEngines", { _tag: "Unpause" }),
    suspendEngines: signal("InferenceClient.suspendEngines", { _tag: "Suspend" }),
    resumeEngines: signal("InferenceClient.resumeEngines", { _tag: "Resume" }),
    stopEngines: signal("InferenceClient.stopEngines", { _tag: "Stop" }),
    startCudaProfiler: signal("InferenceClient.startCudaProfiler", { _tag: "StartCudaProfiler" }),
    stopCudaProfiler: signal("InferenceClient.stopCudaProfiler", { _tag: "StopCudaProfiler" }),
    shutdownCoordinator: signal("InferenceClient.shutdownCoordinator", { _tag: "Shutdown" }),
    setGenerationEpoch: Effect.fn("InferenceClient.setGenerationEpoch")(function*(generationEpoch: number) {
      if (!Number.isSafeInteger(generationEpoch)) {
        return yield* Effect.fail(
          invalidArgument("generationEpoch", `expected an integer, got ${String(generationEpoch)}`)
        )
      }
      const error = unavailable()
      if (error !== undefined) return yield* Effect.fail(error)
      socket.send(encodeConstant({ _tag: "SetGenerationEpoch", generationEpoch }), -1)
    }),
    blockHashes: (prompt, mediaCacheKey) =>
      Effect.suspend(() => {
        const valid = Prompt.validate(prompt)
        if (Result.isFailure(valid)) return Effect.fail(invalidRequest(valid.failure))
        return Effect.succeed<BigUint64Array | null>(PrefixHashing.hashesFor(valid.success, config.hashing, mediaCacheKey))
      }),
    pendingCount: Effect.sync(() => pending.size)
  })
})

/**
 * The client as a layer: acquiring it connects and performs the handshake (failing with
 * `ConnectTimeout`, `HandshakeRejected` or `InvalidAddress`); releasing it closes the client.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const ClientLive = InferenceClient.layer({
 *   address: "tcp://127.0.0.1:5555",
 *   blockSizeTokens: 64,
 *   prefixCachingPolicy: "longest_prefix",
 *   connectTimeout: "5 seconds",
 *   heartbeatTimeout: "3 seconds"
 * })
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* InferenceClient.InferenceClient
 *   const { requestId, reply } = yield* client.submitWithId("Hello", { num_tokens_to_generate: 8 })
 *   return yield* reply
 * }).pipe(Effect.provide(ClientLive))
 * ```
 *
 * @since 0.1.0
 */
export const layer = (options: ClientConfig.ClientOptions): Layer.Layer<InferenceClient, ClientError> =>
  Layer.effect(InferenceClient, make(options))

/**
 * The client as a layer whose options are read from `Config` (by default
 * {@link ClientConfig.config}: `MCORE_COORDINATOR_ADDRESS` and friends).
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 *
 * // MCORE_COORDINATOR_ADDRESS=tcp://127.0.0.1:5555 MCORE_DESERIALIZE=true
 * const ClientLive = InferenceClient.layerConfig()
 * ```
 *
 * @since 0.1.0
 */
export const layerConfig = (
  config: Config.Config<ClientConfig.ClientOptions> = ClientConfig.config
): Layer.Layer<InferenceClient, ClientError | Config.ConfigError> =>
  Layer.effect(
    InferenceClient,
    Effect.gen(function*() {
      return yield* make(yield* config)
    })
  )
