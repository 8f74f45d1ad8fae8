/**
 * `mcore coordinator --listen ADDR --engines N`: the testkit's coordinator and engines as a
 * standalone process, for trying a client (a Python one too) against something that speaks the
 * real protocol without a GPU. It prints the bound address alone on its first line (so a script
 * can read it), then what a client would want to see happen: connections, control state changes,
 * and the signals each engine receives. It runs until SIGINT or SIGTERM, or until a client sends
 * SHUTDOWN; either way the sockets are closed before the process exits.
 *
 * @since 0.1.0
 */
import { Routing, TestCluster, type TestCoordinator, type TestEngine, type TestkitError } from "@mcore-effect/testkit"
import * as Effect from "effect/Effect"
import { Command, Flag } from "effect/cli"
import * as Output from "../Output.ts"
import { intAtLeast } from "../Positive.ts"

/** Longest wait a timer allows; the state watch just waits again after it. */
const FOREVER_MILLIS = 2 ** 31 - 1

const flags = {
  listen: Flag.String("listen").pipe(
    Flag.withAlias("l"),
    Flag.withMetavar("address"),
    Flag.withDefault("tcp://127.0.0.1:0"),
    Flag.withDescription("Where to bind, loopback only: tcp://127.0.0.1:PORT (port 0, the default: any free port), tcp://[::1]:PORT, ipc://PATH")
  ),
  engines: intAtLeast("engines", 0).pipe(Flag.withDefault(2), Flag.withDescription("Test engines to start (default 2)")),
  policy: Flag.Literals("policy", Routing.Policy.literals).pipe(
    Flag.withDefault("load_balanced" as const),
    Flag.withDescription("Routing policy (default load_balanced)")
  ),
  stepMs: intAtLeast("step-ms", 0).pipe(
    Flag.withDefault(10),
    Flag.withDescription("Milliseconds between engine steps, one token per request per step (default 10)")
  ),
  blockSize: intAtLeast("block-size", 1).pipe(
    Flag.withDefault(16),
    Flag.withDescription("KV block size in tokens, for the coordinator's hashing and the engines (default 16)")
  )
} as const

/** Prints the control state and the number of connected clients each time one changes. */
const watch = (coordinator: TestCoordinator.Handle): Effect.Effect<never> =>
  Effect.gen(function*() {
    let last = yield* coordinator.snapshot
    for (;;) {
      const seen = last
      const next = yield* coordinator.waitFor(
        "a change of state or clients",
        (s) => s.state !== seen.state || s.clients !== seen.clients,
        { timeoutMillis: FOREVER_MILLIS }
      ).pipe(Effect.catchTag("TestkitError", () => Effect.succeed(seen)))
      if (next.clients !== seen.clients) yield* Output.line(`clients ${next.clients}`)
      if (next.state !== seen.state) yield* Output.line(`state ${next.state}`)
      last = next
    }
  })

/** Prints every control or profiler signal an engine receives, so a client's signals can be seen arriving. */
const watchEngine = (engine: TestEngine.Handle): Effect.Effect<never> =>
  Effect.gen(function*() {
    let seen = (yield* engine.snapshot).signals.length
    for (;;) {
      const from = seen
      const next = yield* engine.waitFor("a signal", (s) => s.signals.length > from, { timeoutMillis: FOREVER_MILLIS }).pipe(
        Effect.catchTag("TestkitError", () => Effect.succeed(undefined))
      )
      if (next === undefined) continue
      const signals = next.signals.slice(from)
      const lastEpoch = signals.lastIndexOf("SET_GENERATION_EPOCH")
      for (let i = 0; i < signals.length; i++) {
        // The snapshot holds the latest epoch only: it belongs to the last epoch signal seen.
        const epoch = i === lastEpoch ? ` (epoch now ${next.generationEpoch})` : ""
        yield* Output.line(`engine ${engine.identity} ${signals[i]}${epoch}`)
      }
      seen = next.signals.length
    }
  })

/**
 * The command.
 *
 * @example
 * ```sh
 * mcore coordinator --listen tcp://127.0.0.1:5555 --engines 4
 * ADDRESS=$(mcore coordinator | head -n 1)   # any free port
 * ```
 *
 * @since 0.1.0
 */
export const command = Command.make(
  "coordinator",
  flags,
  Effect.fn("mcore.coordinator")(function*({ listen, engines, policy, stepMs, blockSize }) {
    let started = false
    // Registered before the cluster, so it runs after the cluster's sockets are closed.
    yield* Effect.addFinalizer(() => (started ? Output.line("closed") : Effect.void))
    const cluster: TestCluster.Handle = yield* TestCluster.make({
      engines,
      coordinator: { address: listen, policy, blockSizeTokens: blockSize },
      engine: { stepMs, blockSizeTokens: blockSize }
    })
    started = true
    yield* Output.line(cluster.address)
    yield* Output.line(
      `test coordinator: ${engines} engine(s) (${cluster.engines.map((e) => e.identity).join(", ")}), ` +
        `policy ${policy}, a step every ${stepMs} ms; stop with Ctrl-C`
    )
    const watching = Effect.all([watch(cluster.coordinator), ...cluster.engines.map(watchEngine)], {
      concurrency: "unbounded"
    })
    yield* Effect.raceFirst(watching, cluster.coordinator.awaitStopped)
    yield* Output.line("SHUTDOWN received")
  }, Effect.scoped)
).pipe(
  Command.withDescription("Run a test coordinator and test engines on loopback until Ctrl-C, SIGTERM or SHUTDOWN"),
  Command.withExamples([
    { command: "mcore coordinator --listen tcp://127.0.0.1:5555", description: "Two engines on a fixed port" },
    { command: "mcore coordinator --engines 4 --policy longest_prefix", description: "Any free port, prefix routing" }
  ])
)
