/**
 * A whole program using the client, run as its own process by the lifetime test: connect,
 * complete one request, leave another pending, close. The test checks that the process then exits
 * by itself (nothing the client made keeps it alive) and that the pending request failed with
 * ClientClosed. `argv[2]` is the coordinator's address, `argv[3]` its dialect.
 */
import { Effect, Fiber } from "effect"
import type { Dialect } from "@mcore-effect/protocol"
import { InferenceClient } from "../../src/index.ts"

const program = Effect.gen(function*() {
  const client = yield* InferenceClient.InferenceClient
  const reply = yield* client.submit([1, 2, 3])
  // The stand-in never answers a KV handoff: this one is still pending when the scope closes.
  const pending = yield* Effect.forkDetach(client.submitWithKvHandoff([1], {}, { agent: "x" }, [0]))
  yield* Effect.yieldNow
  return { reply, pending }
}).pipe(Effect.provide(InferenceClient.layer({ address: process.argv[2]!, protocol: process.argv[3] as Dialect.Name, heartbeatInterval: 100 })))

const { pending, reply } = await Effect.runPromise(program)
const outcome = await Effect.runPromise(Effect.flip(Fiber.join(pending)))
process.send?.({ latency: typeof reply.latency, pending: outcome.reason._tag })
// Nothing else: the process must exit on its own now.
