/**
 * `mcore demo`: the project in one command. Starts the testkit's coordinator and engines in this
 * process on loopback (no GPU, no Megatron), then drives the real client as a service would:
 * streamed prompts printed token by token, a burst of requests with live progress, a pause and
 * unpause round, an abort, and a summary of what the burst measured.
 *
 * @since 0.1.0
 */
import { type ClientError, InferenceClient } from "@mcore-effect/client"
import { TestCluster, type TestkitError } from "@mcore-effect/testkit"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { Command, Flag } from "effect/cli"
import * as AbortRound from "../demo/AbortRound.ts"
import * as Burst from "../demo/Burst.ts"
import * as PauseRound from "../demo/PauseRound.ts"
import * as Prompts from "../demo/Prompts.ts"
import * as Streaming from "../demo/Streaming.ts"
import * as Summary from "../demo/Summary.ts"
import * as Output from "../Output.ts"
import { integer } from "../Values.ts"

/** Requests in flight during the pause round, and tokens each (long enough to still be running). */
const PAUSE_REQUESTS = 64
const PAUSE_TOKENS = 64
const PAUSE_HOLD = Duration.millis(300)
/** Tokens per streamed prompt. */
const STREAM_TOKENS = 12

const flags = {
  engines: integer("engines", 1).pipe(Flag.withDefault(2), Flag.withDescription("Test engines to start (default 2)")),
  requests: integer("requests", 1).pipe(
    Flag.withDefault(3000),
    Flag.withDescription("Requests in the burst (default 3000)")
  ),
  tokens: integer("tokens", 1).pipe(Flag.withDefault(16), Flag.withDescription("Tokens generated per burst request (default 16)")),
  stepMs: integer("step-ms", 0).pipe(
    Flag.withDefault(5),
    Flag.withDescription("Milliseconds between engine steps, one token per request per step (default 5)")
  )
} as const

const section = (n: number, title: string) => Output.line(`\n[${n}/4] ${title}`)

/**
 * The command.
 *
 * @example
 * ```sh
 * mcore demo
 * mcore demo --requests 10000 --engines 4
 * ```
 *
 * @since 0.1.0
 */
export const command = Command.make(
  "demo",
  flags,
  Effect.fn("mcore.demo")(function*({ engines, requests, tokens, stepMs }) {
    const cluster = yield* TestCluster.make({
      engines,
      // Every delivery of the demo is kept, so the burst's per-engine shares are counted exactly.
      coordinator: { recordLimit: requests + PAUSE_REQUESTS + Prompts.streamed.length + 100 },
      engine: { stepMs }
    })
    yield* Output.line(
      `mcore demo: a test coordinator and ${engines} test engines on ${cluster.address} (in this process, no GPU)`
    )
    const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol })

    yield* section(1, `${Prompts.streamed.length} streamed prompts, tokens printed as they arrive`)
    yield* Streaming.run(client, Prompts.streamed, STREAM_TOKENS)

    yield* section(2, `a burst of ${requests} requests of ${tokens} tokens, all submitted at once`)
    const burst = yield* Burst.run(client, cluster.coordinator, { requests, tokens })
    if (burst.firstFailure !== undefined) {
      yield* Output.line(`  ${burst.failed} requests failed, the first with: ${burst.firstFailure}`)
    }

    yield* section(3, `pause and unpause with ${PAUSE_REQUESTS} requests in flight`)
    yield* PauseRound.run(client, cluster, { requests: PAUSE_REQUESTS, tokens: PAUSE_TOKENS, hold: PAUSE_HOLD })

    yield* section(4, "abort a streamed request part-way")
    // Long enough never to finish on its own before the abort, short enough to end if it failed.
    yield* AbortRound.run(client, cluster.coordinator, { tokens: 2_000, after: 5 })
    // The aborted request's last reply is forwarded before the client closes: a reply to a client
    // that has gone is a warning on standard error (the coordinator's ROUTER sees it go at once).
    yield* cluster.coordinator.waitFor("nothing in flight", (s) => s.inFlight === 0)

    yield* Output.line(`\nsummary of the burst`)
    for (const line of Summary.lines(burst)) yield* Output.line(`  ${line}`)
  }, Effect.scoped)
).pipe(
  Command.withDescription(
    "Run a test coordinator and engines in this process and drive the client against them: streaming, a burst with progress, pause/unpause, abort, and a summary"
  ),
  Command.withExamples([
    { command: "mcore demo", description: "The whole tour, in a few seconds" },
    { command: "mcore demo --requests 20000 --engines 4", description: "A bigger burst over more engines" }
  ])
)
