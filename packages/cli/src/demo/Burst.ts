/**
 * Part two of the demo: a burst of requests all submitted at once through the one client, as a
 * service with mixed traffic would: most are plain submissions (a batch job, RL rollouts), one in
 * ten is streamed (a chat frontend) so its first tokens can be timed under the same load. The
 * test coordinator's record of deliveries then says which engine served how many.
 *
 * @since 0.1.0
 * @internal
 */
import { ClientMetrics, type ClientError, type InferenceClient } from "@mcore-effect/client"
import type { TestCoordinator } from "@mcore-effect/testkit"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Progress from "./Progress.ts"
import * as Prompts from "./Prompts.ts"

/**
 * One request in this many is streamed (the interactive share of the traffic, whose first
 * tokens are timed); the others are plain submissions (the batch share).
 *
 * @since 0.1.0
 */
export const STREAMED_EVERY = 10

/**
 * Options of {@link run}.
 *
 * @since 0.1.0
 */
export interface Options {
  readonly requests: number
  readonly tokens: number
}

/**
 * Requests one engine was sent during the burst.
 *
 * @since 0.1.0
 */
export interface EngineShare {
  readonly identity: string
  readonly requests: number
}

/**
 * What the burst measured.
 *
 * @since 0.1.0
 */
export interface Result {
  /** Requests the client handed to the coordinator (its own `submitted` metric). */
  readonly sent: number
  /** Requests whose final reply arrived. */
  readonly completed: number
  readonly failed: number
  /** The first failure's message, when some request failed. */
  readonly firstFailure: string | undefined
  readonly wallSeconds: number
  /** Per completed request: the reply's `latency`, in milliseconds. */
  readonly latencyMillis: ReadonlyArray<number>
  /** Per completed streamed request: milliseconds from submission to its first tokens. */
  readonly timeToFirstTokenMillis: ReadonlyArray<number>
  /** Generated tokens in the final replies, all requests together (the client's own count). */
  readonly tokens: number
  /** SUBMIT_REQUESTs the coordinator routed to each engine during the burst. */
  readonly engines: ReadonlyArray<EngineShare>
  /** Submissions the coordinator routed during the burst, all engines together. */
  readonly routed: number
}

/**
 * The coordinator's SUBMIT_REQUEST deliveries per engine whose coordinator-side id lies in
 * `[from, to)`: the burst's, since nothing else is submitted while it runs.
 */
const sharesBetween = (snapshot: TestCoordinator.Snapshot, from: number, to: number): Array<EngineShare> =>
  snapshot.engines.map((engine) => ({
    identity: engine.identity,
    requests: engine.received.filter((d) =>
      d.name === "SUBMIT_REQUEST" && d.requestId !== undefined && d.requestId >= from && d.requestId < to
    ).length
  }))

/**
 * Runs the burst, showing its progress.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { TestCluster } from "@mcore-effect/testkit"
 * import { Effect } from "effect"
 * import * as Burst from "./Burst.ts"
 *
 * const program = Effect.gen(function*() {
 *   const cluster = yield* TestCluster.make({ engines: 2 })
 *   const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol })
 *   return yield* Burst.run(client, cluster.coordinator, { requests: 1000, tokens: 16 })
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.1.0
 */
export const run = Effect.fn("demo.burst")(function*(
  client: InferenceClient.Service,
  coordinator: TestCoordinator.Handle,
  options: Options
): Effect.fn.Return<Result, never, Scope.Scope> {
  const { requests, tokens } = options
  const latencyMillis: Array<number> = []
  const timeToFirstTokenMillis: Array<number> = []
  let failed = 0
  let firstFailure: string | undefined

  const before = yield* coordinator.snapshot
  const submittedBefore = (yield* Metric.value(ClientMetrics.submitted)).count
  const tokensBefore = (yield* Metric.value(ClientMetrics.tokensReceived)).count
  const progress = yield* Progress.make("  burst", requests)

  const failure = (error: ClientError.ClientError) =>
    Effect.sync(() => {
      failed++
      firstFailure ??= error.message
    })

  const submitted = (i: number) =>
    client.submit(Prompts.numbered(i), { num_tokens_to_generate: tokens }).pipe(
      Effect.flatMap((reply) => Effect.sync(() => latencyMillis.push((reply.latency ?? Number.NaN) * 1000)))
    )

  const streamed = (i: number) =>
    Effect.suspend(() => {
      const startedAt = performance.now()
      let first = true
      return client.stream(Prompts.numbered(i), { num_tokens_to_generate: tokens }).pipe(
        Stream.runForEach((event) =>
          Effect.sync(() => {
            if (event._tag === "Final") latencyMillis.push((event.reply.latency ?? Number.NaN) * 1000)
            else if (first) {
              first = false
              timeToFirstTokenMillis.push(performance.now() - startedAt)
            }
          })
        )
      )
    })

  const one = (i: number) =>
    (i % STREAMED_EVERY === 0 ? streamed(i) : submitted(i)).pipe(
      Effect.catch(failure),
      Effect.ensuring(Effect.sync(progress.advance))
    )

  const startedAt = performance.now()
  yield* Effect.forEach(Array.from({ length: requests }, (_, i) => i), one, {
    concurrency: "unbounded",
    discard: true
  })
  const wallSeconds = (performance.now() - startedAt) / 1000
  yield* progress.finish

  const after = yield* coordinator.snapshot
  const submittedAfter = (yield* Metric.value(ClientMetrics.submitted)).count
  const tokensAfter = (yield* Metric.value(ClientMetrics.tokensReceived)).count
  const engines = sharesBetween(after, before.nextRequestId, after.nextRequestId)
  return {
    sent: submittedAfter - submittedBefore,
    completed: latencyMillis.length,
    failed,
    firstFailure,
    wallSeconds,
    latencyMillis,
    timeToFirstTokenMillis,
    tokens: tokensAfter - tokensBefore,
    engines,
    routed: after.nextRequestId - before.nextRequestId
  }
})
