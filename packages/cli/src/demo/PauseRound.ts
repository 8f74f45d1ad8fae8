/**
 * Part three of the demo: requests in flight, PAUSE, proof that the engines stopped stepping
 * while their requests wait, UNPAUSE, and every request finishing, as an RL trainer does around a
 * weight update.
 *
 * @since 0.1.0
 * @internal
 */
import type { ClientError, InferenceClient } from "@mcore-effect/client"
import type { TestCluster, TestkitError } from "@mcore-effect/testkit"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Output from "../Output.ts"
import * as Prompts from "./Prompts.ts"

/**
 * Options of {@link run}.
 *
 * @since 0.1.0
 */
export interface Options {
  readonly requests: number
  readonly tokens: number
  /** How long the engines stay paused. */
  readonly hold: Duration.Duration
}

/**
 * What the round observed.
 *
 * @since 0.1.0
 */
export interface Result {
  /** Requests still waiting once every engine was paused. */
  readonly held: number
  /** Engine steps taken while paused (0: paused engines generate nothing). */
  readonly stepsWhilePaused: number
  /** Requests whose reply arrived after UNPAUSE. */
  readonly completed: number
}

const totalSteps = (cluster: TestCluster.Handle) =>
  Effect.map(Effect.forEach(cluster.engines, (engine) => engine.snapshot), (snapshots) =>
    snapshots.reduce((sum, s) => sum + s.steps, 0))

/**
 * Runs the round.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { TestCluster } from "@mcore-effect/testkit"
 * import { Duration, Effect } from "effect"
 * import * as PauseRound from "./PauseRound.ts"
 *
 * const program = Effect.gen(function*() {
 *   const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 10 } })
 *   const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol })
 *   return yield* PauseRound.run(client, cluster, { requests: 32, tokens: 64, hold: Duration.millis(300) })
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.1.0
 */
export const run = Effect.fn("demo.pauseRound")(function*(
  client: InferenceClient.Service,
  cluster: TestCluster.Handle,
  options: Options
): Effect.fn.Return<Result, ClientError.ClientError | TestkitError.TestkitError> {
  const submitted = yield* Effect.forEach(
    Array.from({ length: options.requests }, (_, i) => i),
    (i) => client.submitWithId(Prompts.numbered(1_000_000 + i), { num_tokens_to_generate: options.tokens })
  )
  yield* client.pauseEngines()
  yield* cluster.coordinator.waitFor("the coordinator to be PAUSED", (s) => s.state === "PAUSED")
  yield* Effect.forEach(cluster.engines, (engine) => engine.waitFor("PAUSED", (s) => s.state === "PAUSED"))
  const held = yield* client.pendingCount
  yield* Output.line(`  PAUSE: coordinator and ${cluster.engines.length} engines PAUSED, ${held} requests waiting`)

  const stepsBefore = yield* totalSteps(cluster)
  yield* Effect.sleep(options.hold)
  const stepsWhilePaused = (yield* totalSteps(cluster)) - stepsBefore
  yield* Output.line(`  ${stepsWhilePaused} engine steps in ${Duration.format(options.hold)} while paused`)

  yield* client.unpauseEngines()
  yield* cluster.coordinator.waitFor("the coordinator to be RUNNING", (s) => s.state === "RUNNING")
  const replies = yield* Effect.forEach(submitted, (s) => s.reply, { concurrency: "unbounded" })
  yield* Output.line(`  UNPAUSE: ${replies.length}/${options.requests} requests completed`)
  return { held, stepsWhilePaused, completed: replies.length }
})
