/**
 * Run as a child process by Lifecycle.test.ts: starts a cluster, pushes a request through it,
 * closes the scope and then does nothing. If anything were left running (a socket, a loop, a
 * timer), the process would not exit by itself.
 */
import { Effect, Logger } from "effect"
import { TestCluster } from "../../src/index.ts"
import * as RawClient from "./RawClient.ts"

const program = Effect.gen(function*() {
  const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 1 } })
  const client = yield* RawClient.make(cluster.address)
  yield* client.connect
  yield* client.submit(0, "the cat", { params: { num_tokens_to_generate: 3, streaming: true } })
  yield* client.untilReplies(1)
  yield* client.submit(1, "the dog") // still in flight when the scope closes
  yield* cluster.engines[0]!.waitFor("a step", (s) => s.steps > 0)
  // An engine between two slow steps when the scope closes must not hold the process either.
  const slow = yield* TestCluster.make({ engines: 1, engine: { stepMs: 600_000 } })
  const other = yield* RawClient.make(slow.address)
  yield* other.connect
  yield* other.submit(0, "the cat")
  yield* slow.engines[0]!.waitFor("a first step", (s) => s.steps === 1)
}).pipe(Effect.scoped, Effect.provide(Logger.layer([])))

Effect.runPromise(program).then(() => console.log("scope closed"))
