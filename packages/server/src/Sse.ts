/**
 * Server-sent events as OpenAI streams them: one `data: <json>` record per chunk, a blank line
 * after each, `data: [DONE]` at the end. A stream that breaks after its headers went out cannot
 * change its status any more, so the failure is written as one last record carrying OpenAI's
 * error object (what its SDKs raise as an `APIError`), followed by nothing.
 *
 * @since 0.1.0
 */
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type * as Stream from "effect/Stream"

const encoder = new TextEncoder()

/**
 * One record holding `value` as JSON.
 *
 * @example
 * ```ts
 * import { Sse } from "@mcore-effect/server"
 *
 * new TextDecoder().decode(Sse.record({ a: 1 })) // 'data: {"a":1}\n\n'
 * ```
 *
 * @since 0.1.0
 */
export const record = (value: unknown): Uint8Array => encoder.encode(recordText(value))

/**
 * {@link record} as text, for a writer that joins several records into one buffer.
 *
 * @example
 * ```ts
 * import { Sse } from "@mcore-effect/server"
 *
 * Sse.recordText({ a: 1 }) // 'data: {"a":1}\n\n'
 * ```
 *
 * @since 0.1.0
 */
export const recordText = (value: unknown): string => `data: ${JSON.stringify(value)}\n\n`

/**
 * {@link done} as text.
 *
 * @since 0.1.0
 */
export const doneText = "data: [DONE]\n\n"

/**
 * The record that ends every stream.
 *
 * @since 0.1.0
 */
export const done: Uint8Array = encoder.encode(doneText)

/**
 * A comment line (ignored by readers), sent to keep idle proxies from closing a quiet stream.
 *
 * @since 0.1.0
 */
export const keepAlive: Uint8Array = encoder.encode(": keep-alive\n\n")

/**
 * The response headers of an event stream: no caching, and no buffering by a proxy in front
 * (nginx honours `x-accel-buffering`), so each record reaches the client when it is written.
 *
 * @since 0.1.0
 */
export const headers = {
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
} as const

/**
 * A 200 response streaming `body` (already SSE-framed bytes) as `text/event-stream`.
 *
 * @since 0.1.0
 */
export const response = (body: Stream.Stream<Uint8Array>): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.stream(body, { contentType: "text/event-stream", headers })
