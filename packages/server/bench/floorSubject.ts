/**
 * The floors of the server's benchmarks, each in its own process: a server with nothing of ours
 * (no text layer, no client) on 127.0.0.1 port 0, built with
 *
 * - `node`: bare `node:http`, no Effect;
 * - `effect`: the stack the server is built on, Effect's `HttpRouter` served by
 *   `@effect/platform-node`'s `NodeHttpServer` as `Server.layer` serves it (logger and listen log
 *   off), one route;
 *
 * answering in one of two ways:
 *
 * - `answer` (the CPU floors of `server.bench.ts`): reads each request's body and answers with a
 *   fixed JSON body, the server's own answer to the benchmark's request bytes for bytes, given by
 *   `{ op: "init", body }`; it listens once it has it. Its CPU per request is what the HTTP stack
 *   alone costs: no server built on it can spend less.
 * - `stream` (the heap floors of `heap.ts`): event-stream headers and one record, then the
 *   response held open (with `effect`, a one-record `Stream.callback` body that never ends); it
 *   listens at once. What the HTTP stack alone holds per open response.
 *
 * Argv: `node|effect answer|stream`. Reports `{ url }` once listening; then answers `{ id, op }`
 * with op `cpu` (this process's CPU time, µs) and the heap operations of `heapOps.ts`.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Context, Effect, Layer, Stream } from "effect"
import { HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import * as Queue from "effect/Queue"
import { createServer, type RequestListener } from "node:http"
import { answerHeapOps } from "./heapOps.ts"

const [kind, mode] = process.argv.slice(2)

const listening = (port: number) => process.send?.({ url: `http://127.0.0.1:${port}` })

const serveNode = (handler: RequestListener) => {
  const server = createServer({ keepAliveTimeout: 5_000 }, handler)
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    listening(typeof address === "object" && address !== null ? address.port : 0)
  })
}

const serveEffect = (route: Layer.Layer<never, never, HttpRouter.HttpRouter>) => {
  const app = HttpRouter.serve(route, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(() => createServer({ keepAliveTimeout: 5_000 }), { host: "127.0.0.1", port: 0 }))
  )
  Effect.runFork(Effect.scoped(Effect.flatMap(Layer.build(app), (context) => {
    const address = Context.get(context, HttpServer.HttpServer).address
    listening("port" in address ? address.port : 0)
    return Effect.never
  })))
}

/** `answer`: the body read, then `answer` as JSON. */
const serveAnswer = (answer: string) => {
  if (kind === "effect") {
    return serveEffect(HttpRouter.add("POST", "/v1/chat/completions", (request) =>
      Effect.map(Effect.orDie(request.text), () => HttpServerResponse.text(answer, { contentType: "application/json" }))))
  }
  const body = Buffer.from(answer, "utf8")
  const head = { "content-type": "application/json", "content-length": String(body.length) }
  serveNode((request, response) => {
    request.on("data", () => {})
    request.on("end", () => {
      response.writeHead(200, head)
      response.end(body)
    })
  })
}

/** `stream`: one record, then the response held open. */
const serveStream = () => {
  const record = Buffer.from("data: {}\n\n")
  if (kind === "effect") {
    const body = Stream.callback<Uint8Array>((queue) => Effect.sync(() => Queue.offerUnsafe(queue, record)))
    return serveEffect(HttpRouter.add("*", "*", Effect.succeed(HttpServerResponse.stream(body, { contentType: "text/event-stream" }))))
  }
  serveNode((request, response) => {
    request.resume()
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
    response.write(record)
  })
}

answerHeapOps()
process.on("message", (message: { readonly id?: number; readonly op?: string; readonly body?: string }) => {
  if (message.op === "cpu") {
    const cpu = process.cpuUsage()
    process.send?.({ id: message.id, cpuUs: cpu.user + cpu.system })
  } else if (message.op === "init" && mode === "answer") {
    serveAnswer(message.body!)
  }
})
process.on("disconnect", () => process.exit(0))
if (mode === "stream") serveStream()
