/**
 * The coordinator package's one error: why a coordinator could not start, as a reason union.
 *
 * @since 0.2.0
 */
import * as Schema from "effect/Schema"

/**
 * An option out of range or of the wrong kind, found before anything is bound.
 *
 * @category errors
 * @since 0.2.0
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
 * The address could not be bound (in use, not this host's, a bad endpoint).
 *
 * @category errors
 * @since 0.2.0
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
 * Every reason a coordinator fails to start.
 *
 * @category errors
 * @since 0.2.0
 */
export const CoordinatorErrorReason = Schema.Union([InvalidOption, BindFailed])

/**
 * @category errors
 * @since 0.2.0
 */
export type CoordinatorErrorReason = typeof CoordinatorErrorReason.Type

/**
 * A coordinator that could not start, and why (`reason`).
 *
 * @example
 * ```ts
 * import { Coordinator } from "@mcore-effect/coordinator"
 * import { Effect } from "effect"
 *
 * const tokenizer = { tokenize: () => [], detokenize: () => "" }
 * const program = Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main", tokenizer }).pipe(
 *   Effect.catchTag("CoordinatorError", (error) => Effect.logError(error.message)),
 *   Effect.scoped
 * )
 * ```
 *
 * @category errors
 * @since 0.2.0
 */
export class CoordinatorError extends Schema.TaggedError<CoordinatorError>("@mcore-effect/coordinator/CoordinatorError")(
  "CoordinatorError",
  { reason: CoordinatorErrorReason }
) {
  override get message(): string {
    return `${this.reason._tag}: ${this.reason.message}`
  }
}

/**
 * A `CoordinatorError` of `reason`.
 *
 * @category constructors
 * @since 0.2.0
 */
export const coordinatorError = (reason: CoordinatorErrorReason): CoordinatorError => new CoordinatorError({ reason })
