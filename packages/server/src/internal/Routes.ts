/**
 * How a route answers: a failure becomes OpenAI's error response with its status, every answer
 * is counted by route and status, and a generation route goes through admission (shutdown,
 * API key, body size, JSON) before its handler sees the body; the handler's responder
 * (`Respond`) takes a place among the requests in flight once its request is known to be valid. The server's state and text
 * generation are read once, when the routes are built, and handed to every request's handler
 * (a service read per request is a step of the runtime per request).
 *
 * @since 0.1.0
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type { TextGeneration } from "@mcore-effect/text"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { readJson } from "./Admission.ts"
import * as JsonResponse from "./JsonResponse.ts"
import type { ServerError } from "../ServerError.ts"
import type { Handler, Shared } from "./Handler.ts"
import type { State } from "./ServerState.ts"

/**
 * Answers with `work`'s response, or with the error response of its failure; counts either, and
 * a request whose client went away before the answer as 499 (nginx's "client closed request").
 * An answer `work` writes itself (a stream, see `Sse.write`) and that is interrupted once its
 * headers went out is counted with the status they carried, as nginx does.
 *
 * @since 0.1.0
 */
export const answer = <R>(
  state: State,
  route: string,
  work: Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError, R>,
  request?: HttpServerRequest.HttpServerRequest
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  Effect.matchEager(Effect.onInterrupt(work, () => Effect.sync(() => state.metrics.answered(route, sentStatus(request) ?? 499))), {
    onFailure: (failure) => {
      state.metrics.answered(route, failure.status)
      return JsonResponse.error(failure)
    },
    onSuccess: (response) => {
      state.metrics.answered(route, response.status)
      return response
    }
  })

/** The status of the Node response of `request` when its headers went out. */
const sentStatus = (request: HttpServerRequest.HttpServerRequest | undefined): number | undefined => {
  if (request === undefined) return undefined
  const node = NodeHttpServerRequest.toServerResponse(request)
  return node.headersSent ? node.statusCode : undefined
}

/**
 * A route of the server with `state` that needs the API key (when one is set), answered by
 * `handler`.
 *
 * @since 0.1.0
 */
export const authenticated = <R>(
  state: State,
  method: "GET" | "POST",
  path: HttpRouter.PathInput,
  handler: (
    request: HttpServerRequest.HttpServerRequest,
    state: State
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError, R>
) =>
  HttpRouter.route(method, path, (request) => {
    const refused = state.checkApiKey(request.headers["authorization"])
    return answer(state, path, refused === undefined ? handler(request, state) : Effect.fail(refused), request)
  })

/**
 * A `POST` generation route of the server with `state` and `text`: admission, then `handler`
 * with the parsed body.
 *
 * @since 0.1.0
 */
export const generation = <R>(
  state: State,
  text: TextGeneration.Service,
  path: HttpRouter.PathInput,
  handler: (handler: Handler) => Effect.Effect<HttpServerResponse.HttpServerResponse, ServerError, R>
) => {
  const shared: Shared = { state, text }
  return authenticated(state, "POST", path, (request) => {
    const startedAt = performance.now()
    const closed = state.gate.closed()
    if (closed !== undefined) return Effect.fail(closed)
    return Effect.flatMap(
      readJson(request, state.config.maxBodyBytes),
      (body) => handler({ request, body, shared, startedAt, route: path })
    )
  })
}
