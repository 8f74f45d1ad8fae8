/**
 * The client's interface and the types of its options and replies: what `InferenceClient.ts`
 * (the service's tag, constructors and layers) and the machinery under `internal/` both speak,
 * declared here so that neither imports the other.
 *
 * @since 0.2.0
 */
import type { Dialect, Media, Prompt, Reply as ProtocolReply, SamplingParams, WireTypes } from "@mcore-effect/protocol"
import type * as Duration from "effect/Duration"
import type * as Effect from "effect/Effect"
import type * as Cause from "effect/Cause"
import type * as Exit from "effect/Exit"
import type * as Stream from "effect/Stream"
import type { ClientOptions } from "./ClientConfig.ts"
import type { ClientError } from "./ClientError.ts"
import type { RawReply, Reply, StreamEvent } from "./Reply.ts"

/**
 * A prompt: text, or token ids (an array or an integer typed array).
 *
 * @since 0.1.0
 * @category models
 */
export type PromptInput = Prompt.Prompt

/**
 * Options of a submission.
 *
 * @since 0.1.0
 * @category models
 */
export interface SubmitOptions {
  /** vLLM-style modality map: `image` and/or `video` (raw bytes, a list of them, or tensors). */
  readonly multiModalData?: Media.MultiModalData | null | undefined
  /** Opaque metadata for the engine's payload stager; any msgpack-encodable value. */
  readonly offloadParams?: unknown
  /** A deadline for this request, overriding the client's `requestTimeout`. */
  readonly timeout?: Duration.Input | undefined
  /**
   * A fleet's routing key (a session, a conversation, a user): with the `prefix` policy, requests
   * that carry the same key go to the same coordinator, the first in the key's rendezvous order
   * within the load bound, in every process over the same coordinators. Empty is none. One
   * client ignores it: it has one coordinator.
   */
  readonly routingKey?: string | undefined
}

/**
 * Options of a KV handoff submission.
 *
 * @since 0.1.0
 * @category models
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
 * @category models
 */
export interface Submitted<R extends Reply = Reply> {
  readonly requestId: number
  readonly reply: Effect.Effect<R, ClientError>
}

/**
 * One request of a {@link Service.submitAll} batch: what `submit` takes, as one object.
 *
 * @since 0.1.0
 * @category models
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
 * @category models
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
 * @category models
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
 * @category models
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
 * A request for {@link Service.start}: what `submit` takes, as one object, plus whether it is
 * streamed and, for a decode that imports a prefill's KV, the hand-off.
 *
 * @since 0.2.0
 */
export interface StartRequest extends BatchRequest {
  /** Partials as they are generated (`Tokens` events before the `Final`). Default false. */
  readonly streaming?: boolean | undefined
  /** A decode request carrying a prefill peer's KV (SUBMIT_REQUEST_WITH_KV); media are refused with it. */
  readonly kvHandoff?: {
    readonly kvMeta: WireTypes.KvMeta
    readonly srcBlockIds: ReadonlyArray<number>
  } | undefined
}

/**
 * A request started by {@link Service.start}: its id, the coordinator connection it went out on,
 * and its events, each awaited at the caller's pace. Nothing here aborts it: a wait on `next` or
 * `final` may be interrupted at any time and the request goes on; the caller ends it with
 * `abort` or `sendAbort`, or lets it finish.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { InferenceClient } from "@mcore-effect/client"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* InferenceClient.InferenceClient
 *   const started = yield* client.start({ prompt: [1, 2, 3], samplingParams: { num_tokens_to_generate: 4 } })
 *   const reply = yield* started.final
 *   return { requestId: started.requestId, tokens: reply.generated_tokens }
 * })
 * ```
 *
 * @since 0.2.0
 */
export interface Started<R extends Reply = Reply> {
  /** This client's id for the request (what `abort`, `sendAbort` take). */
  readonly requestId: number
  /**
   * The coordinator connection the request went out on (1 after the handshake, one more each time
   * the coordinator is back after a loss). A reply arrives on the connection its request went out
   * on, so what the reply names on the coordinator (a KV pin) belongs to this connection: release
   * it with `releaseKvHandoff(id, { connection })`, which refuses once the connection is gone.
   */
  readonly connection: number
  /**
   * The request's next event: `Tokens` (streamed requests), then one `Final`, then `Cause.Done`;
   * or the request's error (the coordinator lost, the client closed, a deadline, `abort`). A
   * request not streamed has one event, its `Final`, which every wait on it receives.
   */
  readonly next: Effect.Effect<StreamEvent<R>, ClientError | Cause.Done>
  /** The request's final reply (skipping the `Tokens` events not yet taken), or its error. */
  readonly final: Effect.Effect<R, ClientError | Cause.Done>
}

/**
 * Options of {@link Service.releaseKvHandoff}.
 *
 * @since 0.2.0
 */
export interface ReleaseKvOptions {
  /**
   * The connection the pin was made on (`Started.connection`): the release is sent only while it
   * is the current one, else it fails with `StaleConnection` and nothing is sent.
   */
  readonly connection?: number | undefined
}

/**
 * The service. `R` is what a finished request gives: `RawReply` for a client built with
 * `deserialize: false`, `DynamicInferenceRequest` with `deserialize: true`, and the union of the
 * two when that is not known statically (options read from configuration).
 *
 * @since 0.1.0
 * @category models
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
  readonly releaseKvHandoff: (requestId: number, options?: ReleaseKvOptions | undefined) => Effect.Effect<void, ClientError>
  /**
   * Starts a request and returns at once with its id, its connection and its events, to be taken
   * at the caller's pace. The request is the caller's to end: interrupting a fiber waiting for its
   * events does not abort it (`abort` does). A request not streamed is held in the one-shot entry
   * `submit` uses, with no queue of events (what a disaggregated client's member requests take). What an orchestrator wants that must see a
   * request's next reply after an ABORT: the disaggregated client (see `Disaggregated`) waits,
   * after aborting a decode whose KV import is pending, for the decode's first output before it
   * releases the prefill's blocks. Nothing is sent when the request is refused.
   */
  readonly start: (request: StartRequest) => Effect.Effect<Started<R>, ClientError>
  /**
   * Cancels a request on the coordinator; whatever waits for it here fails with `RequestAborted`.
   */
  readonly abort: (requestId: number) => Effect.Effect<void, ClientError>
  /**
   * ABORT_REQUEST for a request, which stays pending here: whatever waits for it gets the
   * engine's next reply as usual (the aborted request's final, or a partial already on its way).
   * An engine may ignore it: Megatron's decode engine does while a KV import is pending. Refused
   * (nothing sent) where the dialect has no ABORT_REQUEST; nothing is sent for a request that is
   * not pending.
   */
  readonly sendAbort: (requestId: number) => Effect.Effect<void, ClientError>
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
 * What `InferenceClient.make` builds for these options: the reply type follows `deserialize` when it is
 * known statically.
 *
 * @since 0.1.0
 * @category models
 */
export type ReplyFor<O extends ClientOptions> = O extends { readonly deserialize: true } ?
  ProtocolReply.DynamicInferenceRequest
  : "deserialize" extends keyof O ? (O extends { readonly deserialize: false | undefined } ? RawReply : Reply)
  : RawReply
