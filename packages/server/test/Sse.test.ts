/**
 * `Sse.write`, the route writing its event stream to the Node response itself: under backpressure
 * (a reader that does not read, a body far larger than the socket's buffers) it stops pulling until
 * Node's buffer drains, and the reader then gets every byte, in order, and the end.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Layer } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest } from "effect/http"
import { createServer } from "node:http"
import * as Sse from "../src/internal/Sse.ts"

const CHUNKS = 400
const CHUNK_BYTES = 64 * 1024

describe("Sse.write", () => {
  it.live("stops pulling while the reader does not read; then the body arrives whole, in order", () =>
    Effect.gen(function*() {
      let pulled = 0
      const pull = Effect.suspend(() =>
        pulled < CHUNKS ? Effect.succeed([new Uint8Array(CHUNK_BYTES).fill(pulled++ % 251)] as const) : Cause.done()
      )
      const route = HttpRouter.add(
        "GET",
        "/",
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => Sse.write(request, Effect.succeed(pull)))
      )
      const context = yield* Layer.build(
        HttpRouter.serve(route, { disableLogger: true, disableListenLog: true }).pipe(
          Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { host: "127.0.0.1", port: 0 }))
        )
      )
      const address = Context.get(context, HttpServer.HttpServer).address
      const port = "port" in address ? address.port : 0
      const response = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/`))
      expect(response.headers.get("content-type")).toBe("text/event-stream")
      // Nothing read for a while: the writer waits for `drain` instead of pulling everything.
      yield* Effect.sleep("300 millis")
      expect(pulled).toBeLessThan(CHUNKS)
      const body = new Uint8Array(yield* Effect.promise(() => response.arrayBuffer()))
      expect(body.length).toBe(CHUNKS * CHUNK_BYTES)
      for (let i = 0; i < CHUNKS; i++) expect(body[i * CHUNK_BYTES]).toBe(i % 251)
    }).pipe(Effect.scoped))
})
