/**
 * The floor of the server benchmark, in its own process (forked by `server.bench.ts`): a bare
 * `node:http` server, no Effect, no text layer, no client, that reads each request's body and
 * answers with a fixed JSON body (the server's own answer to the benchmark's request, bytes for
 * bytes), on 127.0.0.1 port 0. Its CPU per request is what Node's HTTP alone costs: no server
 * built on it can spend less.
 *
 * IPC: `{ op: "init", body }` (the answer), answered with `{ url }` once listening; then
 * `{ id, op: "cpu" }`, answered with this process's CPU time (µs).
 */
import { createServer } from "node:http"

const headers = (body: Buffer) => ({ "content-type": "application/json", "content-length": String(body.length) })

process.on("message", (message: { readonly id?: number; readonly op?: string; readonly body?: string }) => {
  if (message.op === "cpu") {
    const cpu = process.cpuUsage()
    process.send?.({ id: message.id, cpuUs: cpu.user + cpu.system })
    return
  }
  if (message.op !== "init") return
  const body = Buffer.from(message.body!, "utf8")
  const head = headers(body)
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
    const port = typeof address === "object" && address !== null ? address.port : 0
    process.send?.({ url: `http://127.0.0.1:${port}` })
  })
})
process.on("disconnect", () => process.exit(0))
