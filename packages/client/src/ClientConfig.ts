/**
 * What an `InferenceClient` is built from: the coordinator's address, the seed's constructor
 * arguments (`deserialize`, `block_size_tokens`, `prefix_caching_coordinator_policy`), and the
 * timeouts the Python client lacks. Also readable from `Config` (environment variables).
 *
 * @since 0.1.0
 */
import { Dialect, Dialects, PrefixHashing, Values } from "@mcore-effect/protocol"
import * as Config from "effect/Config"
import { SourceError } from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"

const { describeValue } = Values

/**
 * Options of `InferenceClient.layer`.
 *
 * @since 0.1.0
 */
export interface ClientOptions {
  /** The coordinator's ROUTER address: `tcp://host:port` or `ipc://path`. */
  readonly address: string
  /**
   * The wire protocol the coordinator speaks, by the Megatron-LM version that speaks it (see
   * `Dialects` in `@mcore-effect/protocol`: `main`, `pr-6497`, `core_v0.19`, `core_v0.18`,
   * `core_v0.17`, `core_v0.16`; `reference` is the project's own five-frame protocol, which no
   * Megatron-LM speaks). Required, with no default: a message a coordinator cannot parse kills
   * it (one SUBMIT in the wrong dialect ends Megatron-LM main's, PR 6497's and core_v0.16 to
   * 0.19's coordinators for every client), so the dialect is never guessed. Left out (from
   * untyped code), building the client fails with `InvalidArgument` (`name: "protocol"`) before
   * any socket is opened. What the dialect cannot carry (streaming, abort, KV hand-off, media,
   * control signals it lacks) fails with `InvalidRequest` (`UnsupportedByDialect`) before
   * anything is sent. A `TestCluster` says which it speaks: `cluster.protocol`.
   */
  readonly protocol: Dialect.Name
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
  /**
   * The longest frame read from the coordinator, in bytes: a reply or partial over it fails its
   * own request with `ReplyTooLarge`, undecoded. ZeroMQ itself drops the connection on a frame
   * over twice this (then the client reconnects), so no frame is ever held larger. Default 64 MiB.
   */
  readonly maxFrameBytes?: number | undefined
  /**
   * The most memory a reply or partial may take once decoded, in bytes, as estimated from its
   * msgpack layout before decoding (`MsgpackScan.decodedSize`): over it, the request fails with
   * `ReplyTooLarge`. Default 256 MiB.
   */
  readonly maxDecodedBytes?: number | undefined
  /** CurveZMQ, for a coordinator that authenticates its peers. Default: none. */
  readonly curve?: CurveOptions | undefined
  /**
   * The most closing may spend delivering messages still queued (a control signal sent just
   * before), while the coordinator is connected; when it is not, closing does not wait. Default
   * 1 second.
   */
  readonly closeTimeout?: Duration.Input | undefined
  /**
   * Where the dialect's coordinator exits on a reply it routes to a closed client (every
   * Megatron-LM ref: `Dialect.closedClientReply`), the most closing waits for the replies the
   * coordinator still owes: of requests pending at the close (aborted first where the dialect has
   * ABORT_REQUEST) and of requests given up earlier on a dialect without it, which run to their
   * end on their engines. Past it, the client warns and closes. Unused on the reference dialect.
   * Default 30 seconds.
   */
  readonly drainTimeout?: Duration.Input | undefined
}

/**
 * CurveZMQ keys, Z85 text (40 characters), as `zeromq`'s `curveKeyPair()` makes them.
 *
 * @since 0.1.0
 */
export interface CurveOptions {
  /** The coordinator's public key: the client talks to no one else. */
  readonly serverKey: string
  /** The client's key pair; a fresh one is made when absent. */
  readonly publicKey?: string | undefined
  readonly secretKey?: string | undefined
}

/**
 * Where the table of dialects is (which Megatron-LM speaks which, what each carries): the
 * project README's section "Against a real Megatron deployment".
 *
 * @since 0.2.0
 */
export const dialectTable = "README.md#against-a-real-megatron-deployment"

/**
 * What a missing `protocol` is told, on one line: the choices, newest Megatron-LM first, why
 * there is no default, and where the table of dialects is. `mcore` says the same for a missing
 * `--protocol`.
 *
 * @example
 * ```ts
 * import { ClientConfig } from "@mcore-effect/client"
 *
 * ClientConfig.protocolChoices // "the coordinator's wire dialect, one of main, pr-6497, ..."
 * ```
 *
 * @since 0.2.0
 */
export const protocolChoices = `the coordinator's wire dialect, one of ${Dialect.names.join(", ")} ` +
  `(no default: a dialect the coordinator does not speak can kill it; which Megatron-LM speaks which: ${dialectTable})`

/**
 * {@link ClientOptions} with defaults applied and durations in milliseconds.
 *
 * @since 0.1.0
 */
export interface ResolvedOptions {
  readonly address: string
  readonly dialect: Dialect.Dialect
  readonly deserialize: boolean
  readonly hashing: PrefixHashing.HashingConfig
  readonly connectTimeoutMillis: number
  readonly heartbeatIntervalMillis: number
  readonly heartbeatTimeoutMillis: number
  /** `undefined`: no default deadline. */
  readonly requestTimeoutMillis: number | undefined
  readonly maxFrameBytes: number
  readonly maxDecodedBytes: number
  readonly curve: CurveOptions | undefined
  readonly closeTimeoutMillis: number
  readonly drainTimeoutMillis: number
}

/**
 * Default durations.
 *
 * @since 0.1.0
 */
export const defaults = {
  connectTimeout: Duration.seconds(10),
  heartbeatInterval: Duration.seconds(1),
  heartbeatTimeout: Duration.seconds(5),
  maxFrameBytes: 64 * 1024 * 1024,
  maxDecodedBytes: 256 * 1024 * 1024,
  // Far more than a connected coordinator needs (microseconds on loopback); little enough that a
  // program closing its client never notices.
  closeTimeout: Duration.seconds(1),
  // An aborted request's reply comes at its engine's next step (milliseconds); without ABORT
  // (core_v0.17 to 0.19) a request runs to its end: 30 s covers a few thousand tokens at a
  // typical decode rate, and a program that closes with nothing in flight never waits.
  drainTimeout: Duration.seconds(30)
} as const

/**
 * What is wrong with an option: its name and why.
 *
 * @since 0.1.0
 */
export interface OptionProblem {
  readonly name: string
  readonly why: string
}

/**
 * A duration option in milliseconds, or why it is refused: something that is not a duration
 * (`"banana"`), a negative duration, or (unless `infinite` is `"allowed"`) an infinite one. The one
 * check of every duration the client takes, client-level and per request alike.
 *
 * @example
 * ```ts
 * import { ClientConfig } from "@mcore-effect/client"
 *
 * ClientConfig.durationMillis("requestTimeout", "2 seconds") // Result.succeed(2000)
 * ClientConfig.durationMillis("requestTimeout", -1) // Result.fail({ name: "requestTimeout", why: "must not be negative, got -1" })
 * ```
 *
 * @since 0.1.0
 */
export const durationMillis = (
  name: string,
  input: unknown,
  infinite: "allowed" | "refused" = "allowed"
): Result.Result<number, OptionProblem> => {
  let duration: Option.Option<Duration.Duration>
  try {
    duration = Duration.fromInput(input as Duration.Input)
  } catch {
    duration = Option.none()
  }
  if (Option.isNone(duration)) return Result.fail({ name, why: `not a duration: ${describeValue(input)}` })
  const millis = Duration.toMillis(duration.value)
  if (Number.isNaN(millis) || millis < 0) return Result.fail({ name, why: `must not be negative, got ${describeValue(input)}` })
  if (millis === Infinity && infinite === "refused") return Result.fail({ name, why: "must be finite" })
  return Result.succeed(millis)
}

/**
 * Applies the defaults and checks every option but the address (see {@link addressProblem}):
 * the protocol (required: missing, it fails with `name: "protocol"` and {@link protocolChoices}),
 * durations (with {@link durationMillis}), limits and CurveZMQ keys. A `requestTimeout` of
 * infinity means no deadline, as leaving it out does.
 *
 * @since 0.1.0
 */
export const resolve = (options: ClientOptions): Result.Result<ResolvedOptions, OptionProblem> => {
  // Required by the type; JavaScript callers and casts get here without it.
  if ((options.protocol as Dialect.Name | undefined) === undefined) {
    return Result.fail({ name: "protocol", why: `missing: ${protocolChoices}` })
  }
  const durations: Record<string, number> = {}
  for (const [name, infinite] of DURATIONS) {
    const input = options[name]
    if (input === undefined) continue
    const millis = durationMillis(name, input, infinite)
    if (Result.isFailure(millis)) return Result.fail(millis.failure)
    durations[name] = millis.success
  }
  const ms = (name: typeof DURATIONS[number][0]) => durations[name] ?? Duration.toMillis(defaults[name as keyof typeof defaults] as Duration.Duration)
  const requestTimeout = durations.requestTimeout
  const dialect = Dialects.parse(options.protocol)
  if (Result.isFailure(dialect)) return Result.fail({ name: "protocol", why: dialect.failure })
  const resolved: ResolvedOptions = {
    address: options.address,
    dialect: dialect.success,
    deserialize: options.deserialize === true,
    hashing: {
      blockSizeTokens: options.blockSizeTokens ?? null,
      prefixCachingPolicy: options.prefixCachingPolicy ?? null
    },
    connectTimeoutMillis: ms("connectTimeout"),
    // ZeroMQ takes whole milliseconds, at least 1.
    heartbeatIntervalMillis: Math.max(1, Math.round(ms("heartbeatInterval"))),
    heartbeatTimeoutMillis: Math.max(1, Math.round(ms("heartbeatTimeout"))),
    requestTimeoutMillis: requestTimeout === undefined || requestTimeout === Infinity ? undefined : requestTimeout,
    maxFrameBytes: options.maxFrameBytes ?? defaults.maxFrameBytes,
    maxDecodedBytes: options.maxDecodedBytes ?? defaults.maxDecodedBytes,
    curve: options.curve,
    closeTimeoutMillis: ms("closeTimeout"),
    drainTimeoutMillis: ms("drainTimeout")
  }
  const problem = limitsProblem(resolved) ?? hashingProblem(resolved)
  return problem === undefined ? Result.succeed(resolved) : Result.fail(problem)
}

/**
 * Client block hashes where the dialect's coordinator hashes prompts itself (every Megatron-LM
 * release and main): refused when the client is built, not on its first request.
 */
const hashingProblem = (options: ResolvedOptions): OptionProblem | undefined =>
  options.dialect.features.has("blockHashes") || options.hashing.blockSizeTokens === null ||
    !PrefixHashing.routesOnPrefixes(options.hashing.prefixCachingPolicy)
    ? undefined
    : {
      name: "prefixCachingPolicy",
      why: `the ${options.dialect.name} coordinator hashes prompts itself: set its prefix caching policy and block size on the coordinator, not on the client`
    }

/** The duration options, and whether each may be infinite. */
const DURATIONS = [
  ["connectTimeout", "allowed"],
  ["heartbeatInterval", "refused"],
  ["heartbeatTimeout", "refused"],
  ["requestTimeout", "allowed"],
  ["closeTimeout", "refused"],
  ["drainTimeout", "refused"]
] as const

/**
 * What is wrong with a coordinator address, or `undefined` when it is one the client connects
 * to (the ZeroMQ transport's check; see `internal/zeroMqAddress.ts`).
 *
 * @since 0.1.0
 */
export { addressProblem } from "./internal/zeroMqAddress.ts"

const z85Key = /^[0-9a-zA-Z.\-:+=^!/*?&<>()[\]{}@%$#]{40}$/

/**
 * What is wrong with the options besides the address (durations, limits, CurveZMQ keys), as the
 * option's name and why, or `undefined`: {@link resolve}'s check.
 *
 * @since 0.1.0
 */
export const optionProblem = (options: ClientOptions): OptionProblem | undefined => {
  const resolved = resolve(options)
  return Result.isFailure(resolved) ? resolved.failure : undefined
}

/** Limits and CurveZMQ keys, once the defaults are applied. */
const limitsProblem = (options: ResolvedOptions): OptionProblem | undefined => {
  for (const name of ["maxFrameBytes", "maxDecodedBytes"] as const) {
    const n = options[name]
    if (!Number.isSafeInteger(n) || n < 1) return { name, why: `must be a positive integer, got ${String(n)}` }
  }
  const curve = options.curve
  if (curve !== undefined) {
    const keys = [curve.serverKey, curve.publicKey, curve.secretKey]
    if (!keys.every((key, i) => (i > 0 && key === undefined) || (typeof key === "string" && z85Key.test(key)))) {
      return { name: "curve", why: "keys must be 40-character Z85 text" }
    }
    if ((curve.publicKey === undefined) !== (curve.secretKey === undefined)) {
      return { name: "curve", why: "give both publicKey and secretKey, or neither" }
    }
  }
  return undefined
}

const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.option(config).pipe(Config.map(Option.getOrUndefined))

/**
 * The CurveZMQ keys: present only when the server's key is set. The secret key stays `Redacted`
 * until the option is built here, so a failed read never prints it.
 */
const curveConfig: Config.Config<CurveOptions | undefined> = Config.all({
  serverKey: optional(Config.String("MCORE_CURVE_SERVER_KEY")),
  publicKey: optional(Config.String("MCORE_CURVE_PUBLIC_KEY")),
  secretKey: optional(Config.Redacted("MCORE_CURVE_SECRET_KEY"))
}).pipe(Config.flatMap(({ publicKey, secretKey, serverKey }) => {
  if (serverKey !== undefined) {
    return Config.succeed<CurveOptions | undefined>({
      serverKey,
      publicKey,
      secretKey: secretKey === undefined ? undefined : Redacted.value(secretKey)
    })
  }
  return publicKey === undefined && secretKey === undefined
    ? Config.succeed(undefined)
    : Config.fail(
      new SourceError({
        message: "MCORE_CURVE_PUBLIC_KEY and MCORE_CURVE_SECRET_KEY need MCORE_CURVE_SERVER_KEY (the coordinator's key)"
      })
    )
}))

/** The address, required: its absence says what to set, not only that a string was expected. */
const addressConfig: Config.Config<string> = optional(Config.String("MCORE_COORDINATOR_ADDRESS")).pipe(
  Config.flatMap((address) =>
    address !== undefined ? Config.succeed(address) : Config.fail(
      new SourceError({
        message: "MCORE_COORDINATOR_ADDRESS is not set: set it to the coordinator's address " +
          "(tcp://host:port or ipc://path), or give the address in code with InferenceClient.layer({ address, protocol })"
      })
    )
  )
)

/** The dialect, required: its absence lists the choices and says why there is no default. */
const protocolConfig: Config.Config<Dialect.Name> = optional(Config.Literals(Dialect.names, "MCORE_PROTOCOL")).pipe(
  Config.flatMap((protocol) =>
    protocol !== undefined ? Config.succeed(protocol) : Config.fail(
      new SourceError({ message: `MCORE_PROTOCOL is not set: set it to ${protocolChoices}` })
    )
  )
)

/**
 * {@link ClientOptions} read from configuration:
 *
 * | variable | option |
 * |---|---|
 * | `MCORE_COORDINATOR_ADDRESS` (required) | `address` |
 * | `MCORE_PROTOCOL` (required) | `protocol` (a dialect's name: `main`, `pr-6497`, `core_v0.19`, ...) |
 * | `MCORE_DESERIALIZE` | `deserialize` |
 * | `MCORE_BLOCK_SIZE_TOKENS` | `blockSizeTokens` |
 * | `MCORE_PREFIX_CACHING_POLICY` | `prefixCachingPolicy` |
 * | `MCORE_CONNECT_TIMEOUT` | `connectTimeout` (e.g. `"10 seconds"`) |
 * | `MCORE_HEARTBEAT_INTERVAL` | `heartbeatInterval` |
 * | `MCORE_HEARTBEAT_TIMEOUT` | `heartbeatTimeout` |
 * | `MCORE_REQUEST_TIMEOUT` | `requestTimeout` |
 * | `MCORE_CLOSE_TIMEOUT` | `closeTimeout` |
 * | `MCORE_DRAIN_TIMEOUT` | `drainTimeout` |
 * | `MCORE_MAX_FRAME_BYTES` | `maxFrameBytes` (an integer) |
 * | `MCORE_MAX_DECODED_BYTES` | `maxDecodedBytes` (an integer) |
 * | `MCORE_CURVE_SERVER_KEY` | `curve.serverKey`; `curve` is set only when this is |
 * | `MCORE_CURVE_PUBLIC_KEY` | `curve.publicKey` |
 * | `MCORE_CURVE_SECRET_KEY` (read as `Redacted`) | `curve.secretKey` |
 *
 * A client key without `MCORE_CURVE_SERVER_KEY` is an error rather than ignored: the client would
 * otherwise talk to a CurveZMQ coordinator in the clear and only time out. A missing
 * `MCORE_PROTOCOL` is an error too (`ConfigError`, its message {@link protocolChoices}), before any
 * socket is opened: there is no default dialect.
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
  address: addressConfig,
  protocol: protocolConfig,
  deserialize: Config.Boolean("MCORE_DESERIALIZE").pipe(Config.withDefault(false)),
  blockSizeTokens: optional(Config.Int("MCORE_BLOCK_SIZE_TOKENS")),
  prefixCachingPolicy: optional(
    Config.Literals(["load_balanced", "longest_prefix", "first_prefix_block"] as const, "MCORE_PREFIX_CACHING_POLICY")
  ),
  connectTimeout: optional(Config.Duration("MCORE_CONNECT_TIMEOUT")),
  heartbeatInterval: optional(Config.Duration("MCORE_HEARTBEAT_INTERVAL")),
  heartbeatTimeout: optional(Config.Duration("MCORE_HEARTBEAT_TIMEOUT")),
  requestTimeout: optional(Config.Duration("MCORE_REQUEST_TIMEOUT")),
  closeTimeout: optional(Config.Duration("MCORE_CLOSE_TIMEOUT")),
  drainTimeout: optional(Config.Duration("MCORE_DRAIN_TIMEOUT")),
  maxFrameBytes: optional(Config.Int("MCORE_MAX_FRAME_BYTES")),
  maxDecodedBytes: optional(Config.Int("MCORE_MAX_DECODED_BYTES")),
  curve: curveConfig
})
