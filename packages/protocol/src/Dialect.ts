/**
 * A protocol dialect: one coordinator wire protocol that exists, as data. Megatron-LM's
 * coordinator has changed its wire more than once (one msgpack frame per message in its releases
 * and main, a metadata frame plus payload frames in PR 6497, header values renumbered at
 * core_v0.19), and a message its coordinator cannot parse kills it. A dialect is a header table,
 * a framing and the message declarations of each direction; its codecs are derived from them as
 * the reference protocol's are, and the features it has are read off its table.
 *
 * `DialectCatalog` holds the catalog; this module holds what a dialect is and what every one of them
 * does with a message before encoding it: refuse what the dialect cannot carry.
 *
 * @since 0.2.0
 */
import * as Result from "effect/Result"
import * as Frames from "./Frames.ts"
import { floatKeysOf } from "./internal/wireNumbers.ts"
import type * as Headers from "./Headers.ts"
import type * as MessageSpec from "./MessageSpec.ts"
import * as Msgpack from "./Msgpack.ts"
import type { HashingConfig } from "./PrefixHashing.ts"
import { type ProtocolError, protocolError, UnsupportedByDialect } from "./ProtocolError.ts"
import * as SamplingParams from "./SamplingParams.ts"
import type * as Submission from "./Submission.ts"

/**
 * The dialects, by the Megatron-LM version that speaks each (see `DialectCatalog.all` for the refs):
 * newest Megatron-LM first, the project's own reference protocol last, the order every list of
 * choices shows them in.
 *
 * @category constants
 * @since 0.2.0
 */
export const names = ["main", "pr-6497", "core_v0.19", "core_v0.18", "core_v0.17", "core_v0.16", "reference"] as const

/**
 * A dialect's name.
 *
 * @category models
 * @since 0.2.0
 */
export type Name = (typeof names)[number]

/**
 * What a dialect may or may not carry. Each is refused with `UnsupportedByDialect` where the
 * dialect lacks it, before anything is sent.
 *
 * - `streaming`: ENGINE_REPLY_PARTIAL (stream submissions).
 * - `abort`: ABORT_REQUEST (an explicit abort; without it an interrupted request is only
 *   forgotten here and runs to completion on its engine).
 * - `kvHandoff`: SUBMIT_REQUEST_WITH_KV and RELEASE_KV.
 * - `media`: `multi_modal_data` in a submission.
 * - `blockHashes`: block hashes computed by the client (prefix-aware routing where the
 *   coordinator hashes for itself is the coordinator's business, not a client's).
 * - `offloadParams`: opaque offload parameters in a submission.
 * - `pause`, `suspend`, `stop`, `generationEpoch`, `profiler`, `shutdown`: the control signals.
 *
 * @category models
 * @since 0.2.0
 */
export type Feature =
  | "streaming"
  | "abort"
  | "kvHandoff"
  | "media"
  | "blockHashes"
  | "offloadParams"
  | "pause"
  | "suspend"
  | "stop"
  | "generationEpoch"
  | "profiler"
  | "shutdown"

/** The headers whose presence in a table gives each header-borne feature. */
const featureHeaders: ReadonlyArray<readonly [Feature, ReadonlyArray<Headers.HeaderName>]> = [
  ["streaming", ["ENGINE_REPLY_PARTIAL"]],
  ["abort", ["ABORT_REQUEST"]],
  ["kvHandoff", ["SUBMIT_REQUEST_WITH_KV", "RELEASE_KV"]],
  ["pause", ["PAUSE", "UNPAUSE"]],
  ["suspend", ["SUSPEND", "RESUME"]],
  ["stop", ["STOP"]],
  ["generationEpoch", ["SET_GENERATION_EPOCH"]],
  ["profiler", ["START_CUDA_PROFILER", "STOP_CUDA_PROFILER"]],
  ["shutdown", ["SHUTDOWN"]]
]

/** The feature a client message needs (a message not listed needs none). */
const featureOfTag: Readonly<Record<string, Feature>> = {
  SubmitRequestWithKv: "kvHandoff",
  ReleaseKv: "kvHandoff",
  AbortRequest: "abort",
  Pause: "pause",
  Unpause: "pause",
  Suspend: "suspend",
  Resume: "suspend",
  Stop: "stop",
  SetGenerationEpoch: "generationEpoch",
  StartCudaProfiler: "profiler",
  StopCudaProfiler: "profiler",
  Shutdown: "shutdown"
}

/**
 * A message of a dialect, as its codecs take and give it.
 *
 * @category models
 * @since 0.2.0
 */
export interface Message {
  readonly _tag: string
  readonly [field: string]: unknown
}

/**
 * One dialect.
 *
 * @category models
 * @since 0.2.0
 */
export interface Dialect {
  readonly name: Name
  /** The Megatron-LM refs that speak it, for people. */
  readonly megatron: string
  readonly framing: Frames.Framing
  readonly headers: Headers.Table
  readonly features: ReadonlySet<Feature>
  /**
   * What its coordinator does with a reply it routes to a client that has closed: `drop` it, or
   * `exit`. Megatron-LM's coordinator sets `ROUTER_MANDATORY` (core_v0.17 and later), so that send
   * raises `EHOSTUNREACH`, uncaught: the process exits and every client loses it (DIALECTS.md,
   * verified with `scripts/megatron/gone_client.py`); core_v0.16's does not, and drops it. A client of an `exit` dialect waits, when it
   * closes, for the replies it is still owed (`drainTimeout`).
   */
  readonly closedClientReply: "drop" | "exit"
  /**
   * The known sampling fields its `SamplingParams` has, in wire order (a prefix of
   * `SamplingParams.KnownFields`: each release added fields at the end).
   */
  readonly samplingFields: ReadonlyArray<string>
  /** What a client sends to the coordinator; the coordinator forwards the same layouts to engines. */
  readonly client: Frames.Codec<ReadonlyArray<MessageSpec.Any>>
  /** What the coordinator sends to a client. */
  readonly coordinator: Frames.Codec<ReadonlyArray<MessageSpec.Any>>
  /** What an engine sends to the coordinator (after registering with one empty frame). */
  readonly engine: Frames.Codec<ReadonlyArray<MessageSpec.Any>>
  /**
   * The SUBMIT_REQUEST message for a submission, every check done (the prompt, the parameters,
   * the media, what this dialect can carry); nothing is built for a refused one.
   */
  readonly submit: (input: Submission.SubmitInput, hashing: HashingConfig) => Result.Result<Message, ProtocolError>
  /** The SUBMIT_REQUEST_WITH_KV message (refused where the dialect has no KV hand-off). */
  readonly submitWithKv: (input: Submission.SubmitWithKvInput) => Result.Result<Message, ProtocolError>
}

/**
 * The features a header table carries (the submission-borne ones, `media`, `blockHashes` and
 * `offloadParams`, are the layout's and are added by the dialect's declaration).
 *
 * @category getters
 * @since 0.2.0
 */
export const featuresOf = (headers: Headers.Table): ReadonlySet<Feature> =>
  new Set(
    featureHeaders.filter(([, needed]) => needed.every((name) => headers.values[name] !== undefined)).map(([f]) => f)
  )

/**
 * The `UnsupportedByDialect` failure for a feature.
 *
 * @category errors
 * @since 0.2.0
 */
export const unsupported = (dialect: Dialect, feature: string, why?: string): ProtocolError =>
  protocolError(
    new UnsupportedByDialect({
      dialect: dialect.name,
      feature,
      why: why ?? `Megatron-LM ${dialect.megatron} has no such message; nothing was sent`
    })
  )

/**
 * Whether a dialect has a feature.
 *
 * @example
 * ```ts
 * import { Dialect, DialectCatalog } from "@mcore-effect/protocol"
 *
 * Dialect.supports(DialectCatalog.get("core_v0.19"), "streaming") // false
 * ```
 *
 * @category guards
 * @since 0.2.0
 */
export const supports = (dialect: Dialect, feature: Feature): boolean => dialect.features.has(feature)

/**
 * Fails with `UnsupportedByDialect` unless the dialect has the feature.
 *
 * @category validation
 * @since 0.2.0
 */
export const requireFeature = (dialect: Dialect, feature: Feature, why?: string): Result.Result<void, ProtocolError> =>
  dialect.features.has(feature) ? Result.void : Result.fail(unsupported(dialect, feature, why))

/**
 * Encodes a client message in a dialect: refused (nothing encoded) when the dialect lacks what
 * it needs, so no message a coordinator of the dialect cannot parse is ever built.
 *
 * @example
 * ```ts
 * import { Dialect, DialectCatalog } from "@mcore-effect/protocol"
 *
 * Dialect.encodeClient(DialectCatalog.get("main"), { _tag: "Pause" }) // Result.succeed([<pack([40])>])
 * Dialect.encodeClient(DialectCatalog.get("core_v0.19"), { _tag: "AbortRequest", requestId: 1 })
 * // Result.fail(UnsupportedByDialect: the core_v0.19 protocol does not support abort ...)
 * ```
 *
 * @category encoding
 * @since 0.2.0
 */
export const encodeClient = (dialect: Dialect, message: Message): Result.Result<Array<Uint8Array>, ProtocolError> => {
  const feature = featureOfTag[message._tag]
  if (feature !== undefined && !dialect.features.has(feature)) return Result.fail(unsupported(dialect, feature))
  return dialect.client.encode(message as never)
}

/**
 * Sampling parameters as a dialect's `SamplingParams` serializes them: the known fields it has,
 * then the extra keys. A field it lacks goes only when it holds its default (then it is left
 * out, as that release's Python client leaves it out); any other value is refused, since that
 * release's engine would set it as an attribute nobody reads. Validated parameters are frozen
 * and their bytes remembered, and so is their projection: reused parameters are projected and
 * encoded once per dialect.
 *
 * @category getters
 * @since 0.2.0
 */
export const samplingParamsFor = (
  dialect: Dialect,
  params: SamplingParams.SamplingParams
): Result.Result<SamplingParams.SamplingParams, ProtocolError> => {
  const fields = dialect.samplingFields
  if (fields.length === knownCount) return Result.succeed(params)
  let perDialect = projections.get(dialect.name)
  if (perDialect === undefined) projections.set(dialect.name, perDialect = new WeakMap())
  const hit = perDialect.get(params)
  if (hit !== undefined) return Result.succeed(hit)
  const kept = new Set(fields)
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(params)) {
    const value = (params as Record<string, unknown>)[key]
    if (kept.has(key) || !KNOWN.has(key)) {
      out[key] = value
    } else if (!sameValue(value, (SamplingParams.defaults as Record<string, unknown>)[key])) {
      return Result.fail(
        unsupported(dialect, `the sampling parameter ${key}`, `Megatron-LM ${dialect.megatron} has no ${key}; nothing was sent`)
      )
    }
  }
  const projected = out as SamplingParams.SamplingParams
  if (Object.isFrozen(params)) {
    // Frozen parameters are the client's cached ones: the projection is kept, encoded once.
    Object.freeze(projected)
    Msgpack.remember(projected, Msgpack.encode(new Msgpack.FloatFields(projected, floatFields)))
    perDialect.set(params, projected)
  }
  return Result.succeed(projected)
}

const KNOWN: ReadonlySet<string> = new Set(Object.keys(SamplingParams.KnownFields.fields))
const knownCount = KNOWN.size
const floatFields: ReadonlySet<string> = floatKeysOf(SamplingParams.SamplingParams.ast) ?? new Set()
const projections = new Map<string, WeakMap<object, SamplingParams.SamplingParams>>()

const sameValue = (a: unknown, b: unknown): boolean =>
  a === b || (Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => x === b[i]))
