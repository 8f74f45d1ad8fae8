/**
 * The client of a Megatron-LM Core inference coordinator, as an Effect service: the Python
 * `InferenceClient` (submit, stream, KV handoff, abort, control signals), with a typed error for
 * every failure, interruption as abort, and liveness instead of hanging.
 *
 * This file is the service's surface: its tag, constructors and layers. Its interface and the
 * types of its options and replies are declared in `ClientService.ts` (re-exported here); the
 * machinery is under `internal/`: the client's wiring (`service.ts`), the effects of one request
 * (`requestEffects.ts`), the connection (`connection.ts`, over a `Transport`) and the batch
 * scheduler (`submitAll.ts`).
 *
 * @since 0.1.0
 */
import type { Reply as ProtocolReply } from "@mcore-effect/protocol"
import type * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as ClientConfig from "./ClientConfig.ts"
import type { ClientError } from "./ClientError.ts"
import type { ReplyFor, Service } from "./ClientService.ts"
import { makeClientService } from "./internal/service.ts"

/**
 * The reply types, declared in `Reply.ts`, re-exported here beside the operations that return
 * them.
 *
 * @since 0.1.0
 * @category models
 */
export type { Final, RawReply, Reply, StreamEvent, Tokens } from "./Reply.ts"

/**
 * True for a typed reply (a client built with `deserialize: true`); see `Reply.isDeserialized`.
 *
 * @since 0.1.0
 * @category guards
 */
export { isDeserialized } from "./Reply.ts"

/**
 * The request a reply is about: a core_v0.16 record's requests merged (as Megatron's
 * `DynamicInferenceRequestRecord.merge()` does), any other reply as it is;
 * see `Reply.requestOf`.
 *
 * @since 0.2.0
 * @category getters
 */
export { requestOf } from "./Reply.ts"

/**
 * The service's interface and the types of its options and replies, declared in
 * `ClientService.ts`, re-exported here beside the operations that take and return them.
 *
 * @since 0.1.0
 * @category models
 */
export type {
  BatchReply,
  BatchRequest,
  BatchSettled,
  KvHandoffOptions,
  PromptInput,
  ReleaseKvOptions,
  ReplyFor,
  Service,
  Started,
  StartRequest,
  Submitted,
  SubmitAllOptions,
  SubmitOptions
} from "./ClientService.ts"

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
 * @category services
 */
export class InferenceClient extends Context.Service<InferenceClient, Service>()(
  "@mcore-effect/client/InferenceClient"
) {}

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
 * @category constructors
 */
export const make = <const O extends ClientConfig.ClientOptions>(
  options: O
): Effect.Effect<Service<ReplyFor<O>>, ClientError, Scope.Scope> =>
  makeClientService(options) as Effect.Effect<Service<any>, ClientError, Scope.Scope>

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
 * @category layers
 */
export const layer = (options: ClientConfig.ClientOptions): Layer.Layer<InferenceClient, ClientError> =>
  Layer.effect(InferenceClient, make(options))

/**
 * The client built with `deserialize: true`, as a service of its own whose replies are typed
 * `DynamicInferenceRequest`s (no `isDeserialized` needed). Provided by {@link layerDeserialized}.
 *
 * @since 0.1.0
 * @category services
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
 * @category layers
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
 * @category layers
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
