/**
 * What an `InferenceClient` is built from: the coordinator's address, the seed's constructor
 * arguments (`deserialize`, `block_size_tokens`, `prefix_caching_coordinator_policy`), and the
 * timeouts the Python client lacks. Every option is declared once, in {@link settings}: its type
 * ({@link ClientOptions}), default ({@link defaults}), check ({@link resolve}), environment
 * variable ({@link config}) and, where `mcore` takes it, its flag all come from there.
 *
 * @since 0.1.0
 */
import { Dialect, Dialects, PrefixHashing } from "@mcore-effect/protocol"
import type * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { type CurveOptions, curveConfig, curveProblem } from "./internal/curveConfig.ts"
import * as Kinds from "./internal/settingKinds.ts"
import * as Setting from "./Setting.ts"

export type {
  /**
   * CurveZMQ keys, Z85 text (40 characters), as `zeromq`'s `curveKeyPair()` makes them.
   *
   * @since 0.1.0
   * @category models
   */
  CurveOptions
} from "./internal/curveConfig.ts"

/**
 * Where the table of dialects is (which Megatron-LM speaks which, what each carries): the
 * project README's section "Against a real Megatron deployment".
 *
 * @since 0.2.0
 * @category constants
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
 * @category constants
 */
export const protocolChoices = `the coordinator's wire dialect, one of ${Dialect.names.join(", ")} ` +
  `(no default: a dialect the coordinator does not speak can kill it; which Megatron-LM speaks which: ${dialectTable})`

/**
 * Every option of the client, declared once. {@link ClientOptions} is their type; each carries
 * its default, check, environment variable and (for `address` and `connectTimeout`) `mcore` flag.
 *
 * @since 0.2.0
 * @category config
 */
export const settings = {
  /** The coordinator's ROUTER address: `tcp://host:port` or `ipc://path`. */
  address: Setting.required(
    Setting.text({
      description: "The coordinator's address: tcp://host:port or ipc://path",
      env: "MCORE_COORDINATOR_ADDRESS",
      flag: { name: "address", alias: "a", metavar: "address" }
    }),
    "the coordinator's address (tcp://host:port or ipc://path), or give the address in code with InferenceClient.layer({ address, protocol })"
  ),
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
  protocol: Setting.required(
    Setting.custom<Dialect.Name, Dialect.Dialect>({
      description: "The coordinator's wire protocol, by Megatron-LM version",
      env: "MCORE_PROTOCOL",
      envSchema: Schema.Literals(Dialect.names),
      choices: Dialect.names,
      resolve: (name) => Dialects.parse(name as Dialect.Name)
    }),
    protocolChoices
  ),
  /**
   * `true`: replies are typed `DynamicInferenceRequest`s. `false` (default): the raw reply map,
   * for lower overhead.
   */
  deserialize: Setting.boolean({ description: "Replies as typed DynamicInferenceRequests", env: "MCORE_DESERIALIZE" }),
  /**
   * The engines' KV block size in tokens, to hash token prompts for prefix routing. Must match the
   * engines. Unset leaves hashing to the coordinator.
   */
  blockSizeTokens: Setting.custom<number | null, number | null>({
    description: "The engines' KV block size in tokens, to hash prompts for prefix routing",
    env: "MCORE_BLOCK_SIZE_TOKENS",
    envSchema: Schema.Int,
    resolve: (n) => Result.succeed(n ?? null)
  }),
  /** The coordinator's routing policy; only prefix policies make this client hash. */
  prefixCachingPolicy: Setting.custom<PrefixHashing.PrefixCachingPolicy | null, PrefixHashing.PrefixCachingPolicy | null>({
    description: "The coordinator's routing policy; only prefix policies make this client hash",
    env: "MCORE_PREFIX_CACHING_POLICY",
    envSchema: PrefixHashing.PrefixCachingPolicy,
    choices: PrefixHashing.PrefixCachingPolicy.literals,
    resolve: (policy) => Result.succeed(policy ?? null)
  }),
  /** How long to wait for CONNECT_ACK before failing with `ConnectTimeout`. Default 10 seconds. */
  connectTimeout: Setting.duration({
    description: "How long to wait for the coordinator to answer CONNECT",
    default: Duration.seconds(10),
    env: "MCORE_CONNECT_TIMEOUT",
    flag: "connect-timeout"
  }),
  /**
   * How long to wait for CONNECT_ACK once the connection is up (ZeroMQ: its ZMTP handshake is
   * done), before failing with `ConnectTimeout` (`seen: "connected"`). Default 1 second: an
   * accepting coordinator answers CONNECT within milliseconds once the pipe is up, and one that
   * does not has taken the CONNECT for something else (Megatron-LM's restarting coordinator
   * registers the first `data_parallel_size` messages of any content as engines,
   * `coordinator.py:176-179`); every moment such an "engine" stays connected, the coordinator
   * may route a request to it, which is lost. `connectTimeout` still bounds the whole wait,
   * for a coordinator that is not reachable at all. Measured from the first connection that
   * came up; `Infinity`: only `connectTimeout` applies.
   */
  ackTimeout: Setting.duration({
    description: "How long to wait for the coordinator to answer CONNECT once the connection is up",
    default: Duration.seconds(1),
    positive: true,
    env: "MCORE_ACK_TIMEOUT"
  }),
  /** Interval between ZeroMQ heartbeats. Default 1 second. */
  heartbeatInterval: Setting.duration({
    description: "Interval between ZeroMQ heartbeats",
    default: Duration.seconds(1),
    infinite: "refused",
    env: "MCORE_HEARTBEAT_INTERVAL"
  }),
  /**
   * How long the coordinator may stay silent (no heartbeat answer) before the connection is
   * dropped and pending requests fail with `CoordinatorLost`. Default 5 seconds.
   */
  heartbeatTimeout: Setting.duration({
    description: "How long the coordinator may stay silent before the connection is dropped",
    default: Duration.seconds(5),
    infinite: "refused",
    env: "MCORE_HEARTBEAT_TIMEOUT"
  }),
  /**
   * A deadline for every request (overridable per request): on expiry the request is aborted on
   * the coordinator and fails with `RequestTimeout`. Default: none; infinity means none too.
   */
  requestTimeout: Setting.duration({
    description: "A deadline for every request, aborted on the coordinator after it",
    env: "MCORE_REQUEST_TIMEOUT"
  }),
  /**
   * The longest frame read from the coordinator, in bytes: a reply or partial over it fails its
   * own request with `ReplyTooLarge`, undecoded. ZeroMQ itself drops the connection on a frame
   * over twice this (then the client reconnects), so no frame is ever held larger. Default 64 MiB.
   */
  maxFrameBytes: Setting.integer({
    description: "The longest frame read from the coordinator, in bytes",
    default: 64 * 1024 * 1024,
    min: 1,
    unit: "bytes",
    env: "MCORE_MAX_FRAME_BYTES"
  }),
  /**
   * The socket to dial with, over the provided `Transport`: `zmtp` (`Transport.zmtp`) or `zeromq`
   * (`Transport.zeromq`). Default: the provided one, `Transport.standard` unless another is.
   */
  transport: Setting.choice({
    description: "The socket the client dials with: zmtp (our own DEALER) or zeromq (zeromq.js, for CurveZMQ); default zmtp, zeromq with CurveZMQ",
    choices: new Map([["zmtp", "zmtp" as const], ["zeromq", "zeromq" as const]]),
    env: "MCORE_TRANSPORT",
    flag: "transport"
  }),
  /**
   * The most bytes the link holds unsent (waiting for a connection, or unread by the
   * coordinator): a message over it fails its request with `SendFailed`, nothing of it sent.
   * `Transport.zmtp` only (libzmq counts messages, not bytes). Default 1 GiB.
   */
  maxQueuedBytes: Setting.integer({
    description: "The most bytes the link holds unsent before a send fails (transport zmtp)",
    default: 1024 * 1024 * 1024,
    min: 1,
    unit: "bytes",
    env: "MCORE_MAX_QUEUED_BYTES"
  }),
  /**
   * The most memory a reply or partial may take once decoded, in bytes, as estimated from its
   * msgpack layout before decoding (`MsgpackScan.decodedSize`): over it, the request fails with
   * `ReplyTooLarge`. Default 256 MiB.
   */
  maxDecodedBytes: Setting.integer({
    description: "The most memory a reply may take once decoded, in bytes",
    default: 256 * 1024 * 1024,
    min: 1,
    unit: "bytes",
    env: "MCORE_MAX_DECODED_BYTES"
  }),
  /** CurveZMQ, for a coordinator that authenticates its peers. Default: none. */
  curve: Setting.custom<CurveOptions, CurveOptions | undefined>({
    description: "CurveZMQ keys, for a coordinator that authenticates its peers",
    config: curveConfig,
    resolve: (curve) => {
      const why = curve === undefined ? undefined : curveProblem(curve)
      return why === undefined ? Result.succeed(curve) : Result.fail(why)
    }
  }),
  /**
   * The most closing may spend delivering messages still queued (a control signal sent just
   * before), while the coordinator is connected; when it is not, closing does not wait. Default
   * 1 second.
   */
  closeTimeout: Setting.duration({
    description: "The most closing may spend delivering messages still queued",
    // Far more than a connected coordinator needs (microseconds on loopback); little enough that a
    // program closing its client never notices.
    default: Duration.seconds(1),
    infinite: "refused",
    env: "MCORE_CLOSE_TIMEOUT"
  }),
  /**
   * Where the dialect's coordinator exits on a reply it routes to a closed client (every
   * Megatron-LM ref: `Dialect.closedClientReply`), the most closing waits for the replies the
   * coordinator still owes: of requests pending at the close (aborted first where the dialect has
   * ABORT_REQUEST) and of requests given up earlier on a dialect without it, which run to their
   * end on their engines. Past it, the client warns and closes. Unused on the reference dialect.
   * Default 30 seconds.
   */
  drainTimeout: Setting.duration({
    description: "The most closing waits for the replies the coordinator still owes",
    // An aborted request's reply comes at its engine's next step (milliseconds); without ABORT
    // (core_v0.17 to 0.19) a request runs to its end: 30 s covers a few thousand tokens at a
    // typical decode rate, and a program that closes with nothing in flight never waits.
    default: Duration.seconds(30),
    infinite: "refused",
    env: "MCORE_DRAIN_TIMEOUT"
  })
}

/**
 * Options of `InferenceClient.layer`: one for each of {@link settings}, `address` and `protocol`
 * required.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClientOptions extends Setting.Options<typeof settings> {}

/**
 * {@link ClientOptions} with defaults applied and durations in milliseconds.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResolvedOptions {
  readonly address: string
  readonly dialect: Dialect.Dialect
  readonly deserialize: boolean
  readonly hashing: PrefixHashing.HashingConfig
  readonly connectTimeoutMillis: number
  readonly ackTimeoutMillis: number
  readonly heartbeatIntervalMillis: number
  readonly heartbeatTimeoutMillis: number
  /** `undefined`: no default deadline. */
  readonly requestTimeoutMillis: number | undefined
  readonly maxFrameBytes: number
  readonly maxDecodedBytes: number
  readonly maxQueuedBytes: number
  /** `undefined`: the provided `Transport`. */
  readonly transport: "zmtp" | "zeromq" | undefined
  readonly curve: CurveOptions | undefined
  readonly closeTimeoutMillis: number
  readonly drainTimeoutMillis: number
}

/**
 * The declared defaults (from {@link settings}): durations as `Duration`s, limits in bytes.
 *
 * @since 0.1.0
 * @category config
 */
export const defaults = Setting.defaults(settings)

/**
 * What is wrong with an option: its name and why.
 *
 * @since 0.1.0
 * @category models
 */
export interface OptionProblem extends Setting.Problem {}

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
 * @category config
 */
export const durationMillis: (
  name: string,
  input: unknown,
  infinite?: "allowed" | "refused"
) => Result.Result<number, OptionProblem> = Kinds.durationMillis

/**
 * Applies the defaults and checks every option but the address (see {@link addressProblem}):
 * the protocol (required: missing, it fails with `name: "protocol"` and {@link protocolChoices}),
 * durations (with {@link durationMillis}), limits and CurveZMQ keys. A `requestTimeout` of
 * infinity means no deadline, as leaving it out does.
 *
 * @example
 * ```ts
 * import { ClientConfig } from "@mcore-effect/client"
 *
 * ClientConfig.resolve({ address: "tcp://127.0.0.1:5555", protocol: "main", maxFrameBytes: 0 })
 * // Result.fail({ name: "maxFrameBytes", why: "must be an integer >= 1, got 0" })
 * ```
 *
 * @since 0.1.0
 * @category config
 */
export const resolve = (options: ClientOptions): Result.Result<ResolvedOptions, OptionProblem> =>
  Result.flatMap(Setting.resolve(settings, options), (o) => {
    const resolved: ResolvedOptions = {
      address: o.address,
      dialect: o.protocol,
      deserialize: o.deserialize,
      hashing: { blockSizeTokens: o.blockSizeTokens, prefixCachingPolicy: o.prefixCachingPolicy },
      connectTimeoutMillis: o.connectTimeout,
      ackTimeoutMillis: o.ackTimeout,
      // ZeroMQ takes whole milliseconds, at least 1.
      heartbeatIntervalMillis: Math.max(1, Math.round(o.heartbeatInterval)),
      heartbeatTimeoutMillis: Math.max(1, Math.round(o.heartbeatTimeout)),
      requestTimeoutMillis: o.requestTimeout === Infinity ? undefined : o.requestTimeout,
      maxFrameBytes: o.maxFrameBytes,
      maxDecodedBytes: o.maxDecodedBytes,
      maxQueuedBytes: o.maxQueuedBytes,
      transport: o.transport,
      curve: o.curve,
      closeTimeoutMillis: o.closeTimeout,
      drainTimeoutMillis: o.drainTimeout
    }
    const problem = hashingProblem(resolved)
    return problem === undefined ? Result.succeed(resolved) : Result.fail(problem)
  })

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

/**
 * What is wrong with a coordinator address, or `undefined` when it is one the client connects
 * to (the ZeroMQ transport's check; see `internal/zeroMqAddress.ts`).
 *
 * @since 0.1.0
 * @category config
 */
export { addressProblem } from "./internal/zeroMqAddress.ts"

/**
 * What is wrong with the options besides the address (durations, limits, CurveZMQ keys), as the
 * option's name and why, or `undefined`: {@link resolve}'s check.
 *
 * @since 0.1.0
 * @category config
 */
export const optionProblem = (options: ClientOptions): OptionProblem | undefined => {
  const resolved = resolve(options)
  return Result.isFailure(resolved) ? resolved.failure : undefined
}

/**
 * {@link ClientOptions} read from configuration, each option from the variable its
 * {@link settings} entry names:
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
 * | `MCORE_MAX_QUEUED_BYTES` | `maxQueuedBytes` (an integer) |
 * | `MCORE_TRANSPORT` | `transport` (`zmtp` or `zeromq`) |
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
 * @category config
 */
export const config: Config.Config<ClientOptions> = Setting.config(settings)
