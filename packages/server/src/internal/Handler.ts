/**
 * What a generation route's handler is given (`Routes.generation` makes it): the request, its
 * JSON body, what every request of the server shares, and its place among the requests in flight.
 *
 * @since 0.2.0
 */
import type { TextGeneration } from "@mcore-effect/text"
import type * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import type * as Scope from "effect/Scope"
import type { ServerError } from "../ServerError.ts"
import type { State } from "./ServerState.ts"

/**
 * What every request of one server shares, read once when the routes are built (a service read
 * per request is a step of the runtime per request): one object for all of them, so a stream that
 * holds it holds nothing of its request.
 *
 * @since 0.2.0
 */
export interface Shared {
  readonly state: State
  /** The server's text generation (tokenizer, chat template, client). */
  readonly text: TextGeneration.Service
}

/**
 * A generation request, as its handler sees it.
 *
 * @since 0.2.0
 */
export interface Handler {
  /** The HTTP request (a streamed answer is written to its Node response). */
  readonly request: HttpServerRequest.HttpServerRequest
  readonly body: unknown
  readonly shared: Shared
  /** `performance.now()` when the request arrived. */
  readonly startedAt: number
  /**
   * Takes a place among the requests in flight (429 or 503 when there is none), given back when
   * the request's scope closes: after the last byte of its response, streamed or not.
   */
  readonly admit: Effect.Effect<void, ServerError, Scope.Scope>
  /** {@link admit}, then `then` (in fewer steps of the runtime than `Effect.flatMap`). */
  readonly admitThen: <A, E, R>(then: () => Effect.Effect<A, E, R>) => Effect.Effect<A, E | ServerError, R | Scope.Scope>
}
