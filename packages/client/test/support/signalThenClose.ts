/**
 * A program shaped like `mcore control`, run as its own process by the closing tests: it
 * connects, says `connected` over IPC, waits for the test's `go`, sends PAUSE and closes its client
 * at once. It reports how the send went (`sent`, or the error's tag) and how long closing the
 * client took, and then must exit on its own: the test times that too. `argv[2]` is the
 * coordinator's address, `argv[3]` its dialect.
 */
import { Effect } from "effect"
import type { Dialect } from "@mcore-effect/protocol"
import { InferenceClient } from "../../src/index.ts"

// A one-shot listener: once it has fired, the IPC channel no longer keeps the process alive.
const go = new Promise<void>((resolve) => process.once("message", () => resolve()))

let sentAt = 0
const program = Effect.gen(function*() {
  const client = yield* InferenceClient.InferenceClient
  process.send?.("connected")
  yield* Effect.promise(() => go)
  sentAt = performance.now()
  return yield* client.pauseEngines().pipe(
    Effect.as("sent"),
    Effect.catch((error) => Effect.succeed(error.reason._tag))
  )
}).pipe(Effect.provide(InferenceClient.layer({ address: process.argv[2]!, protocol: process.argv[3] as Dialect.Name, heartbeatInterval: 100 })))

const outcome = await Effect.runPromise(program)
process.send?.({ outcome, closeMillis: performance.now() - sentAt })
// Nothing else: the process must exit on its own now.
