/**
 * Part four of the demo: a long streamed request cancelled part-way with `abort`, as an HTTP
 * frontend does when its caller hangs up, and the ABORT_REQUEST seen arriving at the engine that
 * held it.
 *
 * @since 0.1.0
 * @internal
 */
import type { ClientError, InferenceClient } from "@mcore-effect/client"
import type { TestCoordinator, TestkitError } from "@mcore-effect/testkit"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Output from "../Output.ts"
import * as Prompts from "./Prompts.ts"

/**
 * What the round observed.
 *
 * @since 0.1.0
 */
export interface Result {
  readonly requestId: number
  /** Tokens received before the stream ended. */
  readonly tokensBeforeAbort: number
  /** The engine the ABORT_REQUEST was delivered to. */
  readonly engine: string
}

const abortDelivery = (snapshot: TestCoordinator.Snapshot, requestId: number): Option.Option<string> =>
  Option.fromUndefinedOr(
    snapshot.engines.find((engine) =>
      engine.received.some((d) => d.name === "ABORT_REQUEST" && d.clientRequestId === requestId)
    )?.identity
  )

/**
 * Streams a request that would generate `tokens` tokens and aborts it once `after` tokens have
 * arrived.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { TestCluster } from "@mcore-effect/testkit"
 * import { Effect } from "effect"
 * import * as AbortRound from "./AbortRound.ts"
 *
 * const program = Effect.gen(function*() {
 *   const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 10 } })
 *   const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol })
 *   return yield* AbortRound.run(client, cluster.coordinator, { tokens: 10_000, after: 5 })
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.1.0
 */
export const run = Effect.fn("demo.abortRound")(function*(
  client: InferenceClient.Service,
  coordinator: TestCoordinator.Handle,
  options: { readonly tokens: number; readonly after: number }
): Effect.fn.Return<Result, ClientError.ClientError | TestkitError.TestkitError> {
  let requestId = -1
  let received = 0
  const prompt = Prompts.streamed[0]!
  yield* Output.write(`  ${prompt} ->`)
  const ended = yield* client.stream(prompt, { num_tokens_to_generate: options.tokens }).pipe(
    Stream.runForEach((event) => {
      if (event._tag === "Final") return Effect.void
      requestId = event.requestId
      received += event.newTokens.length
      return Effect.andThen(
        Output.write(" ."),
        received >= options.after ? client.abort(event.requestId) : Effect.void
      )
    }),
    Effect.as("finished" as const),
    // The abort ends the stream with RequestAborted: the outcome this round is after.
    Effect.catchReason("ClientError", "RequestAborted", () => Effect.succeed("aborted" as const))
  )
  yield* Output.line(` ${ended}`)
  const snapshot = yield* coordinator.waitFor(
    `the ABORT_REQUEST of request ${requestId} to reach an engine`,
    (s) => Option.isSome(abortDelivery(s, requestId))
  )
  const engine = Option.getOrElse(abortDelivery(snapshot, requestId), () => "?")
  yield* Output.line(`  ABORT: request ${requestId} aborted after ${received} tokens; ABORT_REQUEST delivered to ${engine}`)
  return { requestId, tokensBeforeAbort: received, engine }
})
