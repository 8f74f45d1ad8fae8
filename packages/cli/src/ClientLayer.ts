/**
 * The `InferenceClient` a command talks through, built from the command's connection flags.
 *
 * @since 0.1.0
 * @internal
 */
import { ClientConfig, type ClientError, Fleet, InferenceClient } from "@mcore-effect/client"
import type * as Duration from "effect/Duration"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Connection } from "./Flags.ts"
import * as SettingFlags from "./SettingFlags.ts"

/**
 * The client layer for the connection flags (`--address`, `--connect-timeout`, `--protocol`; and, for commands that take it, a
 * deadline on every request): one client, or a fleet (`Fleet.layer`) when `--address` names
 * several coordinators.
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { clientLayer } from "./ClientLayer.ts"
 *
 * const layer = clientLayer({ address: ["tcp://127.0.0.1:5555"], connectTimeout: Option.none(), protocol: "main" })
 * ```
 *
 * @since 0.1.0
 */
export const clientLayer = (
  connection: Connection,
  options?: { readonly requestTimeout?: Option.Option<Duration.Duration> | undefined }
): Layer.Layer<InferenceClient.InferenceClient, ClientError.ClientError> =>
  connection.address.length === 1 ? InferenceClient.layer(clientOptions(connection, options)) : fleetLayer(connection, options)

/**
 * The fleet layer over every address of the connection flags (one coordinator makes a fleet of
 * one), for a command that needs what only a fleet has (`Fleet.control`'s result per
 * coordinator) as well as its `InferenceClient`.
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { fleetLayer } from "./ClientLayer.ts"
 *
 * const layer = fleetLayer({ address: ["tcp://127.0.0.1:5555", "tcp://127.0.0.1:5556"], connectTimeout: Option.none(), protocol: "main" })
 * ```
 *
 * @since 0.2.0
 */
export const fleetLayer = (
  connection: Connection,
  options?: { readonly requestTimeout?: Option.Option<Duration.Duration> | undefined }
): Layer.Layer<Fleet.Fleet | InferenceClient.InferenceClient, ClientError.ClientError> => {
  // The fleet's own options at their defaults.
  const { address: _, ...besidesAddress } = clientOptions(connection, options)
  return Fleet.layer({ ...besidesAddress, coordinators: connection.address })
}

/** Every client option its flags gave (the rest keep the client's defaults), at the first address. */
const clientOptions = (
  connection: Connection,
  options?: { readonly requestTimeout?: Option.Option<Duration.Duration> | undefined }
) => ({
  ...SettingFlags.given(ClientConfig.settings, { ...connection, address: connection.address[0]! }),
  protocol: connection.protocol,
  requestTimeout: options?.requestTimeout === undefined ? undefined : Option.getOrUndefined(options.requestTimeout)
})
