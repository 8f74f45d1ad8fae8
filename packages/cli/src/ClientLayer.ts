/**
 * The `InferenceClient` a command talks through, built from the command's connection flags.
 *
 * @since 0.1.0
 * @internal
 */
import { ClientConfig, type ClientError, InferenceClient } from "@mcore-effect/client"
import type * as Duration from "effect/Duration"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Connection } from "./Flags.ts"
import * as SettingFlags from "./SettingFlags.ts"

/**
 * The client layer for the connection flags (`--address`, `--connect-timeout`, `--protocol`; and, for commands that take it, a
 * deadline on every request).
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { clientLayer } from "./ClientLayer.ts"
 *
 * const layer = clientLayer({ address: "tcp://127.0.0.1:5555", connectTimeout: Option.none(), protocol: "main" })
 * ```
 *
 * @since 0.1.0
 */
export const clientLayer = (
  connection: Connection,
  options?: { readonly requestTimeout?: Option.Option<Duration.Duration> | undefined }
): Layer.Layer<InferenceClient.InferenceClient, ClientError.ClientError> =>
  InferenceClient.layer({
    // Every client option its flags gave (the rest keep the client's defaults).
    ...SettingFlags.given(ClientConfig.settings, connection),
    protocol: connection.protocol,
    requestTimeout: options?.requestTimeout === undefined ? undefined : Option.getOrUndefined(options.requestTimeout)
  })
