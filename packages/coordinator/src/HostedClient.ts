/**
 * An `InferenceClient` whose coordinator runs in this process: the coordinator binds where its
 * engines dial (Megatron-LM's, `launch_inference_coordinator=False`), and the client connects to
 * it over loopback. An application (`mcore serve --engines-listen`) then needs no coordinator
 * process between it and the engines. Other clients (`mcore control`, a second application) may
 * dial the same address, as they would a coordinator process.
 *
 * The client dials the bound address, a wildcard host (`0.0.0.0`, `*`, `::`) turned into its
 * loopback. With `allowFrom`, that address must be admitted, or the layer fails before anything
 * is served.
 *
 * Release order: the client first (its requests in flight are aborted on the coordinator while it
 * still runs), then the coordinator (its socket, and with it the engines' connections).
 *
 * @since 0.2.0
 */
import { type ClientConfig, type ClientError, InferenceClient } from "@mcore-effect/client"
import { AddressAllowlist, Zmtp } from "@mcore-effect/protocol"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import * as Coordinator from "./Coordinator.ts"
import { type CoordinatorError, coordinatorError, InvalidOption } from "./CoordinatorError.ts"

/**
 * How to start the coordinator, and the client's options besides where it connects and the
 * dialect (the coordinator's).
 *
 * @category models
 * @since 0.2.0
 */
export interface Options extends Coordinator.Options {
  readonly client?: Omit<ClientConfig.ClientOptions, "address" | "protocol"> | undefined
}

/**
 * Where a client in this process dials a coordinator bound at `bound`: the same endpoint, a
 * wildcard host turned into its loopback.
 *
 * @example
 * ```ts
 * import { HostedClient } from "@mcore-effect/coordinator"
 *
 * HostedClient.dialAddress("tcp://0.0.0.0:5555") // "tcp://127.0.0.1:5555"
 * HostedClient.dialAddress("tcp://[::]:5555") // "tcp://[::1]:5555"
 * HostedClient.dialAddress("ipc:///tmp/coordinator") // unchanged
 * ```
 *
 * @category addresses
 * @since 0.2.0
 */
export const dialAddress = (bound: string): string => {
  const endpoint = Zmtp.endpointOf(bound)
  if (endpoint === undefined || !("host" in endpoint)) return bound
  if (endpoint.host === "0.0.0.0" || endpoint.host === "*") return `tcp://127.0.0.1:${endpoint.port}`
  if (endpoint.host === "::") return `tcp://[::1]:${endpoint.port}`
  return bound
}

/** The allowlist, when given, must admit the host the client dials (it connects from there). */
const checkAllowlist = (options: Options, dial: string): Result.Result<void, InvalidOption> => {
  if (options.allowFrom === undefined) return Result.void
  const endpoint = Zmtp.endpointOf(dial)
  const parsed = AddressAllowlist.parse(options.allowFrom)
  // A malformed list, or one on a socket with no addresses, is the coordinator's to refuse.
  if (endpoint === undefined || !("host" in endpoint) || Result.isFailure(parsed)) return Result.void
  return AddressAllowlist.admits(parsed.success, endpoint.host)
    ? Result.void
    : Result.fail(
      new InvalidOption({
        option: "allowFrom",
        why: `must admit ${endpoint.host}: the client in this process connects to the coordinator from there`
      })
    )
}

/**
 * The coordinator, bound, and a client connected to it: both services, released client first.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { HostedClient } from "@mcore-effect/coordinator"
 * import { Effect } from "effect"
 *
 * const tokenizer = { tokenize: () => [], detokenize: () => "" }
 * const program = Effect.gen(function*() {
 *   const client = yield* InferenceClient.InferenceClient
 *   // Megatron's engines dial tcp://<this host>:5555; requests wait for the first to register.
 *   return yield* client.submit([1, 2, 3], { num_tokens_to_generate: 4 })
 * }).pipe(Effect.provide(HostedClient.layer({ address: "tcp://0.0.0.0:5555", protocol: "main", tokenizer })))
 * ```
 *
 * @category layers
 * @since 0.2.0
 */
export const layer = (
  options: Options
): Layer.Layer<Coordinator.Coordinator | InferenceClient.InferenceClient, CoordinatorError | ClientError.ClientError> => {
  const { client, ...coordinator } = options
  const connected = Layer.unwrap(
    Effect.gen(function*() {
      const running = yield* Coordinator.Coordinator
      return InferenceClient.layer({ ...client, address: dialAddress(running.address), protocol: running.protocol })
    })
  )
  return Layer.unwrap(
    Effect.suspend(() => {
      // Before anything is bound: the host is known from the address given (its port may be 0).
      const allowed = checkAllowlist(options, dialAddress(options.address))
      return Result.isFailure(allowed)
        ? Effect.fail(coordinatorError(allowed.failure))
        : Effect.succeed(Layer.provideMerge(connected, Coordinator.layer(coordinator)))
    })
  )
}
