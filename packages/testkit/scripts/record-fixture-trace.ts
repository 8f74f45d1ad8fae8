/**
 * Regenerates `test/fixtures/session.trace.jsonl`: runs the session of `test/support/TraceSession.ts`
 * through a `TraceRecorder` in front of a test cluster (coordinator and engines, with the
 * settings that session names) and writes what crossed the wire.
 *
 * Run from the repository root:
 *
 *   node --conditions=source --import tsx packages/testkit/scripts/record-fixture-trace.ts
 */
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { TestCluster, TraceRecorder } from "../src/index.ts"
import * as TraceSession from "../test/support/TraceSession.ts"

const path = fileURLToPath(new URL("../test/fixtures/session.trace.jsonl", import.meta.url))

const program = Effect.gen(function*() {
  const cluster = yield* TestCluster.make(TraceSession.cluster)
  const recorder = yield* TraceRecorder.make({
    upstream: cluster.address,
    path,
    meta: {
      recordedBy: "packages/testkit/scripts/record-fixture-trace.ts",
      session: "packages/testkit/test/support/TraceSession.ts",
      cluster: { ...TraceSession.cluster, policy: cluster.coordinator.policy }
    }
  })
  yield* TraceSession.run(recorder.address)
  const trace = yield* recorder.trace
  yield* Effect.log(`recorded ${trace.entries.length} messages to ${path}`)
}).pipe(Effect.scoped)

Effect.runPromise(program).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
