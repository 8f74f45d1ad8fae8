/**
 * What the server is built from: where it listens, the model name it serves, its API key and
 * its limits. Everything but the model name has a default a public deployment can live with:
 * loopback only, 4 MiB bodies, 1,024 generation requests at once, a 10-minute deadline, a
 * 10-second grace period on shutdown.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Redacted from "effect/Redacted"

/**
 * Options of `Server.layer`.
 *
 * @since 0.1.0
 */
export interface ServerOptions {
  /** The model name served (`/v1/models`, and what requests must name when they name one). */
  readonly model: string
  /** A Jinja chat template file to use instead of the tokenizer's own. */
  readonly chatTemplate?: string | undefined
  /** Interface to bind. Default `127.0.0.1`: nothing beyond this machine unless asked. */
  readonly host?: string | undefined
  /** Port; 0 picks a free one. Default 8000. */
  readonly port?: number | undefined
  /** When set, every `/v1/*` request must carry `Authorization: Bearer <key>`. */
  readonly apiKey?: Redacted.Redacted<string> | string | undefined
  /** Largest request body accepted, in bytes (413 above it). Default 4 MiB. */
  readonly maxBodyBytes?: number | undefined
  /** Generation requests served at once; more are refused with 429. Default 1,024. */
  readonly maxConcurrentRequests?: number | undefined
  /** Deadline of a generation request (504, aborted on the coordinator). Default 10 minutes. */
  readonly requestTimeout?: Duration.Input | undefined
  /** On shutdown, how long streams in flight may take to finish before they are aborted. Default 10 s. */
  readonly shutdownGracePeriod?: Duration.Input | undefined
}

/**
 * The options with defaults applied, as plain numbers.
 *
 * @since 0.1.0
 */
export interface Resolved {
  readonly model: string
  readonly host: string
  readonly port: number
  readonly apiKey: Redacted.Redacted<string> | undefined
  readonly maxBodyBytes: number
  readonly maxConcurrentRequests: number
  readonly requestTimeoutMillis: number
  readonly shutdownGraceMillis: number
}

/**
 * @since 0.1.0
 */
export const defaults = {
  host: "127.0.0.1",
  port: 8000,
  maxBodyBytes: 4 * 1024 * 1024,
  maxConcurrentRequests: 1024,
  requestTimeoutMillis: 10 * 60_000,
  shutdownGraceMillis: 10_000
} as const

const millis = (input: Duration.Input | undefined, fallback: number): number =>
  input === undefined ? fallback : Duration.toMillis(Duration.fromInputUnsafe(input))

/**
 * Applies the defaults; `undefined` and a description of the problem when an option is out of
 * range.
 *
 * @example
 * ```ts
 * import { ServerConfig } from "@mcore-effect/server"
 *
 * const resolved = ServerConfig.resolve({ model: "qwen3", port: 0 })
 * ```
 *
 * @since 0.1.0
 */
export const resolve = (options: ServerOptions): Resolved | string => {
  if (typeof options.model !== "string" || options.model.length === 0) return "model: must be a non-empty name"
  const port = options.port ?? defaults.port
  if (!Number.isSafeInteger(port) || port < 0 || port > 65535) return `port: must be an integer 0..65535, got ${port}`
  const maxBodyBytes = options.maxBodyBytes ?? defaults.maxBodyBytes
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 1) return "maxBodyBytes: must be an integer >= 1"
  const maxConcurrentRequests = options.maxConcurrentRequests ?? defaults.maxConcurrentRequests
  if (!Number.isSafeInteger(maxConcurrentRequests) || maxConcurrentRequests < 1) {
    return "maxConcurrentRequests: must be an integer >= 1"
  }
  let requestTimeoutMillis: number
  let shutdownGraceMillis: number
  try {
    requestTimeoutMillis = millis(options.requestTimeout, defaults.requestTimeoutMillis)
    shutdownGraceMillis = millis(options.shutdownGracePeriod, defaults.shutdownGraceMillis)
  } catch (cause) {
    return `not a duration: ${String(cause)}`
  }
  if (!(requestTimeoutMillis > 0)) return "requestTimeout: must be positive"
  if (!(shutdownGraceMillis >= 0)) return "shutdownGracePeriod: must not be negative"
  const key = options.apiKey
  const apiKey = key === undefined || key === "" ? undefined : typeof key === "string" ? Redacted.make(key) : key
  return {
    model: options.model,
    host: options.host ?? defaults.host,
    port,
    apiKey,
    maxBodyBytes,
    maxConcurrentRequests,
    requestTimeoutMillis,
    shutdownGraceMillis
  }
}
