/**
 * The floors of the heap-per-open-stream diagnostic (`pnpm bench server --heap`), in their own
 * process (forked by `heap.ts`): a server on 127.0.0.1 port 0 answering every request with
 * event-stream headers and one record, then holding the response open, built with
 *
 * - `node`: bare `node:http`, nothing else (what Node itself holds per open response);
 * - `effect`: Effect's `HttpRouter` on `NodeHttpServer` as the server serves it (logger and
 *   listen log off), one route whose body is a one-record `Stream.callback` that never ends,
 *   nothing of ours (what Effect's HTTP stack holds).
 *
 * Argv: `node | effect`. Reports `{ url }` once listening; then answers `{ id, op }` with op
 * `heap` (heapUsed after a full GC, bytes) or `snapshot` (a heap snapshot written to `path`).
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer, Stream } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import * as Queue from "effect/Queue"
import { createServer } from "node:http"
import { answerHeapOps } from "./heapOps.ts"

const [kind] = process.argv.slice(2)
const record = Buffer.from("data: {}\n\n")
const headers = { "content-type": "text/event-stream", "cache-control": "no-cache" }

answerHeapOps()
process.on("disconnect", () => process.exit(0))

if (kind === "node") {
  const server = createServer({ keepAliveTimeout: 5_000 }, (request, response) => {
    request.resume()
    response.writeHead(200, headers)
    response.write(record)
  })
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    process.send?.({ url: `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}` })
  })
} else {
  const body = Stream.callback<Uint8Array>((queue) => Effect.sync(() => Queue.offerUnsafe(queue, record)))
  const route = HttpRouter.add("*", "*", Effect.succeed(HttpServerResponse.stream(body, { contentType: "text/event-stream" })))
  const app = HttpRouter.serve(route, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(() => createServer({ keepAliveTimeout: 5_000 }), { host: "127.0.0.1", port: 0 }))
  )
  Effect.runFork(Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(app)
    const address = Context.get(context, HttpServer.HttpServer).address
    process.send?.({ url: `http://127.0.0.1:${"port" in address ? address.port : 0}` })
    return yield* Effect.never
  })))
}
