/**
 * What an `InferenceClient` is built from: the coordinator's address, the seed's constructor
 * arguments (`deserialize`, `block_size_tokens`, `prefix_caching_coordinator_policy`), and the
 * timeouts the Python client lacks. Also readable from `Config` (environment variables).
 *
 * @since 0.1.0
 */
import { PrefixHashing } from "@mcore-effect/protocol"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"

/**
 * Options of `InferenceClient.layer`.
 *
 * @since 0.1.0
 */
export interface ClientOptions {
  /** The coordinator's ROUTER address: `tcp://host:port` or `ipc://path`. */
  readonly address: string
  /**
   * `true`: replies are typed `DynamicInferenceRequest`s. `false` (default): the raw reply map,
   * for lower overhead.
   */
  readonly deserialize?: boolean | undefined
  /**
   * The engines' KV block size in tokens, to hash token prompts for prefix routing. Must match the
   * engines. Unset leaves hashing to the coordinator.
   */
  readonly blockSizeTokens?: number | null | undefined
  /** The coordinator's routing policy; only prefix policies make this client hash. */
  readonly prefixCachingPolicy?: PrefixHashing.PrefixCachingPolicy | null | undefined
  /** How long to wait for CONNECT_ACK before failing with `ConnectTimeout`. Default 10 seconds. */
  readonly connectTimeout?: Duration.Input | undefined
  /** Interval between ZeroMQ heartbeats. Default 1 second. */
  readonly heartbeatInterval?: Duration.Input | undefined
  /**
   * How long the coordinator may stay silent (no heartbeat answer) before the connection is
   * dropped and pending requests fail with `CoordinatorLost`. Default 5 seconds.
   */
  readonly heartbeatTimeout?: Duration.Input | undefined
  /**
   * A deadline for every request (overridable per request): on expiry the request is aborted on
   * the coordinator and fails with `RequestTimeout`. Default: none.
   */
  readonly requestTimeout?: Duration.Input | undefined
}

/**
 * {@link ClientOptions} with defaults applied and durations in milliseconds.
 *
 * @since 0.1.0
 */
export interface ResolvedOptions {
  readonly address: string
  readonly deserialize: boolean
  readonly hashing: PrefixHashing.HashingConfig
  readonly connectTimeoutMillis: number
  readonly heartbeatIntervalMillis: number
  readonly heartbeatTimeoutMillis: number
  /** `undefined`: no default deadline. */
  readonly requestTimeoutMillis: number | undefined
}

/**
 * Default durations.
 *
 * @since 0.1.0
 */
export const defaults = {
  connectTimeout: Duration.seconds(10),
  heartbeatInterval: Duration.seconds(1),
  heartbeatTimeout: Duration.seconds(5)
} as const

const millis = (input: Duration.Input | undefined, fallback: Duration.Duration): number =>
  Math.max(0, Math.round(Duration.toMillis(input === undefined ? fallback : Duration.fromInputUnsafe(input))))

/**
 * Applies the defaults.
 *
 * @since 0.1.0
 */
export const resolve = (options: ClientOptions): ResolvedOptions => ({
  address: options.address,
  deserialize: options.deserialize === true,
  hashing: {
    blockSizeTokens: options.blockSizeTokens ?? null,
    prefixCachingPolicy: options.prefixCachingPolicy ?? null
  },
  connectTimeoutMillis: millis(options.connectTimeout, defaults.connectTimeout),
  heartbeatIntervalMillis: Math.max(1, millis(options.heartbeatInterval, defaults.heartbeatInterval)),
  heartbeatTimeoutMillis: Math.max(1, millis(options.heartbeatTimeout, defaults.heartbeatTimeout)),
  requestTimeoutMillis: options.requestTimeout === undefined
    ? undefined
    : millis(options.requestTimeout, Duration.zero)
})

const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.option(config).pipe(Config.map(Option.getOrUndefined))

/**
 * {@link ClientOptions} read from configuration:
 *
 * | variable | option |
 * |---|---|
 * | `MCORE_COORDINATOR_ADDRESS` (required) | `address` |
 * | `MCORE_DESERIALIZE` | `deserialize` |
 * | `MCORE_BLOCK_SIZE_TOKENS` | `blockSizeTokens` |
 * | `MCORE_PREFIX_CACHING_POLICY` | `prefixCachingPolicy` |
 * | `MCORE_CONNECT_TIMEOUT` | `connectTimeout` (e.g. `"10 seconds"`) |
 * | `MCORE_HEARTBEAT_INTERVAL` | `heartbeatInterval` |
 * | `MCORE_HEARTBEAT_TIMEOUT` | `heartbeatTimeout` |
 * | `MCORE_REQUEST_TIMEOUT` | `requestTimeout` |
 *
 * @example
 * ```ts
 * import { ClientConfig } from "@mcore-effect/client"
 * import { ConfigProvider, Effect } from "effect"
 *
 * const options = ClientConfig.config.pipe(
 *   Effect.provideService(
 *     ConfigProvider.ConfigProvider,
 *     ConfigProvider.fromEnv({ env: { MCORE_COORDINATOR_ADDRESS: "tcp://127.0.0.1:5555" } })
 *   )
 * )
 * ```
 *
 * @since 0.1.0
 */
export const config: Config.Config<ClientOptions> = Config.all({
  address: Config.String("MCORE_COORDINATOR_ADDRESS"),
  deserialize: Config.Boolean("MCORE_DESERIALIZE").pipe(Config.withDefault(false)),
  blockSizeTokens: optional(Config.Int("MCORE_BLOCK_SIZE_TOKENS")),
  prefixCachingPolicy: optional(
    Config.Literals(["load_balanced", "longest_prefix", "first_prefix_block"] as const, "MCORE_PREFIX_CACHING_POLICY")
  ),
  connectTimeout: optional(Config.Duration("MCORE_CONNECT_TIMEOUT")),
  heartbeatInterval: optional(Config.Duration("MCORE_HEARTBEAT_INTERVAL")),
  heartbeatTimeout: optional(Config.Duration("MCORE_HEARTBEAT_TIMEOUT")),
  requestTimeout: optional(Config.Duration("MCORE_REQUEST_TIMEOUT"))
})
