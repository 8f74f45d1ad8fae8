/**
 * The one error type of the server. Each reason is a small tagged class that says what went
 * wrong; the HTTP status and OpenAI's JSON error body (`{ error: { message, type, param, code } }`)
 * are derived from it, so every refusal, whatever the route, looks the way OpenAI's SDKs expect.
 *
 * @since 0.1.0
 */
import type { ClientError } from "@mcore-effect/client"
import * as Schema from "effect/Schema"

/**
 * The request is malformed: not JSON, a field of the wrong type or out of range, or a parameter
 * that would change the result and is not supported. `param` names the field (dotted path).
 *
 * @since 0.1.0
 * @category errors
 */
export class BadRequest extends Schema.Class<BadRequest>("@mcore-effect/server/BadRequest")({
  _tag: Schema.tag("BadRequest"),
  param: Schema.NullOr(Schema.String),
  why: Schema.String
}) {
  get message(): string {
    return this.param === null ? this.why : `${this.param}: ${this.why}`
  }
}

/**
 * The request names a model this server does not serve.
 *
 * @since 0.1.0
 * @category errors
 */
export class ModelNotFound extends Schema.Class<ModelNotFound>("@mcore-effect/server/ModelNotFound")({
  _tag: Schema.tag("ModelNotFound"),
  model: Schema.String,
  served: Schema.String
}) {
  get message(): string {
    return `the model ${JSON.stringify(this.model)} does not exist; this server serves ${JSON.stringify(this.served)}`
  }
}

/**
 * No API key, or the wrong one, while the server requires one.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unauthorized extends Schema.Class<Unauthorized>("@mcore-effect/server/Unauthorized")({
  _tag: Schema.tag("Unauthorized"),
  missing: Schema.Boolean
}) {
  get message(): string {
    return this.missing
      ? "no API key given: send it as a bearer token (Authorization: Bearer KEY)"
      : "incorrect API key"
  }
}

/**
 * The request body is larger than the server accepts.
 *
 * @since 0.1.0
 * @category errors
 */
export class BodyTooLarge extends Schema.Class<BodyTooLarge>("@mcore-effect/server/BodyTooLarge")({
  _tag: Schema.tag("BodyTooLarge"),
  limitBytes: Schema.Number
}) {
  get message(): string {
    return `the request body is larger than ${this.limitBytes} bytes`
  }
}

/**
 * No such route (or no such method on it).
 *
 * @since 0.1.0
 * @category errors
 */
export class NotFound extends Schema.Class<NotFound>("@mcore-effect/server/NotFound")({
  _tag: Schema.tag("NotFound"),
  method: Schema.String,
  path: Schema.String
}) {
  get message(): string {
    return `no route ${this.method} ${this.path}`
  }
}

/**
 * More requests in flight than the server's limit: try again later (429).
 *
 * @since 0.1.0
 * @category errors
 */
export class Overloaded extends Schema.Class<Overloaded>("@mcore-effect/server/Overloaded")({
  _tag: Schema.tag("Overloaded"),
  limit: Schema.Number
}) {
  get message(): string {
    return `the server is at its limit of ${this.limit} concurrent requests; retry later`
  }
}

/**
 * The coordinator is not reachable (lost, or the client is closing), or the server is shutting
 * down (503).
 *
 * @since 0.1.0
 * @category errors
 */
export class Unavailable extends Schema.Class<Unavailable>("@mcore-effect/server/Unavailable")({
  _tag: Schema.tag("Unavailable"),
  why: Schema.String
}) {
  get message(): string {
    return this.why
  }
}

/**
 * The request did not finish within its deadline; it was aborted on the coordinator (504).
 *
 * @since 0.1.0
 * @category errors
 */
export class DeadlineExceeded extends Schema.Class<DeadlineExceeded>("@mcore-effect/server/DeadlineExceeded")({
  _tag: Schema.tag("DeadlineExceeded"),
  timeoutMillis: Schema.Number
}) {
  get message(): string {
    return `the request did not finish within ${this.timeoutMillis} ms and was aborted`
  }
}

/**
 * The model's reply does not meet the request's forced `tool_choice` (`required`, or a named
 * function): the server wrote the call's start and the model went on with something that is not
 * that call (500, as the server failed to give what the request was entitled to; the request was
 * valid, so not a 4xx). The SDKs retry a 500 by default, which samples anew.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolChoiceNotMet extends Schema.Class<ToolChoiceNotMet>("@mcore-effect/server/ToolChoiceNotMet")({
  _tag: Schema.tag("ToolChoiceNotMet"),
  /** `"required"`, or `function "NAME"`. */
  choice: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `tool_choice ${this.choice} was not met: ${this.why}`
  }
}

/**
 * Anything else: a reply the server could not use, a tokenizer failure. The message is logged in
 * full; the client sees it too, since it names no secret.
 *
 * @since 0.1.0
 * @category errors
 */
export class Internal extends Schema.Class<Internal>("@mcore-effect/server/Internal")({
  _tag: Schema.tag("Internal"),
  why: Schema.String
}) {
  get message(): string {
    return this.why
  }
}

/**
 * Every reason a request can be refused or fail.
 *
 * @since 0.1.0
 * @category errors
 */
export const ServerErrorReason = Schema.Union([
  BadRequest,
  ModelNotFound,
  Unauthorized,
  BodyTooLarge,
  NotFound,
  Overloaded,
  Unavailable,
  DeadlineExceeded,
  ToolChoiceNotMet,
  Internal
])

/**
 * @since 0.1.0
 * @category errors
 */
export type ServerErrorReason = typeof ServerErrorReason.Type

/**
 * A failed request. `status` and {@link body} follow OpenAI's conventions.
 *
 * @example
 * ```ts
 * import { ServerError } from "@mcore-effect/server"
 *
 * const error = ServerError.serverError(new ServerError.BadRequest({ param: "temperature", why: "must be >= 0" }))
 * error.status // 400
 * ServerError.body(error) // { error: { message: "temperature: must be >= 0", type: "invalid_request_error", param: "temperature", code: null } }
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class ServerError extends Schema.TaggedError<ServerError>("@mcore-effect/server/ServerError")(
  "ServerError",
  { reason: ServerErrorReason }
) {
  override get message(): string {
    return this.reason.message
  }

  /** The HTTP status. */
  get status(): number {
    return STATUS[this.reason._tag]
  }
}

const STATUS: Record<ServerErrorReason["_tag"], number> = {
  BadRequest: 400,
  ModelNotFound: 404,
  Unauthorized: 401,
  BodyTooLarge: 413,
  NotFound: 404,
  Overloaded: 429,
  Unavailable: 503,
  DeadlineExceeded: 504,
  ToolChoiceNotMet: 500,
  Internal: 500
}

/** OpenAI's `type` for each reason (what its SDKs and clients switch on). */
const TYPE: Record<ServerErrorReason["_tag"], string> = {
  BadRequest: "invalid_request_error",
  ModelNotFound: "invalid_request_error",
  Unauthorized: "invalid_request_error",
  BodyTooLarge: "invalid_request_error",
  NotFound: "invalid_request_error",
  Overloaded: "rate_limit_exceeded",
  Unavailable: "service_unavailable",
  DeadlineExceeded: "timeout",
  ToolChoiceNotMet: "server_error",
  Internal: "server_error"
}

const CODE: Partial<Record<ServerErrorReason["_tag"], string>> = {
  ModelNotFound: "model_not_found",
  Unauthorized: "invalid_api_key",
  BodyTooLarge: "request_too_large",
  Overloaded: "rate_limit_exceeded",
  DeadlineExceeded: "timeout",
  ToolChoiceNotMet: "tool_choice_not_met"
}

/**
 * OpenAI's error object.
 *
 * @since 0.1.0
 * @category errors
 */
export interface ErrorBody {
  readonly error: {
    readonly message: string
    readonly type: string
    readonly param: string | null
    readonly code: string | null
  }
}

/**
 * The JSON body of an error response (and of the error record that ends a broken stream).
 *
 * @since 0.1.0
 * @category formatting
 */
export const body = (error: ServerError): ErrorBody => ({
  error: {
    message: error.message,
    type: TYPE[error.reason._tag],
    param: error.reason._tag === "BadRequest" ? error.reason.param : null,
    code: CODE[error.reason._tag] ?? null
  }
})

/**
 * Wraps a reason in a {@link ServerError}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const serverError = (reason: ServerErrorReason): ServerError => new ServerError({ reason })

/**
 * A 400 naming `param`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const badRequest = (param: string | null, why: string): ServerError =>
  serverError(new BadRequest({ param, why }))

/**
 * The server's view of a client failure: 503 when the coordinator is unreachable or the client
 * is closing, 504 on a deadline, 400 for a request the client refused before sending it (a bad
 * prompt or parameter), 500 for the rest.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromClientError = (error: ClientError.ClientError): ServerError => {
  const reason = error.reason
  switch (reason._tag) {
    case "CoordinatorLost":
    case "ClientClosed":
    case "ConnectTimeout":
    case "SendFailed":
      return serverError(new Unavailable({ why: `the coordinator is not available (${reason.message})` }))
    case "RequestTimeout":
      return serverError(new DeadlineExceeded({ timeoutMillis: reason.timeoutMillis }))
    case "InvalidRequest":
    case "InvalidArgument":
      return badRequest(null, reason.message)
    default:
      return serverError(new Internal({ why: error.message }))
  }
}
