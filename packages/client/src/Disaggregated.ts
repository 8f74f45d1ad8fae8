/**
 * Prefill/decode disaggregation over Megatron-LM's KV hand-off: a client of a prefill pool and a
 * decode pool that is itself an `InferenceClient` service, so the text layer and the server run
 * on it unchanged. Each request is prefilled on a prefill coordinator (`do_kv_handoff`, no token
 * to generate: its engine samples the first token and pins the prompt's KV blocks), decoded on a
 * decode coordinator (SUBMIT_REQUEST_WITH_KV with the prefill reply's `kv_meta` and `block_ids`:
 * its engine pulls the blocks and generates the whole answer, starting with the sampled token),
 * and the prefill's pin released with exactly one RELEASE_KV, sent through the member and on the
 * connection that made it, once the decode can no longer read the blocks (see
 * `internal/handoff/request.ts` for every path).
 *
 * The service's ids are its own (one counter): `abort` (and `sendAbort`, the same here) ends a
 * request made by `submitWithId` or `start`; a `submit` or a `stream` ends by interruption or by
 * ending consumption. Control signals go to every member of both pools; `submitWithKvHandoff`,
 * `streamWithKvHandoff` and `releaseKvHandoff` are refused (`InvalidArgument`): the hand-offs
 * are this client's own, released through the member that made them.
 *
 * Megatron-LM main (d98e8a64dd) and the dialects that carry the hand-off (`main`, `pr-6497`,
 * `reference`) are served; the others are refused by name. Refused before anything is sent: a
 * text prompt (the decode engine takes token ids only), log probs (the decode import ends its
 * engine on them), `num_tokens_total`, media.
 *
 * Risk, sized by `decodeGrace`: when the decode coordinator is lost before the decode's first
 * output, or does not answer an ABORT, the prefill's blocks are released after `decodeGrace`. Should the decode engine still
 * be importing them then (its coordinator lost, the engine not), it reads freed blocks and may
 * cache corrupted KV. A prefill connection that drops takes its pins with it: the blocks stay
 * pinned on that engine until it restarts (counted in `Stats.died`), because the id may name
 * another request's blocks on a coordinator that came back. A RELEASE_KV queued in the moment
 * between the prefill coordinator's death and the client hearing of it is delivered to its
 * successor ahead of the client's new CONNECT (as a ZeroMQ pipe keeps it across the reconnect),
 * which Megatron's coordinator ignores as from a client it does not know.
 *
 * @since 0.2.0
 */
import { Dialect } from "@mcore-effect/protocol"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Result from "effect/Result"
import type * as Scope from "effect/Scope"
import * as ClientConfig from "./ClientConfig.ts"
import { type ClientError, clientError, InvalidRequest } from "./ClientError.ts"
import type { Service } from "./ClientService.ts"
import { InferenceClient, make as makeClient } from "./InferenceClient.ts"
import type { HandoffContext, PoolMember } from "./internal/handoff/request.ts"
import { type Event, Ledger, type Stats } from "./internal/handoff/ledger.ts"
import { invalidArgument } from "./internal/arguments.ts"
import { makeHandoffService } from "./internal/handoff/service.ts"
import * as Setting from "./Setting.ts"

export type { PoolMember } from "./internal/handoff/request.ts"

/**
 * The former name of {@link PoolMember}, kept so that existing code compiles.
 *
 * @deprecated Use `PoolMember` (a `Member` is also a fleet's coordinator, `Fleet.Member`).
 * @since 0.2.0
 * @category models
 */
export type Member = PoolMember
export {
  blocksPinned,
  type Event,
  handoffsDecoded,
  handoffsFailed,
  handoffsReleased,
  handoffsStarted,
  type Stats
} from "./internal/handoff/ledger.ts"

/**
 * The pools and settings of a disaggregated client.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /** The prefill pool: one member per coordinator (round robin over the connected ones). */
  readonly prefill: ReadonlyArray<PoolMember>
  /** The decode pool. */
  readonly decode: ReadonlyArray<PoolMember>
  /** A deadline per request (its `timeout` overrides it). Default: none. */
  readonly requestTimeout?: Duration.Input | undefined
  /**
   * How long the decode may stay silent before the prefill's blocks are released anyway: after
   * the decode coordinator is lost before the decode's first output, or after an ABORT (the
   * caller gone, the deadline passed) that the decode does not answer (see the module's risk
   * note). Default 30 seconds.
   */
  readonly decodeGrace?: Duration.Input | undefined
  /** Told of each step of every hand-off, in order (see {@link Event}): for logs and audits. */
  readonly observe?: ((event: Event) => void) | undefined
}

/**
 * The disaggregation's own options, each declared once (its default, check and `mcore serve`
 * flag come from here, as the client's do from `ClientConfig.settings`).
 *
 * @since 0.2.0
 * @category settings
 */
export const settings = {
  requestTimeout: Setting.duration({
    description: "A deadline per request of a disaggregated client (a request's own timeout overrides it); none by default"
  }),
  decodeGrace: Setting.duration({
    description: "With --prefill-coordinator: how long a decode may stay silent (its coordinator lost, or an ABORT " +
      "unanswered) before the prefill's KV blocks are released anyway (the risk: a decode engine still importing them)",
    default: "30 seconds",
    flag: "decode-grace"
  })
}

/**
 * A disaggregated client: the `InferenceClient` service over both pools, and its books.
 *
 * @since 0.2.0
 * @category models
 */
export interface Disaggregated {
  readonly client: Service
  /** What the requests and pins came to so far. */
  readonly stats: Effect.Effect<Stats>
  /** Waits until no background wait runs (every pin of an ended request settled). */
  readonly idle: Effect.Effect<void>
}


/** The dialects' check: every member speaks one dialect, which carries the hand-off and ABORT. */
const dialectOf = (options: Options): Result.Result<Dialect.Dialect, ClientError> => {
  if (options.prefill.length === 0) return Result.fail(invalidArgument("prefill", "needs at least one coordinator"))
  if (options.decode.length === 0) return Result.fail(invalidArgument("decode", "needs at least one coordinator"))
  const dialect = options.prefill[0]!.client.dialect
  for (const member of [...options.prefill, ...options.decode]) {
    if (member.client.dialect.name !== dialect.name) {
      return Result.fail(
        invalidArgument("protocol", `${member.name} speaks ${member.client.dialect.name}, ${options.prefill[0]!.name} ${dialect.name}`)
      )
    }
  }
  for (const feature of ["kvHandoff", "abort"] as const) {
    const supported = Dialect.requireFeature(dialect, feature, "prefill/decode disaggregation")
    if (Result.isFailure(supported)) return Result.fail(clientError(new InvalidRequest({ error: supported.failure })))
  }
  return Result.succeed(dialect)
}

/**
 * Builds the disaggregated client over member clients built elsewhere (their scopes must outlive
 * this one's). Closing its scope releases at once the pins whose release waits in the
 * background. Fails with `InvalidArgument` for an empty pool or mixed dialects, with
 * `InvalidRequest` (`UnsupportedByDialect`, naming it) for a dialect without the hand-off.
 *
 * @example
 * ```ts
 * import { Disaggregated, InferenceClient } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const prefill = yield* InferenceClient.make({ address: "tcp://127.0.0.1:5555", protocol: "main" })
 *   const decode = yield* InferenceClient.make({ address: "tcp://127.0.0.1:5556", protocol: "main" })
 *   const disaggregated = yield* Disaggregated.make({
 *     prefill: [{ name: "tcp://127.0.0.1:5555", client: prefill }],
 *     decode: [{ name: "tcp://127.0.0.1:5556", client: decode }]
 *   })
 *   const reply = yield* disaggregated.client.submit([1, 2, 3, 4], { num_tokens_to_generate: 16 })
 *   return reply.generated_tokens
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = Effect.fnUntraced(function*(options: Options) {
  const dialect = dialectOf(options)
  if (Result.isFailure(dialect)) return yield* Effect.fail(dialect.failure)
  const resolved = Setting.resolve(settings, { requestTimeout: options.requestTimeout, decodeGrace: options.decodeGrace })
  if (Result.isFailure(resolved)) return yield* Effect.fail(invalidArgument(resolved.failure.name, resolved.failure.why))
  const { decodeGrace, requestTimeout } = resolved.success
  const ledger = new Ledger(yield* Effect.context<never>(), options.observe)
  const scope = yield* Effect.scope
  const context: HandoffContext = {
    prefill: options.prefill,
    decode: options.decode,
    requestTimeoutMillis: requestTimeout === undefined || requestTimeout === Infinity ? undefined : requestTimeout,
    decodeGrace: decodeGrace === Infinity ? Duration.infinity : Duration.millis(decodeGrace),
    ledger,
    scope,
    cursor: { prefill: 0, decode: 0 }
  }
  const client = makeHandoffService(context, dialect.success)
  return { client, stats: Effect.sync(() => ledger.stats), idle: ledger.idle } satisfies Disaggregated
})

/**
 * A disaggregated client over coordinators it connects to itself: one `InferenceClient` per
 * address (each member named by its address), all in one dialect.
 *
 * @since 0.2.0
 * @category models
 */
export interface AddressOptions extends Omit<Options, "prefill" | "decode"> {
  /** The client options shared by every member (the address is each member's own). */
  readonly client: Omit<ClientConfig.ClientOptions, "address">
  readonly prefill: ReadonlyArray<string>
  readonly decode: ReadonlyArray<string>
}

/**
 * {@link make} over clients it builds, one per address, owned by the same scope (closed after
 * it: its pins are released before the members close).
 *
 * @since 0.2.0
 * @category constructors
 */
export const connect = (options: AddressOptions): Effect.Effect<Disaggregated, ClientError, Scope.Scope> =>
  Effect.gen(function*() {
    const members = (addresses: ReadonlyArray<string>) =>
      Effect.forEach(addresses, (address) =>
        Effect.map(makeClient({ ...options.client, address }), (client): PoolMember => ({ name: address, client: client as Service })))
    const prefill = yield* members(options.prefill)
    const decode = yield* members(options.decode)
    return yield* make({ ...options, prefill, decode })
  })

/**
 * The disaggregated client's books, as a service beside the `InferenceClient` {@link layer}
 * provides.
 *
 * @since 0.2.0
 * @category services
 */
export class DisaggregatedStats extends Context.Service<DisaggregatedStats, Omit<Disaggregated, "client">>()(
  "@mcore-effect/client/DisaggregatedStats"
) {}

/**
 * {@link connect} as a layer providing the `InferenceClient` service (so the text layer and the
 * server run on it unchanged) and its books.
 *
 * @example
 * ```ts
 * import { Disaggregated } from "@mcore-effect/client"
 *
 * const ClientLive = Disaggregated.layer({
 *   client: { protocol: "main" },
 *   prefill: ["tcp://127.0.0.1:5555"],
 *   decode: ["tcp://127.0.0.1:5556"],
 *   decodeGrace: "10 seconds"
 * })
 * ```
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options: AddressOptions): Layer.Layer<InferenceClient | DisaggregatedStats, ClientError> =>
  Layer.effectContext(
    Effect.map(connect(options), (d) =>
      Context.make(InferenceClient, d.client).pipe(Context.add(DisaggregatedStats, { stats: d.stats, idle: d.idle })))
  )
