/**
 * What a generation route's handler is given (`Routes.generation` makes it): the request, its
 * JSON body, what every request of the server shares, and what its place among the requests in
 * flight is counted under (`Respond` takes the place once the request is known to be valid).
 *
 * @since 0.2.0
 */
import type { TextGeneration } from "@mcore-effect/text"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
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
  /** The route's path, as its metrics name it. */
  readonly route: string
}
