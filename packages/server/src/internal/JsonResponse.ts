/**
 * JSON responses: a value, or a {@link ServerError} in OpenAI's error shape with its status.
 * Built synchronously (`JSON.stringify` into a text body), not through an effect per response.
 *
 * @since 0.1.0
 */
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { body, type ServerError } from "../ServerError.ts"

const contentType = "application/json"

/**
 * A JSON response.
 *
 * @example
 * ```ts
 * import * as JsonResponse from "./JsonResponse.ts"
 *
 * const response = JsonResponse.json({ ok: true })
 * response.status // 200
 * ```
 *
 * @since 0.1.0
 */
export const json = (value: unknown, status = 200): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(JSON.stringify(value), { status, contentType })

/**
 * A JSON body with its status, `Retry-After` on a 503 (every 503 the server gives carries one:
 * a client or a load balancer retries, elsewhere or here, after a second).
 *
 * @since 0.2.0
 */
export const withStatus = (value: unknown, status: number): HttpServerResponse.HttpServerResponse =>
  status === 503
    ? HttpServerResponse.text(JSON.stringify(value), { status, contentType, headers: { "retry-after": "1" } })
    : json(value, status)

/**
 * The response for a failed request: its status, OpenAI's error body, and `Retry-After` when
 * waiting helps (429, 503).
 *
 * @since 0.1.0
 */
export const error = (failure: ServerError): HttpServerResponse.HttpServerResponse => {
  const status = failure.status
  const retry = status === 429 || status === 503
  const authenticate = status === 401
  return HttpServerResponse.text(JSON.stringify(body(failure)), {
    status,
    contentType,
    ...(retry ? { headers: { "retry-after": "1" } } : authenticate ? { headers: { "www-authenticate": "Bearer" } } : {})
  })
}
