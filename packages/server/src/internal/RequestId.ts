/**
 * The `x-request-id` of every response: the client's own when it sent a usable one (printable
 * ASCII, at most 128 characters: it is echoed in a header and in the body's `id`), otherwise one
 * made here, unique in this process. A generation's `id` is its prefix and this id
 * (`chatcmpl-<x-request-id>`, as vLLM writes it), so a log line, a client's trace and a response
 * can be matched.
 *
 * @since 0.1.0
 */
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { randomBytes } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"

const HEADER = "x-request-id"
const usable = /^[\x21-\x7e]{1,128}$/

const processPrefix = randomBytes(6).toString("hex")
let next = 0

const ids = new WeakMap<object, string>()

/**
 * Gives the Node request its id and sets the response's header; called first for every request
 * (a listener of the Node server), so every answer carries it, streamed or not, errors included.
 *
 * @since 0.1.0
 */
export const assign = (request: IncomingMessage, response: ServerResponse): void => {
  const given = request.headers[HEADER]
  const id = typeof given === "string" && usable.test(given)
    ? given
    : `${processPrefix}${(next++).toString(16).padStart(8, "0")}`
  ids.set(request, id)
  response.setHeader(HEADER, id)
}

/**
 * The id {@link assign} gave the request, when the server's listener did (`Server.layer`).
 *
 * @since 0.1.0
 */
export const of = (request: HttpServerRequest.HttpServerRequest): string | undefined =>
  ids.get(NodeHttpServerRequest.toIncomingMessage(request))
