/**
 * The server under measurement, in its own process (forked by `server.bench.ts`): `Server.layer`
 * with Qwen3's tokenizer over an `InferenceClient` connected to the stand-in, on 127.0.0.1 port 0.
 * With a worker count above 1 it is the primary of a Node cluster and its workers run this file
 * too (`Workers.fork`), each with its own server and client.
 *
 * Argv: `address [workers] [protocol] [decode]`: the protocol defaults to `reference` (the
 * stand-in's); given `decode`, the server runs over a disaggregated client (`Disaggregated.layer`)
 * with `address` its prefill coordinator and `decode` its decode one (`disaggregated.bench.ts`).
 * Reports `{ url }` once listening; then answers `{ id, op }` with op
 * `cpu` (this process's CPU time, µs), `heap` (heapUsed after a full GC, bytes) or `snapshot` (a heap
 * snapshot written to `path`).
 */
import { Disaggregated, InferenceClient } from "@mcore-effect/client"
import { Tokenizer } from "@mcore-effect/text"
import type { Dialect } from "@mcore-effect/protocol"
import { Context, Effect, Layer, type Scope } from "effect"
import { HttpServer } from "effect/http"
import { Server, Workers } from "@mcore-effect/server"
import { qwen3Directory } from "./fixture.ts"
import { answerHeapOps } from "./heapOps.ts"

const [address, workersArg, protocolArg, decode] = process.argv.slice(2)
const workers = Number(workersArg ?? 1)
// The stand-in (standIn.ts) speaks the reference protocol.
const protocol = (protocolArg ?? "reference") as Dialect.Name
const client = decode === undefined
  ? InferenceClient.layer({ address: address!, protocol })
  : Disaggregated.layer({ client: { protocol }, prefill: [address!], decode: [decode] })

const answer = (message: { readonly id?: number }, fields: Record<string, unknown>) => process.send?.({ id: message.id, ...fields })

process.on("message", (message: { readonly id?: number; readonly op?: string }) => {
  switch (message.op) {
    case "cpu": {
      const cpu = process.cpuUsage()
      return answer(message, { cpuUs: cpu.user + cpu.system })
    }
  }
})
answerHeapOps()
process.on("disconnect", () => process.exit(0))

const serveHere = Effect.gen(function*() {
  const context = yield* Layer.build(
    Server.layer({ model: "bench", port: 0, maxConcurrentRequests: 1_000_000, drainDelay: 0, shutdownGracePeriod: 0 }).pipe(
      Layer.provide(Layer.merge(client, Tokenizer.layer(qwen3Directory)))
    )
  )
  const bound = Context.get(context, HttpServer.HttpServer).address
  const url = "port" in bound ? `http://127.0.0.1:${bound.port}` : "?"
  if (Workers.isWorker()) yield* Workers.reportListening(url)
  else process.send?.({ url })
  return yield* Effect.never
})

const primary = Effect.gen(function*() {
  const url = yield* Workers.fork({ count: workers, graceMillis: 0, warn: (line) => console.error(line) })
  process.send?.({ url })
  return yield* Effect.never
})

const main: Effect.Effect<never, unknown, Scope.Scope> = workers > 1 && !Workers.isWorker() ? primary : serveHere
Effect.runFork(Effect.scoped(main))
