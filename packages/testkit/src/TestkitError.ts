/**
 * The one error type of the testkit: what went wrong starting a test coordinator or engine,
 * as a small tagged reason.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A test coordinator binds only on loopback (`tcp://127.x.x.x`, `tcp://[::1]`, `ipc://`).
 *
 * @category models
 * @since 0.1.0
 */
export class NotLoopback extends Schema.TaggedClass<NotLoopback>()("NotLoopback", { address: Schema.String }) {
  get message(): string {
    return `refusing to bind ${this.address}: test sockets bind on loopback only (tcp://127.0.0.1:<port>, tcp://[::1]:<port>, ipc://<path>)`
  }
}

/**
 * Binding the ROUTER failed (address in use, bad path).
 *
 * @category models
 * @since 0.1.0
 */
export class BindFailed extends Schema.TaggedClass<BindFailed>()("BindFailed", {
  address: Schema.String,
  cause: Schema.Defect()
}) {
  get message(): string {
    return `cannot bind ${this.address}: ${this.cause instanceof Error ? this.cause.message : String(this.cause)}`
  }
}

/**
 * Connecting a DEALER failed (a malformed address).
 *
 * @category models
 * @since 0.1.0
 */
export class ConnectFailed extends Schema.TaggedClass<ConnectFailed>()("ConnectFailed", {
  address: Schema.String,
  cause: Schema.Defect()
}) {
  get message(): string {
    return `cannot connect to ${this.address}: ${this.cause instanceof Error ? this.cause.message : String(this.cause)}`
  }
}

/**
 * An option out of range.
 *
 * @category models
 * @since 0.1.0
 */
export class InvalidOption extends Schema.TaggedClass<InvalidOption>()("InvalidOption", {
  option: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `invalid option ${this.option}: ${this.why}`
  }
}

/**
 * Waiting for the coordinator or an engine to reach a condition took longer than allowed.
 *
 * @category models
 * @since 0.1.0
 */
export class WaitTimedOut extends Schema.TaggedClass<WaitTimedOut>()("WaitTimedOut", {
  what: Schema.String,
  millis: Schema.Number
}) {
  get message(): string {
    return `timed out after ${this.millis} ms waiting for ${this.what}`
  }
}

/**
 * @category schemas
 * @since 0.1.0
 */
export const TestkitErrorReason = Schema.Union([NotLoopback, BindFailed, ConnectFailed, InvalidOption, WaitTimedOut])

/**
 * @category errors
 * @since 0.1.0
 */
export type TestkitErrorReason = typeof TestkitErrorReason.Type

/**
 * The testkit's error: match on `reason._tag`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestCoordinator } from "@mcore-effect/testkit"
 *
 * TestCoordinator.make({ address: "tcp://0.0.0.0:5555" }).pipe(
 *   Effect.catchTag("TestkitError", (e) => Effect.succeed(e.reason._tag)) // "NotLoopback"
 * )
 * ```
 *
 * @category errors
 * @since 0.1.0
 */
export class TestkitError extends Schema.TaggedError<TestkitError>("@mcore-effect/testkit/TestkitError")(
  "TestkitError",
  { reason: TestkitErrorReason }
) {
  override get message(): string {
    return `${this.reason._tag}: ${this.reason.message}`
  }
}

/**
 * @category utils
 * @since 0.1.0
 */
export const testkitError = (reason: TestkitErrorReason): TestkitError => new TestkitError({ reason })
