/**
 * The argument checks the client's services share: an `InvalidArgument` made one way, the
 * request-id check (a client's, a fleet's, a hand-off's), and a duration option in milliseconds.
 *
 * @since 0.2.0
 * @internal
 */
import type * as Duration from "effect/Duration"
import * as Result from "effect/Result"
import * as ClientConfig from "../ClientConfig.ts"
import { type ClientError, clientError, InvalidArgument } from "../ClientError.ts"

/** A `ClientError` for the argument `name`, and why it was refused. */
export const invalidArgument = (name: string, why: string): ClientError => clientError(new InvalidArgument({ name, why }))

/** Why `requestId` is not a request id (a non-negative safe integer), or `undefined` when it is one. */
export const checkRequestId = (requestId: number): ClientError | undefined =>
  Number.isSafeInteger(requestId) && requestId >= 0
    ? undefined
    : invalidArgument("requestId", `expected a non-negative integer, got ${String(requestId)}`)

const none = Result.succeed(undefined)

/**
 * A duration option in milliseconds, checked as every duration is
 * ({@link ClientConfig.durationMillis}): `undefined` for none (not given with no `fallback`, or
 * infinite), `fallback` when not given. On a request's path: none allocates nothing.
 */
export const millisOf = (
  name: string,
  input: Duration.Input | undefined,
  fallback: number | undefined
): Result.Result<number | undefined, ClientError> => {
  if (input === undefined) return fallback === undefined ? none : Result.succeed(fallback)
  const millis = ClientConfig.durationMillis(name, input)
  if (Result.isFailure(millis)) return Result.fail(clientError(new InvalidArgument(millis.failure)))
  return Result.succeed(millis.success === Infinity ? undefined : millis.success)
}
