/**
 * The floors of the server benchmark, each in its own process (forked by `server.bench.ts`): a
 * server with nothing of ours, no text layer, no client, that reads each request's body and
 * answers with a fixed JSON body (the server's own answer to the benchmark's request, bytes for
 * bytes), on 127.0.0.1 port 0. Its CPU per request is what the HTTP stack alone costs: no server
 * built on it can spend less.
 *
 * - `node` (the default): bare `node:http`, no Effect.
 * - `effect`: the stack the server is built on, Effect's `HttpRouter` served by
 *   `@effect/platform-node`'s `NodeHttpServer` as `Server.layer` serves it (no logger), one route
 *   reading the body with the platform's `request.text` and answering with
 *   `HttpServerResponse.text`.
 *
 * Argv: `[node|effect]`. IPC: `{ op: "init", body }` (the answer), answered with `{ url }` once
 * listening; then `{ id, op: "cpu" }`, answered with this process's CPU time (µs).
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import { createServer } from "node:http"

const kind = process.argv[2] === "effect" ? "effect" : "node"

const listening = (port: number) => process.send?.({ url: `http://127.0.0.1:${port}` })

const nodeFloor = (answer: string) => {
  const body = Buffer.from(answer, "utf8")
  const head = { "content-type": "application/json", "content-length": String(body.length) }
  const server = createServer({ keepAliveTimeout: 5_000 }, (request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      response.writeHead(200, head)
      response.end(body)
    })
  })
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    listening(typeof address === "object" && address !== null ? address.port : 0)
  })
}

const effectFloor = (answer: string) => {
  const route = HttpRouter.add("POST", "/v1/chat/completions", (request) =>
    Effect.map(Effect.orDie(request.text), () => HttpServerResponse.text(answer, { contentType: "application/json" })))
  const app = HttpRouter.serve(route, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(() => createServer({ keepAliveTimeout: 5_000 }), { host: "127.0.0.1", port: 0 }))
  )
  Effect.runFork(Effect.scoped(Effect.flatMap(Layer.build(app), (context) => {
    const address = Context.get(context, HttpServer.HttpServer).address
    listening("port" in address ? address.port : 0)
    return Effect.never
  })))
}

process.on("message", (message: { readonly id?: number; readonly op?: string; readonly body?: string }) => {
  if (message.op === "cpu") {
    const cpu = process.cpuUsage()
    process.send?.({ id: message.id, cpuUs: cpu.user + cpu.system })
    return
  }
  if (message.op !== "init") return
  if (kind === "effect") effectFloor(message.body!)
  else nodeFloor(message.body!)
})
process.on("disconnect", () => process.exit(0))
