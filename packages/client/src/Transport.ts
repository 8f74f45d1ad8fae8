/**
 * The client's transport as a service, as Effect's `RpcClient` takes its transport as a
 * `Protocol` service: what carries the connection's messages to the coordinator and back, and
 * reports its connection coming and going. The connection above it (`Connection`: registry,
 * state, handshake, deadlines, the drain on close) is the same whatever the transport.
 *
 * Three transports: {@link zmtp}, a DEALER of our own over `node:net` (ZMTP 3.1); {@link zeromq},
 * zeromq.js's DEALER (libzmq underneath, for CurveZMQ); and {@link memory}, an in-memory dealer
 * on a `MemorySocket.Network` whose other side the testkit's coordinator serves on, so a client
 * and a test coordinator meet without sockets. A client built with no transport provided uses
 * {@link standard}: zmtp, or zeromq when it sets `curve`.
 *
 * Each client (each `InferenceClient.make`) opens one link of its own through the transport, owned
 * by the client's scope: a transport holds no socket itself, so one transport serves any number
 * of clients and coordinators at once.
 *
 * @since 0.2.0
 */
import type { MemorySocket } from "@mcore-effect/protocol"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import type { Service } from "./internal/link.ts"
import * as MemoryTransport from "./internal/memoryTransport.ts"
import * as ZeroMqTransport from "./internal/zeroMqTransport.ts"
import * as ZmtpTransport from "./internal/zmtpTransport.ts"

export type { Events, Link, LinkConfig, Service } from "./internal/link.ts"

/**
 * The ZeroMQ transport: one DEALER per client, with heartbeats, CurveZMQ, reconnection, and the
 * linger that lets what is queued at close reach a connected coordinator (`closeTimeout`).
 *
 * @since 0.2.0
 * @category transports
 */
export const zeromq: Service = ZeroMqTransport.transport

/**
 * A DEALER of our own: ZMTP 3.1 over `node:net` (`tcp://`, and `ipc://` as a Unix socket), with
 * the protocol's codec (`Zmtp`): the handshake, a queue while no connection is up (bounded by
 * `maxQueuedBytes`), reconnection, heartbeats, and bad input from the network refused per
 * connection. No CurveZMQ (a client asking for it is refused: use {@link zeromq}).
 *
 * @since 0.2.0
 * @category transports
 */
export const zmtp: Service = ZmtpTransport.transport

/**
 * What a client dials with unless told otherwise: {@link zmtp}, or {@link zeromq} for a client
 * with `curve` set (only libzmq speaks CurveZMQ). Both take the same addresses.
 *
 * @since 0.2.0
 * @category transports
 */
export const standard: Service = {
  name: "standard",
  addressProblem: zmtp.addressProblem,
  open: (config, attach) => (config.curve === undefined ? zmtp : zeromq).open(config, attach)
}

/**
 * The transport a client's `transport` option names (`ClientConfig`), if it names one
 * (`undefined` for any other value, which the option's own check refuses).
 *
 * @since 0.2.0
 * @category transports
 */
export const named = (name: string | undefined): Service | undefined =>
  name === "zmtp" ? zmtp : name === "zeromq" ? zeromq : undefined

/**
 * The in-memory transport over `network`: a client's address names a router bound on it (by the
 * testkit coordinator given the same network). Any non-empty address is accepted.
 *
 * @since 0.2.0
 * @category transports
 */
export const memory = (network: MemorySocket.Network): Service => MemoryTransport.transport(network)

/**
 * The transport the client opens its connection with; {@link standard} unless another is
 * provided (a client's `transport` option, when set, names one that takes precedence).
 *
 * @example
 * ```ts
 * import { InferenceClient, Transport } from "@mcore-effect/client"
 * import { MemorySocket } from "@mcore-effect/protocol"
 * import { Effect } from "effect"
 *
 * const network = new MemorySocket.Network()
 * // ... a testkit coordinator bound on `network` at "inproc://coordinator" ...
 * const program = Effect.gen(function*() {
 *   const client = yield* InferenceClient.make({ address: "inproc://coordinator", protocol: "reference" })
 *   return yield* client.submit([1, 2, 3], { num_tokens_to_generate: 4 })
 * }).pipe(Effect.scoped, Effect.provide(Transport.layerMemory(network)))
 * ```
 *
 * @since 0.2.0
 * @category services
 */
export const Transport: Context.Reference<Service> = Context.Reference<Service>("@mcore-effect/client/Transport", {
  defaultValue: () => standard
})

/**
 * Provides {@link standard} (what a client uses when nothing is provided).
 *
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<never> = Layer.succeed(Transport, standard)

/**
 * Provides {@link zeromq}: zeromq.js, libzmq underneath, for every client, with CurveZMQ or not.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerZeromq: Layer.Layer<never> = Layer.succeed(Transport, zeromq)

/**
 * Provides {@link zmtp}.
 *
 * @example
 * ```ts
 * import { InferenceClient, Transport } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* InferenceClient.make({ address: "tcp://127.0.0.1:5555", protocol: "main" })
 *   return yield* client.submit([1, 2, 3], { num_tokens_to_generate: 4 })
 * }).pipe(Effect.scoped, Effect.provide(Transport.layerZmtp))
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layerZmtp: Layer.Layer<never> = Layer.succeed(Transport, zmtp)

/**
 * Provides {@link memory} over `network`.
 *
 * @since 0.2.0
 * @category layers
 */
export const layerMemory = (network: MemorySocket.Network): Layer.Layer<never> => Layer.succeed(Transport, memory(network))
