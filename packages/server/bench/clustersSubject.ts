/**
 * The coordinators of the disaggregated server benchmark, in their own process (forked by
 * `disaggregated.bench.ts`), so that the servers' processes hold nothing but the servers: three
 * testkit clusters (a coordinator and one engine each) on ZeroMQ over 127.0.0.1, port 0, all
 * speaking `main`, with instant engines (`stepMs: 0`): a prefill one, a decode one, and a
 * direct one for the server over one coordinator.
 *
 * Reports `{ prefill, decode, direct }` (their addresses) once every engine has registered; then
 * answers `{ id, op: "pins" }` with the prefill cluster's KV pin counts (`made`, `released`,
 * `foreign`, `early`: `KvPins.Stats`).
 */
import { TestCluster } from "@mcore-effect/testkit"
import { Effect, References } from "effect"

const answer = (message: { readonly id?: number }, fields: Record<string, unknown>) => process.send?.({ id: message.id, ...fields })

const program = Effect.gen(function*() {
  const options = { engines: 1, protocol: "main", engine: { stepMs: 0, blockSizeTokens: 16 } } as const
  const prefill = yield* TestCluster.make(options)
  const decode = yield* TestCluster.make(options)
  const direct = yield* TestCluster.make(options)
  process.on("message", (message: { readonly id?: number; readonly op?: string }) => {
    if (message.op !== "pins") return
    Effect.runPromise(prefill.kvPins).then((pins) =>
      answer(message, { made: pins.pinned, released: pins.released, foreign: pins.foreign, early: pins.releasedBeforeFirstOutput })
    )
  })
  process.send?.({ prefill: prefill.address, decode: decode.address, direct: direct.address })
  return yield* Effect.never
})

process.on("disconnect", () => process.exit(0))
Effect.runFork(program.pipe(Effect.scoped, Effect.provideService(References.MinimumLogLevel, "Warn")))
