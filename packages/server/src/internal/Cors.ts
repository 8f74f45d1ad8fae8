/**
 * Cross-origin requests (a browser page calling the server through an OpenAI SDK): off unless
 * origins are allowed (`--allowed-origins`). For an allowed `Origin` every response carries
 * `Access-Control-Allow-Origin` (and `Vary: Origin`) and exposes the headers the SDKs read
 * (`x-request-id`, `retry-after`, ...); a preflight `OPTIONS` is answered 204 with the methods and
 * the headers the page asked for (the SDKs send `authorization`, `content-type`, `x-stainless-*`),
 * without the API key (browsers send none on a preflight). A preflight from another origin is a
 * 403.
 *
 * @since 0.1.0
 */
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type { IncomingMessage, ServerResponse } from "node:http"

/**
 * Origins allowed (`*`: any).
 *
 * @since 0.1.0
 */
export type Origins = ReadonlyArray<string>

const EXPOSED = "x-request-id, x-ignored-fields, retry-after, www-authenticate, openai-processing-ms, openai-version"
const METHODS = "GET, POST, OPTIONS"

/** The value of `Access-Control-Allow-Origin` for `origin`, when it is allowed. */
export const allowed = (origins: Origins, origin: string | undefined): string | undefined => {
  if (origin === undefined || origins.length === 0) return undefined
  if (origins.includes("*")) return "*"
  return origins.includes(origin) ? origin : undefined
}

/**
 * Sets the CORS headers of an allowed origin's request on its Node response (a listener of the
 * Node server, first for every request, so streamed answers carry them too).
 *
 * @since 0.1.0
 */
export const decorate = (origins: Origins, request: IncomingMessage, response: ServerResponse): void => {
  const allow = allowed(origins, request.headers.origin)
  if (allow === undefined) return
  response.setHeader("access-control-allow-origin", allow)
  if (allow !== "*") response.setHeader("vary", "Origin")
  response.setHeader("access-control-expose-headers", EXPOSED)
}

/**
 * The answer to a preflight (`OPTIONS` with an `Origin`): 204 with what the browser asked to
 * send, or 403 for an origin not allowed; `undefined` when CORS is off (the request is then
 * answered as any unknown route).
 *
 * @since 0.1.0
 */
export const preflight = (
  origins: Origins,
  request: HttpServerRequest.HttpServerRequest
): HttpServerResponse.HttpServerResponse | undefined => {
  if (origins.length === 0) return undefined
  if (allowed(origins, request.headers["origin"]) === undefined) {
    return HttpServerResponse.text("origin not allowed", { status: 403 })
  }
  return HttpServerResponse.empty({
    status: 204,
    headers: {
      "access-control-allow-methods": METHODS,
      "access-control-allow-headers": request.headers["access-control-request-headers"] ?? "authorization, content-type",
      "access-control-max-age": "600"
    }
  })
}
