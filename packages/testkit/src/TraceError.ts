/**
 * The one error type of wire traces (reading, writing, recording, replaying), as a small tagged
 * reason. Socket and waiting reasons are the testkit's own (`NotLoopback`, `BindFailed`,
 * `ConnectFailed`, `WaitTimedOut`).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { BindFailed, ConnectFailed, NotLoopback, WaitTimedOut } from "./TestkitError.ts"

/**
 * A trace file (or text) that is not a trace: bad JSON, a missing or ill-typed field, a line
 * that is neither the header nor a message. `line` counts from 1.
 *
 * @category models
 * @since 0.1.0
 */
export class InvalidTrace extends Schema.TaggedClass<InvalidTrace>()("InvalidTrace", {
  line: Schema.Number,
  why: Schema.String
}) {
  get message(): string {
    return `invalid trace at line ${this.line}: ${this.why}`
  }
}

/**
 * A trace written by a later, incompatible major version of the format.
 *
 * @category models
 * @since 0.1.0
 */
export class UnsupportedVersion extends Schema.TaggedClass<UnsupportedVersion>()("UnsupportedVersion", {
  version: Schema.Number,
  supported: Schema.Number
}) {
  get message(): string {
    return `trace format version ${this.version} is newer than this reader (it reads up to ${this.supported})`
  }
}

/**
 * Reading or writing a trace file failed.
 *
 * @category models
 * @since 0.1.0
 */
export class TraceIoFailed extends Schema.TaggedClass<TraceIoFailed>()("TraceIoFailed", {
  path: Schema.String,
  operation: Schema.Literals(["read", "write"]),
  cause: Schema.Defect()
}) {
  get message(): string {
    return `cannot ${this.operation} ${this.path}: ${this.cause instanceof Error ? this.cause.message : String(this.cause)}`
  }
}

/**
 * A replayed conversation went another way than the recording: the peer under test sent (or a
 * coordinator answered) something other than what the trace holds at `index`. `index` is
 * `null` for a message the trace has no place for at all (an extra message, an unknown peer).
 * `expected` and `actual` are the decoded messages (raw frames when a side does not decode);
 * `path` locates the first difference inside them.
 *
 * @category models
 * @since 0.1.0
 */
export class ReplayMismatch extends Schema.TaggedClass<ReplayMismatch>()("ReplayMismatch", {
  index: Schema.NullOr(Schema.Number),
  peer: Schema.String,
  path: Schema.String,
  why: Schema.String,
  expected: Schema.Unknown,
  actual: Schema.Unknown
}) {
  get message(): string {
    const at = this.index === null ? "unexpected message" : `trace entry ${this.index}`
    return `${at} (${this.peer}): ${this.why}${this.path === "" ? "" : ` at ${this.path}`}`
  }
}

/**
 * A replay waited longer than allowed for a message the trace says comes next (the peer under
 * test went quiet, or never connected).
 *
 * @category models
 * @since 0.1.0
 */
export class ReplayTimedOut extends Schema.TaggedClass<ReplayTimedOut>()("ReplayTimedOut", {
  index: Schema.Number,
  peer: Schema.String,
  millis: Schema.Number
}) {
  get message(): string {
    return `timed out after ${this.millis} ms waiting for trace entry ${this.index} (${this.peer})`
  }
}

/**
 * @category schemas
 * @since 0.1.0
 */
export const TraceErrorReason = Schema.Union([
  InvalidTrace,
  UnsupportedVersion,
  TraceIoFailed,
  ReplayMismatch,
  ReplayTimedOut,
  NotLoopback,
  BindFailed,
  ConnectFailed,
  WaitTimedOut
])

/**
 * @category errors
 * @since 0.1.0
 */
export type TraceErrorReason = typeof TraceErrorReason.Type

/**
 * A wire-trace failure: match on `reason._tag`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Trace } from "@mcore-effect/testkit"
 *
 * Trace.read("session.trace.jsonl").pipe(
 *   Effect.catchTag("TraceError", (e) =>
 *     e.reason._tag === "UnsupportedVersion" ? Effect.succeed(undefined) : Effect.fail(e))
 * )
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class TraceError extends Schema.TaggedError<TraceError>("@mcore-effect/testkit/TraceError")(
  "TraceError",
  { reason: TraceErrorReason }
) {
  override get message(): string {
    return `${this.reason._tag}: ${this.reason.message}`
  }
}

/**
 * @category utils
 * @since 0.1.0
 */
export const traceError = (reason: TraceErrorReason): TraceError => new TraceError({ reason })
