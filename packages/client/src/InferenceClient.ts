/**
 * The client of a Megatron-LM Core inference coordinator, as an Effect service: the Python
 * `InferenceClient` (submit, stream, KV handoff, abort, control signals), with a typed error for
 * every failure, interruption as abort, and liveness instead of hanging.
 *
 * This file is the service's surface: its interface, public types and layers, with their TSDoc
 * (most of its length). The machinery is below it: the effects of one request
 * (`RequestEffects.ts`), the connection (`Connection.ts`, over a `Transport`) and the batch
 * scheduler (`SubmitAll.ts`).
 *
 * @since 0.1.0
 */
import { type Dialect, type Media, PrefixHashing, Prompt, type Reply as ProtocolReply, type SamplingParams, type WireTypes } from "@mcore-effect/protocol"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import type * as Exit from "effect/Exit"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as ClientConfig from "./ClientConfig.ts"
import { type ClientError, clientError, InvalidAddress, InvalidArgument, InvalidRequest } from "./ClientError.ts"
import { Recorder } from "./ClientMetrics.ts"
import * as Connection from "./Connection.ts"
import * as ControlSignals from "./ControlSignals.ts"
import type { RawReply, Reply, StreamEvent } from "./Reply.ts"
import { requestsOf, streamed } from "./RequestEffects.ts"
import { REQUEST_ID } from "./Spans.ts"
import { submitAll } from "./SubmitAll.ts"
import { Transport } from "./Transport.ts"

/**
 * The reply types, declared in `Reply.ts`, re-exported here beside the operations that return
 * them.
 *
 * @since 0.1.0
 */
export type { Final, RawReply, Reply, StreamEvent, Tokens } from "./Reply.ts"

/**
 * True for a typed reply (a client built with `deserialize: true`); see `Reply.isDeserialized`.
 *
 * @since 0.1.0
 */
export { isDeserialized } from "./Reply.ts"

/**
 * The request a reply is about: a core_v0.16 record's requests merged (as Megatron's
 * `DynamicInferenceRequestRecord.merge()` does), any other reply as it is;
 * see `Reply.requestOf`.
 *
 * @since 0.2.0
 */
export { requestOf } from "./Reply.ts"

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
export interface KvHandoffOptions {
  /** A deadline for this request, overriding the client's `requestTimeout`. */
  readonly timeout?: Duration.Input | undefined
}

/**
 * A submitted request: its id (what `abort` takes) and its reply, to await. Interrupting the
 * fiber awaiting `reply` aborts the request.
 *
 * @since 0.1.0
 */
export interface Submitted<R extends Reply = Reply> {
  readonly requestId: number
  readonly reply: Effect.Effect<R, ClientError>
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
export interface BatchReply<R extends Reply = Reply> {
  readonly index: number
  /** The client's id for the request (what `abort` takes), not the coordinator's `request_id`. */
  readonly requestId: number
  readonly reply: R
}

/**
 * A settled request of a {@link Service.submitAllSettled} batch: its position in the input, the
 * client's id for it (`undefined` when it was refused before anything was sent: an invalid
 * prompt or parameter), and how it ended.
 *
 * @since 0.1.0
 */
export interface BatchSettled<R extends Reply = Reply> {
  readonly index: number
  readonly requestId: number | undefined
  readonly exit: Exit.Exit<R, ClientError>
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
 * The service. `R` is what a finished request gives: `RawReply` for a client built with
 * `deserialize: false`, `DynamicInferenceRequest` with `deserialize: true`, and the union of the
 * two when that is not known statically (options read from configuration).
 *
 * @since 0.1.0
 */
export interface Service<R extends Reply = Reply> {
  /**
   * Submits a request and waits for its reply. Interrupting the wait aborts the request on the
   * coordinator. Nothing is sent when the prompt, parameters or media are refused. The sampling
   * parameters are Megatron's `SamplingParams` fields; engine parameters beyond them go in
   * `extra` (see `SamplingParams.SamplingParamsInput`).
   */
  readonly submit: (
    prompt: PromptInput,
    samplingParams?: SamplingParams.SamplingParamsInput | undefined,
    options?: SubmitOptions | undefined
  ) => Effect.Effect<R, ClientError>
  /** Submits a request and returns at once with its id and its reply to await. */
  readonly submitWithId: (
    prompt: PromptInput,
    samplingParams?: SamplingParams.SamplingParamsInput | undefined,
    options?: SubmitOptions | undefined
  ) => Effect.Effect<Submitted<R>, ClientError>
  /**
   * Submits many requests and streams their replies as they finish (in completion order; `index`
   * tells which input each answers), keeping at most `concurrency` in flight. No fiber waits per
   * request: each pending request costs under a tenth of what a `submit` in its own fiber costs,
   * which is what a rollout driver with 100,000 prompts in flight wants. Like `Effect.forEach`,
   * the first failure (an invalid request, a deadline, the coordinator lost) fails the stream and
   * aborts the requests still in flight; so does ending consumption early.
   */
  readonly submitAll: (
    requests: Iterable<BatchRequest>,
    options?: SubmitAllOptions | undefined
  ) => Stream.Stream<BatchReply<R>, ClientError>
  /**
   * {@link Service.submitAll} that never stops the batch: every request yields its `Exit`, in
   * completion order, whatever happens to the others (an invalid request, a deadline, the
   * coordinator lost: each fails alone, and the rest go on). What an RL rollout wants: one bad
   * prompt among 2,000 costs one sample, not the batch. The stream itself fails only for
   * arguments that are not a batch (a `concurrency` below 1, requests that are not iterable or
   * whose iterator throws). Ending consumption early aborts what is in flight.
   *
   * @example
   * ```ts
   * import { InferenceClient } from "@mcore-effect/client"
   * import { Effect, Exit, Stream } from "effect"
   *
   * const rollout = Effect.gen(function*() {
   *   const client = yield* InferenceClient.InferenceClient
   *   const prompts = [[1, 2, 3], [4, 5, 6]]
   *   return yield* client.submitAllSettled(prompts.map((prompt) => ({ prompt })), { concurrency: 64 }).pipe(
   *     Stream.filter((settled) => Exit.isSuccess(settled.exit)),
   *     Stream.runCollect
   *   )
   * })
   * ```
   */
  readonly submitAllSettled: (
    requests: Iterable<BatchRequest>,
    options?: SubmitAllOptions | undefined
  ) => Stream.Stream<BatchSettled<R>, ClientError>
  /**
   * A streamed request, submitted when the stream is run (with `streaming` forced on): its
   * partials in order, then its final reply, then the end. Ending consumption early aborts it.
   */
  readonly stream: (
    prompt: PromptInput,
    samplingParams?: SamplingParams.SamplingParamsInput | undefined,
    options?: SubmitOptions | undefined
  ) => Stream.Stream<StreamEvent<R>, ClientError>
  /**
   * A decode request carrying the prefill peer's KV metadata: the decode engine pulls the KV from
   * `srcBlockIds` on the peer `kvMeta` describes, then generates.
   */
  readonly submitWithKvHandoff: (
    prompt: PromptInput,
    samplingParams: SamplingParams.SamplingParamsInput | undefined,
    kvMeta: WireTypes.KvMeta,
    srcBlockIds: ReadonlyArray<number>,
    options?: KvHandoffOptions | undefined
  ) => Effect.Effect<R, ClientError>
  /** {@link Service.submitWithKvHandoff}, streamed. */
  readonly streamWithKvHandoff: (
    prompt: PromptInput,
    samplingParams: SamplingParams.SamplingParamsInput | undefined,
    kvMeta: WireTypes.KvMeta,
    srcBlockIds: ReadonlyArray<number>,
    options?: KvHandoffOptions | undefined
  ) => Stream.Stream<StreamEvent<R>, ClientError>
  /**
   * Tells every engine to release the KV blocks pinned for a handed-off request
   * (fire-and-forget). `requestId` is the engine-side id the prefill reply names (its
   * `disaggregated_params`), not this client's id.
   */
  readonly releaseKvHandoff: (requestId: number) => Effect.Effect<void, ClientError>
  /**
   * Cancels a request on the coordinator; whatever waits for it here fails with `RequestAborted`.
   */
  readonly abort: (requestId: number) => Effect.Effect<void, ClientError>
  /**
   * PAUSE to every engine. On core_v0.16 a second PAUSE before an UNPAUSE kills the coordinator:
   * a second call from this client before `unpauseEngines`/`resumeEngines` fails with
   * `InvalidRequest` (`UnsupportedByDialect`) and sends nothing (other clients' PAUSEs it cannot
   * see). Every 0.16 client then receives the coordinator's PAUSE_ACK, counted in
   * `mcore_client_control_acks`.
   */
  readonly pauseEngines: () => Effect.Effect<void, ClientError>
  /** UNPAUSE to every engine. */
  readonly unpauseEngines: () => Effect.Effect<void, ClientError>
  /**
   * SUSPEND to every engine (requires PAUSED). On core_v0.16, as its own client does, PAUSE then
   * SUSPEND (SUSPEND alone when this client's PAUSE is standing).
   */
  readonly suspendEngines: () => Effect.Effect<void, ClientError>
  /** RESUME to every engine (requires SUSPENDED). On core_v0.16, RESUME then UNPAUSE, as its own client does. */
  readonly resumeEngines: () => Effect.Effect<void, ClientError>
  /**
   * STOP to every engine (requires PAUSED or SUSPENDED); does not affect the coordinator, but on
   * core_v0.16, whose coordinator exits once every engine has acked the STOP.
   */
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
  /**
   * The protocol dialect the client speaks (`ClientOptions.protocol`): what a caller checks to
   * refuse, before doing any work, what the coordinator cannot carry (`Dialect.requireFeature
   * (client.dialect, "media")` gives the same `UnsupportedByDialect` the submit would fail with),
   * or to adapt (the text layer answers a stream from the final reply where there are no partials).
   *
   * @example
   * ```ts
   * import { InferenceClient } from "@mcore-effect/client"
   * import { Dialect } from "@mcore-effect/protocol"
   * import { Effect } from "effect"
   *
   * const carriesMedia = Effect.gen(function*() {
   *   const client = yield* InferenceClient.InferenceClient
   *   return Dialect.supports(client.dialect, "media") // false on core_v0.19
   * })
   * ```
   */
  readonly dialect: Dialect.Dialect
  /** Requests in flight (submitted, neither finished nor aborted). */
  readonly pendingCount: Effect.Effect<number>
  /**
   * Whether the coordinator is connected now: it acknowledged this client's CONNECT and neither
   * the socket nor the heartbeat has seen it go since. What a health check reports.
   */
  readonly connected: Effect.Effect<boolean>
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
 * }).pipe(Effect.provide(InferenceClient.layer({ address: "tcp://127.0.0.1:5555", protocol: "main" })))
 * ```
 *
 * @since 0.1.0
 */
export class InferenceClient extends Context.Service<InferenceClient, Service>()(
  "@mcore-effect/client/InferenceClient"
) {}


const invalidArgument = (name: string, why: string): ClientError => clientError(new InvalidArgument({ name, why }))

const checkRequestId = (requestId: number): ClientError | undefined =>
  Number.isSafeInteger(requestId) && requestId >= 0
    ? undefined
    : invalidArgument("requestId", `expected a non-negative integer, got ${String(requestId)}`)

/** The client, its reply type the union of both (see {@link make}). */
const makeService = Effect.fnUntraced(function*(options: ClientConfig.ClientOptions) {
  // Nothing is opened for an address (as the transport reads it) or options the client refuses.
  const badAddress = (yield* Transport).addressProblem(options.address)
  if (badAddress !== undefined) {
    return yield* Effect.fail(clientError(new InvalidAddress({ address: options.address, why: badAddress })))
  }
  const resolved = ClientConfig.resolve(options)
  if (Result.isFailure(resolved)) return yield* Effect.fail(clientError(new InvalidArgument(resolved.failure)))
  const config = resolved.success
  const context = yield* Effect.context<never>()
  const runFork = Effect.runForkWith(context)
  const warn = (message: string): void => {
    runFork(Effect.logWarning(message).pipe(Effect.annotateLogs({ coordinator: config.address })))
  }
  const connection = yield* Connection.make(config, new Recorder(context), warn)

  // Encoded once; a signal the dialect lacks fails every call, before anything is sent.
  const signal = (name: string, message: Dialect.Message) => {
    const frames = connection.encode(message)
    return Effect.fn(name)(function*() {
      if (Result.isFailure(frames)) return yield* Effect.fail(frames.failure)
      const error = connection.available()
      if (error !== undefined) return yield* Effect.fail(error)
      connection.send(frames.success)
    })
  }

  const withRequestId = (name: string, send: (requestId: number) => ClientError | undefined) =>
    Effect.fn(name)(function*(requestId: number) {
      yield* Effect.annotateCurrentSpan(REQUEST_ID, requestId)
      const invalid = checkRequestId(requestId)
      if (invalid !== undefined) return yield* Effect.fail(invalid)
      const error = connection.available()
      if (error !== undefined) return yield* Effect.fail(error)
      const refused = send(requestId)
      if (refused !== undefined) return yield* Effect.fail(refused)
    })

  const { KvHandoff, Submit, SubmitWithId } = requestsOf(connection)
  const service: Service = {
    submit: (prompt, samplingParams, options) => new Submit(prompt, samplingParams, options),
    submitWithId: (prompt, samplingParams, options) => new SubmitWithId(prompt, samplingParams, options),
    submitAll: (requests, options) => submitAll(connection, requests, options, "failFast"),
    submitAllSettled: (requests, options) => submitAll(connection, requests, options, "settle"),
    stream: (prompt, samplingParams, options) =>
      streamed(connection, "InferenceClient.stream", { ...options, prompt, samplingParams }),
    submitWithKvHandoff: (prompt, samplingParams, kvMeta, srcBlockIds, options) =>
      new KvHandoff(prompt, samplingParams, options, kvMeta, srcBlockIds),
    streamWithKvHandoff: (prompt, samplingParams, kvMeta, srcBlockIds, options) =>
      streamed(connection, "InferenceClient.streamWithKvHandoff", {
        prompt,
        samplingParams,
        kvMeta,
        srcBlockIds,
        timeout: options?.timeout
      }),
    releaseKvHandoff: withRequestId(
      "InferenceClient.releaseKvHandoff",
      (requestId) => {
        const frames = connection.encode({ _tag: "ReleaseKv", requestId })
        if (Result.isFailure(frames)) return frames.failure
        connection.send(frames.success)
        return undefined
      }
    ),
    abort: withRequestId("InferenceClient.abort", (requestId) => connection.abort(requestId)),
    ...ControlSignals.make(connection),
    startCudaProfiler: signal("InferenceClient.startCudaProfiler", { _tag: "StartCudaProfiler" }),
    stopCudaProfiler: signal("InferenceClient.stopCudaProfiler", { _tag: "StopCudaProfiler" }),
    shutdownCoordinator: signal("InferenceClient.shutdownCoordinator", { _tag: "Shutdown" }),
    setGenerationEpoch: Effect.fn("InferenceClient.setGenerationEpoch")(function*(generationEpoch: number) {
      // Epochs count up from 0 (the CLI refuses a negative one too): -1 is a mistake, not an epoch.
      if (!Number.isSafeInteger(generationEpoch) || generationEpoch < 0) {
        return yield* Effect.fail(
          invalidArgument("generationEpoch", `expected a non-negative integer, got ${String(generationEpoch)}`)
        )
      }
      const frames = connection.encode({ _tag: "SetGenerationEpoch", generationEpoch })
      if (Result.isFailure(frames)) return yield* Effect.fail(frames.failure)
      const error = connection.available()
      if (error !== undefined) return yield* Effect.fail(error)
      connection.send(frames.success)
    }),
    blockHashes: (prompt, mediaCacheKey) =>
      Effect.suspend(() => {
        const valid = Prompt.validate(prompt)
        if (Result.isFailure(valid)) return Effect.fail(clientError(new InvalidRequest({ error: valid.failure })))
        return Effect.succeed<BigUint64Array | null>(PrefixHashing.hashesFor(valid.success, config.hashing, mediaCacheKey))
      }),
    dialect: config.dialect,
    pendingCount: Effect.sync(() => connection.pending.size),
    connected: Effect.sync(() => connection.state.phase === "ready")
  }
  return service
})

/**
 * What {@link make} builds for these options: the reply type follows `deserialize` when it is
 * known statically.
 *
 * @since 0.1.0
 */
export type ReplyFor<O extends ClientConfig.ClientOptions> = O extends { readonly deserialize: true } ?
  ProtocolReply.DynamicInferenceRequest
  : "deserialize" extends keyof O ? (O extends { readonly deserialize: false | undefined } ? RawReply : Reply)
  : RawReply

/**
 * Builds the client: opens a link through the current `Transport` (a ZeroMQ DEALER unless another
 * is provided), performs the CONNECT / CONNECT_ACK handshake, all owned by the current scope.
 * Closing the scope fails every pending request and stream with `ClientClosed` and closes the
 * link. Each client has a link of its own. {@link layer} is this as a `Layer`.
 *
 * The reply type follows `deserialize`: with `deserialize: true` every operation returns a typed
 * `DynamicInferenceRequest`, without it the raw map (`RawReply`).
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const once = Effect.gen(function*() {
 *   const client = yield* InferenceClient.make({ address: "ipc:///tmp/coordinator.sock", protocol: "main", deserialize: true })
 *   const reply = yield* client.submit("Hello", { num_tokens_to_generate: 4 })
 *   return reply.generated_tokens // typed: no isDeserialized needed
 * }).pipe(Effect.scoped) // the client closes here
 * ```
 *
 * @since 0.1.0
 */
export const make = <const O extends ClientConfig.ClientOptions>(
  options: O
): Effect.Effect<Service<ReplyFor<O>>, ClientError, Scope.Scope> =>
  makeService(options) as Effect.Effect<Service<any>, ClientError, Scope.Scope>

/**
 * The client as a layer: acquiring it connects and performs the handshake (failing with
 * `ConnectTimeout`, `HandshakeRejected` or `InvalidAddress`; with `InvalidArgument` before any
 * socket is opened for options it refuses, a missing `protocol` included); releasing it closes
 * the client.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const ClientLive = InferenceClient.layer({
 *   address: "tcp://127.0.0.1:5555",
 *   protocol: "reference", // the one dialect whose coordinator takes the client's block hashes
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
 * The client built with `deserialize: true`, as a service of its own whose replies are typed
 * `DynamicInferenceRequest`s (no `isDeserialized` needed). Provided by {@link layerDeserialized}.
 *
 * @since 0.1.0
 */
export class DeserializedInferenceClient extends Context.Service<
  DeserializedInferenceClient,
  Service<ProtocolReply.DynamicInferenceRequest>
>()("@mcore-effect/client/DeserializedInferenceClient") {}

/**
 * {@link layer} with `deserialize: true`, providing {@link DeserializedInferenceClient}.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* InferenceClient.DeserializedInferenceClient
 *   const reply = yield* client.submit([1, 2, 3], { num_tokens_to_generate: 8 })
 *   return reply.generated_tokens
 * }).pipe(Effect.provide(InferenceClient.layerDeserialized({ address: "tcp://127.0.0.1:5555", protocol: "main" })))
 * ```
 *
 * @since 0.1.0
 */
export const layerDeserialized = (
  options: Omit<ClientConfig.ClientOptions, "deserialize">
): Layer.Layer<DeserializedInferenceClient, ClientError> =>
  Layer.effect(DeserializedInferenceClient, make({ ...options, deserialize: true as const }))

/**
 * The client as a layer whose options are read from `Config` (by default
 * {@link ClientConfig.config}: `MCORE_COORDINATOR_ADDRESS`, `MCORE_PROTOCOL` and friends). Without
 * `MCORE_PROTOCOL` it fails with a `ConfigError` before any socket is opened: there is no default
 * dialect.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 *
 * // MCORE_COORDINATOR_ADDRESS=tcp://127.0.0.1:5555 MCORE_PROTOCOL=main MCORE_DESERIALIZE=true
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
