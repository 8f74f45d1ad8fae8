/**
 * The data of a wire trace (`Trace`, public through it): its header and entries as Schema, and
 * their constructors; reading and writing trace files stay in `Trace.ts`.
 *
 * @since 0.1.0
 * @internal
 */
import { type Dialect, Dialects } from "@mcore-effect/protocol"
import * as Schema from "effect/Schema"

/**
 * The value of every trace's `format` field.
 *
 * @category constants
 * @since 0.1.0
 */
export const format = "mcore-effect-trace"

/**
 * The newest major version this module reads and writes. A trace in the reference protocol is
 * written as version 1, as it always was (every reader reads it); one in another dialect as
 * version 2, with its `protocol`, so that a version-1 reader refuses it (`UnsupportedVersion`)
 * instead of reading main's one-frame messages as the reference protocol's.
 *
 * @category constants
 * @since 0.1.0
 */
export const version = 2

/**
 * The version a trace in `protocol` is written as.
 *
 * @category utils
 * @since 0.2.0
 */
export const versionFor = (protocol: Dialect.Name): number => (protocol === "reference" ? 1 : 2)

/**
 * Which way a message travelled. The recorder writes the engine directions for peers that
 * registered as engines (their first message is one empty frame).
 *
 * @category schemas
 * @since 0.1.0
 */
export const Direction = Schema.Literals([
  "client->coordinator",
  "coordinator->client",
  "engine->coordinator",
  "coordinator->engine"
])

/**
 * @category models
 * @since 0.1.0
 */
export type Direction = typeof Direction.Type

/**
 * The first line of a trace.
 *
 * @example
 * ```ts
 * import { Trace } from "@mcore-effect/testkit"
 * import { Schema } from "effect"
 *
 * Schema.decodeUnknownSync(Trace.Header)({
 *   format: "mcore-effect-trace", version: 1, created: "2025-01-01T00:00:00.000Z", meta: {}
 * })
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const Header = Schema.Struct({
  format: Schema.Literal(format),
  version: Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  created: Schema.String,
  meta: Schema.Record(Schema.String, Schema.Unknown),
  /**
   * The dialect of the frames: any dialect from version 2 (`reference` also in version 1, where
   * an older reader ignores it and reads the reference protocol anyway); absent: not recorded,
   * read as the reference protocol.
   */
  protocol: Schema.optionalKey(Dialects.DialectName)
})

/**
 * @category models
 * @since 0.1.0
 */
export type Header = typeof Header.Type

/**
 * One recorded message: every line after the header.
 *
 * @example
 * ```ts
 * import { Trace } from "@mcore-effect/testkit"
 * import { Schema } from "effect"
 *
 * const entry = Schema.decodeUnknownSync(Trace.Entry)({
 *   dir: "client->coordinator", peer: "client-0", t: 0, frames: ["kQA="]
 * })
 * entry.frames[0] // Uint8Array [0x91, 0x00]: pack([0]), CONNECT
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const Entry = Schema.Struct({
  dir: Direction,
  peer: Schema.String,
  /** Microseconds since the recording started (monotonic clock). */
  t: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
  frames: Schema.Array(Schema.Uint8ArrayFromBase64)
})

/**
 * @category models
 * @since 0.1.0
 */
export type Entry = typeof Entry.Type

/**
 * A whole trace in memory.
 *
 * @category models
 * @since 0.1.0
 */
export interface Trace {
  readonly header: Header
  readonly entries: ReadonlyArray<Entry>
}

/**
 * The dialect a trace's frames are in: its header's `protocol`, or the reference protocol for a
 * trace without one (a version-1 trace, or one recorded without naming its dialect; `mcore trace
 * replay` refuses those unless told the dialect, as the frames may be in another).
 *
 * @example
 * ```ts
 * import { Trace } from "@mcore-effect/testkit"
 *
 * Trace.protocolOf(Trace.make([])) // "reference"
 * Trace.protocolOf(Trace.make([], { protocol: "main" })) // "main"
 * ```
 *
 * @category utils
 * @since 0.2.0
 */
export const protocolOf = (trace: Trace): Dialect.Name => trace.header.protocol ?? "reference"

/**
 * A trace from recorded entries, stamped now.
 *
 * @example
 * ```ts
 * import { Trace } from "@mcore-effect/testkit"
 *
 * const trace = Trace.make([], { meta: { source: "my test" } })
 * Trace.stringify(trace) // one header line
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (entries: ReadonlyArray<Entry>, options?: HeaderOptions): Trace => ({ header: makeHeader(options), entries })

/**
 * What a header is made from.
 *
 * @category models
 * @since 0.2.0
 */
export interface HeaderOptions {
  readonly meta?: Record<string, unknown> | undefined
  readonly created?: Date | undefined
  /**
   * The dialect the frames are in, written as the header's `protocol` (version 1 for `reference`,
   * which every reader reads the same, 2 for the others). Absent, the header names none and is
   * version 1 (read as `reference`, as every version-1 trace is): a trace whose dialect was not
   * known when it was recorded.
   */
  readonly protocol?: Dialect.Name | undefined
}

/**
 * A header for a trace started now.
 *
 * @category constructors
 * @since 0.1.0
 */
export const makeHeader = (options?: HeaderOptions): Header => {
  const protocol = options?.protocol
  const header = {
    format,
    version: versionFor(protocol ?? "reference"),
    created: (options?.created ?? new Date()).toISOString(),
    meta: options?.meta ?? {}
  } as const
  return protocol === undefined ? header : { ...header, protocol }
}
