/**
 * Server-sent events as OpenAI streams them: one `data: <json>` record per chunk, a blank line
 * after each, `data: [DONE]` at the end. A stream that breaks after its headers went out cannot
 * change its status any more, so the failure is written as one last record carrying OpenAI's
 * error object (what its SDKs raise as an `APIError`), followed by nothing.
 *
 * @since 0.1.0
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as Arr from "effect/Array"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Pull from "effect/Pull"
import type * as Http from "node:http"

const encoder = new TextEncoder()

/**
 * One record holding `value` as JSON.
 *
 * @example
 * ```ts
 * import * as Sse from "./Sse.ts"
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
 * import * as Sse from "./Sse.ts"
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

const nodeHeaders = { "content-type": "text/event-stream", ...headers }

/** What the route answers once the stream was written (`NodeHttpServer` writes nothing more). */
const written = HttpServerResponse.empty({ status: 200 })

/** Resumes once `node` drained its buffer, or closed. */
const drained = (node: Http.ServerResponse): Effect.Effect<void> =>
  Effect.callback<void>((resume) => {
    if (node.destroyed) return resume(Effect.void)
    const off = () => {
      node.off("drain", done)
      node.off("close", done)
    }
    const done = () => {
      off()
      resume(Effect.void)
    }
    node.on("drain", done)
    node.on("close", done)
    return Effect.sync(off)
  })

/**
 * Writes the records `body` pulls (SSE-framed bytes, until it is done) to the Node response of
 * `request` itself, as a 200 `text/event-stream`, in this fiber, and ends it; the route then
 * answers with a response that `NodeHttpServer` does not write again (the response is ended). An
 * interruption (the client went away, or shutdown) stops the pulls.
 *
 * Why not a `HttpServerResponse.stream` body: with it, each open stream held more heap (the
 * response object and its headers, and `NodeHttpServer`'s writer over our own stage;
 * PERFORMANCE.md#sse-write).
 *
 * @since 0.1.0
 */
export const write = <R>(
  request: HttpServerRequest.HttpServerRequest,
  body: Effect.Effect<Pull.Pull<Arr.NonEmptyReadonlyArray<Uint8Array>>, never, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  Effect.flatMap(body, (pull) => {
    const node = NodeHttpServerRequest.toServerResponse(request) as Http.ServerResponse
    node.writeHead(200, nodeHeaders)
    const loop: Effect.Effect<void> = Effect.matchCauseEffect(pull, {
      onSuccess: (chunks) => {
        // Gone (its close interrupts this fiber too): nothing more to write.
        if (node.destroyed) return Effect.interrupt
        return node.write(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)) ? loop : Effect.andThen(drained(node), loop)
      },
      onFailure: (cause) =>
        Pull.isDoneCause(cause) ? Effect.sync(() => void node.end()) : Effect.failCause(cause as Cause.Cause<never>)
    })
    return Effect.as(loop, written)
  })
