/**
 * `mcore coordinator --listen ADDR --engines N`: the testkit's coordinator and engines as a
 * standalone process, for trying a client (a Python one too) against something that speaks the
 * real protocol without a GPU; `--protocol` names the dialect they speak (a Megatron-LM ref's,
 * `main`, `core_v0.19`, ...; default the project's own reference protocol: what this process
 * starts chooses its own), so a client of that ref can be tried without Megatron. It prints the
 * bound address alone on the first line of standard output and `protocol NAME` on the second
 * (so a script can read both and tell its clients which dialect to speak, as they must be told:
 * the client has no default; logs go to standard error, so a reader that merges the two with
 * `2>&1` may see a log line first), and with `--address-file` also writes the address to a file,
 * removed again at exit. Then it prints what a client would want to see happen: connections,
 * control state changes, and the signals each engine receives. It runs until SIGINT or SIGTERM
 * (exit codes 130 and 143), or until a client sends SHUTDOWN (0); either way the sockets are
 * closed before the process exits.
 *
 * `--external-engines N` starts no test engines: the coordinator waits for N engines of a real
 * deployment to dial it as Megatron-LM's do (`launch_inference_coordinator=False`), printing each
 * one that registers or leaves, and serves clients meanwhile. `--protocol` is required then: the
 * engines speak one dialect and nothing here can guess it.
 *
 * @since 0.1.0
 */
import { Dialect } from "@mcore-effect/protocol"
// The command's inferred type names these errors; imported so that it can be written down.
import type { CoordinatorError } from "@mcore-effect/coordinator"
import { Loopback, Routing, TestCluster, type TestEngine, type TestkitError } from "@mcore-effect/testkit"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { CliError, Command, Flag } from "effect/cli"
import { rename, rm, writeFile } from "node:fs/promises"
import * as Flags from "../Flags.ts"
import * as Output from "../Output.ts"
import { integer, number } from "../Values.ts"
import * as CoordinatorExternal from "./CoordinatorExternal.ts"
import * as CoordinatorMetricsHttp from "./CoordinatorMetricsHttp.ts"
import { FOREVER_MILLIS, ofTestCoordinator, type Watched, watchState } from "./CoordinatorWatch.ts"

const flags = {
  listen: Flag.String("listen").pipe(
    Flag.withAlias("l"),
    Flag.withMetavar("address"),
    Flag.withDefault("tcp://127.0.0.1:0"),
    Flag.withDescription(
      "Where to bind: with test engines loopback only, tcp://127.0.0.1:PORT (port 0, the default: any free port), " +
        "tcp://[::1]:PORT, ipc://PATH; with --external-engines any endpoint (tcp://0.0.0.0:PORT for engines on other hosts)"
    )
  ),
  engines: integer("engines", 0).pipe(Flag.withDescription("Test engines to start (default 2; not with --external-engines)"), Flag.optional),
  externalEngines: integer("external-engines", 1).pipe(
    Flag.withDescription(
      "Start no test engines: wait for this many engines to dial in and register as Megatron-LM's do " +
        "(start_listening_to_data_parallel_coordinator with launch_inference_coordinator=False: a DEALER " +
        "with identity mp-coord-<dp_rank> sending one empty message), then serve; needs --protocol, the dialect the engines speak, " +
        "and --tokenizer, the model's"
    ),
    Flag.optional
  ),
  policy: Flag.Literals("policy", Routing.Policy.literals).pipe(
    Flag.withDefault("load_balanced" as const),
    Flag.withDescription("Routing policy (default load_balanced)")
  ),
  transport: Flag.Literals("transport", ["zmtp", "zeromq"] as const).pipe(
    Flag.withDefault("zmtp" as const),
    Flag.withDescription("The ROUTER: zmtp (our own, over node:net; the default) or zeromq (zeromq.js, libzmq underneath)")
  ),
  stepMs: integer("step-ms", 0).pipe(
    Flag.withDefault(10),
    Flag.withDescription("Milliseconds between engine steps, one token per request per step (default 10)")
  ),
  blockSize: integer("block-size", 1).pipe(
    Flag.withDefault(16),
    Flag.withDescription("KV block size in tokens, for the coordinator's hashing and the engines (default 16)")
  ),
  protocol: Flags.optionalProtocol(
    "The dialect the test coordinator and engines speak, by Megatron-LM version (default reference, the project's own), printed alone on the second line as `protocol NAME`"
  ),
  tokenizer: Flag.String("tokenizer").pipe(
    Flag.withMetavar("dir"),
    Flag.withDescription(
      "With --external-engines (required there): the model's Hugging Face tokenizer directory (tokenizer.json, " +
        "tokenizer_config.json), which the coordinator detokenizes finished requests with (generated_text) and " +
        "tokenizes text prompts with for prefix routing, as Megatron-LM's coordinator uses the model's tokenizer"
    ),
    Flag.optional
  ),
  maxRequests: integer("max-requests", 1).pipe(
    Flag.withDescription(
      "With --external-engines: an engine's capacity in requests, as its context's max_requests (default 256); " +
        "prefix routing weighs an engine's free share of it"
    ),
    Flag.optional
  ),
  alpha: number("alpha").pipe(
    Flag.withDescription(
      "With --external-engines: prefix_caching_routing_alpha, the weight of a held prefix against free capacity (default 0.5)"
    ),
    Flag.optional
  ),
  prefixTableCapacity: integer("prefix-table-capacity", 0).pipe(
    Flag.withDescription(
      "With --external-engines: block hashes the prefix table keeps, least recently assigned forgotten first, " +
        "about 250 bytes each (default 100000)"
    ),
    Flag.optional
  ),
  allowFrom: Flag.String("allow-from").pipe(
    Flag.withMetavar("cidrs"),
    Flag.withDescription(
      "With --external-engines: who may connect, engines and clients alike: IP addresses and CIDR blocks, comma-separated " +
        "(10.0.0.0/8,127.0.0.1); others are closed before anything of theirs is read, counted and logged once per address. " +
        "Not authentication: see the README"
    ),
    Flag.optional
  ),
  metricsPort: integer("metrics-port", 0).pipe(
    Flag.withDescription(
      "Serve Prometheus metrics at http://HOST:PORT/metrics (0: any free port; the URL is printed as `metrics URL`)"
    ),
    Flag.optional
  ),
  metricsHost: Flag.String("metrics-host").pipe(
    Flag.withMetavar("host"),
    Flag.withDescription(`With --metrics-port: the interface to listen on (default ${CoordinatorMetricsHttp.DEFAULT_HOST})`),
    Flag.optional
  ),
  addressFile: Flag.String("address-file").pipe(
    Flag.withMetavar("path"),
    Flag.withDescription(
      "Also write the bound address to this file once listening (removed at exit), for scripts that cannot read " +
        "the first line of standard output apart from the logs"
    ),
    Flag.optional
  )
} as const

/**
 * The address could not be written to `--address-file`.
 *
 * @since 0.1.0
 */
export class AddressFileFailed extends Data.TaggedError("AddressFileFailed")<{
  readonly path: string
  readonly cause: unknown
}> {
  override get message(): string {
    return `AddressFileFailed: cannot write the address to ${this.path}: ${
      this.cause instanceof Error ? this.cause.message : String(this.cause)
    }`
  }
}

/**
 * Writes the address whole or not at all (a temporary file renamed into place, so a script
 * polling for the file never reads half of it), and removes it when the scope closes.
 */
const writeAddressFile = (path: string, address: string) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const temporary = `${path}.${process.pid}.tmp`
        await writeFile(temporary, `${address}\n`)
        await rename(temporary, path)
      },
      catch: (cause) => new AddressFileFailed({ path, cause })
    }),
    () => Effect.promise(() => rm(path, { force: true }))
  )

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
 * mcore coordinator --address-file /tmp/mcore.address &   # any free port, its address in the file
 * ```
 *
 * @since 0.1.0
 */
export const command = Command.make(
  "coordinator",
  flags,
  Effect.fn("mcore.coordinator")(function*({
    listen,
    engines: asked,
    externalEngines,
    policy,
    stepMs,
    blockSize,
    protocol: chosen,
    tokenizer: tokenizerDir,
    maxRequests,
    alpha,
    prefixTableCapacity,
    transport,
    allowFrom,
    metricsPort,
    metricsHost,
    addressFile
  }) {
    if (Option.isSome(externalEngines) && Option.isSome(asked)) {
      return yield* new CliError.ValidationError({ message: "--engines starts test engines, --external-engines waits for real ones: give one of them" })
    }
    if (Option.isSome(externalEngines) && Option.isNone(chosen)) {
      return yield* new CliError.ValidationError({
        message: `missing --protocol (needed with --external-engines: the dialect the engines speak; one of ${Dialect.names.join(", ")})`
      })
    }
    if (Option.isSome(externalEngines) && Option.isNone(tokenizerDir)) {
      return yield* new CliError.ValidationError({
        message: "missing --tokenizer DIR (needed with --external-engines: the model's tokenizer, which the coordinator " +
          "detokenizes replies and hashes text prompts with)"
      })
    }
    const prefixRouting = "it tunes Megatron-LM's prefix routing, which the test coordinator does not use"
    const externalOnly = [
      ["--max-requests", Option.isSome(maxRequests), prefixRouting],
      ["--alpha", Option.isSome(alpha), prefixRouting],
      ["--prefix-table-capacity", Option.isSome(prefixTableCapacity), prefixRouting],
      ["--allow-from", Option.isSome(allowFrom), "the test coordinator binds on loopback only"]
    ] as const
    for (const [flag, given, why] of externalOnly) {
      if (Option.isNone(externalEngines) && given) {
        return yield* new CliError.ValidationError({ message: `${flag} goes with --external-engines (${why})` })
      }
    }
    if (Option.isNone(externalEngines) && Option.isSome(tokenizerDir)) {
      return yield* new CliError.ValidationError({
        message: "--tokenizer goes with --external-engines (the test engines generate in the test vocabulary, which the coordinator then uses)"
      })
    }
    if (Option.isNone(externalEngines) && !Loopback.isLoopback(listen)) {
      return yield* new CliError.ValidationError({
        message: `invalid value ${JSON.stringify(listen)} for --listen: test engines bind on loopback only ` +
          "(tcp://127.0.0.1:PORT, tcp://[::1]:PORT or ipc://PATH); --external-engines binds anywhere"
      })
    }
    if (Option.isNone(metricsPort) && Option.isSome(metricsHost)) {
      return yield* new CliError.ValidationError({ message: "--metrics-host goes with --metrics-port" })
    }
    /** Serves the metrics when asked, and prints where (after the address and protocol lines). */
    const metrics = (watched: Watched) =>
      Option.isNone(metricsPort) ? Effect.void : CoordinatorMetricsHttp.serve(
        watched,
        Option.getOrElse(metricsHost, () => CoordinatorMetricsHttp.DEFAULT_HOST),
        metricsPort.value
      ).pipe(Effect.flatMap((url) => Output.line(`metrics ${url}`)))
    const protocol = Option.getOrElse(chosen, () => "reference" as const)
    const engines = Option.getOrElse(asked, () => 2)
    let started = false
    // Registered before the cluster, so it runs after the cluster's sockets are closed.
    yield* Effect.addFinalizer(() => (started ? Output.line("closed") : Effect.void))
    if (Option.isSome(externalEngines)) {
      const coordinator = yield* CoordinatorExternal.start({
        listen,
        protocol,
        tokenizer: Option.getOrThrow(tokenizerDir),
        policy,
        blockSizeTokens: blockSize,
        maxRequests: Option.getOrUndefined(maxRequests),
        alpha: Option.getOrUndefined(alpha),
        prefixTableCapacity: Option.getOrUndefined(prefixTableCapacity),
        transport,
        allowFrom: Option.getOrUndefined(allowFrom)
      })
      started = true
      yield* Output.line(coordinator.address)
      yield* Output.line(`protocol ${coordinator.protocol}`)
      yield* metrics(coordinator)
      if (Option.isSome(addressFile)) yield* writeAddressFile(addressFile.value, coordinator.address)
      yield* Effect.raceFirst(CoordinatorExternal.serve(coordinator, externalEngines.value), coordinator.awaitStopped)
      return yield* Output.line("SHUTDOWN received")
    }
    const cluster: TestCluster.Handle = yield* TestCluster.make({
      engines,
      protocol,
      coordinator: { address: listen, policy, blockSizeTokens: blockSize, transport },
      engine: { stepMs, blockSizeTokens: blockSize }
    })
    started = true
    yield* Output.line(cluster.address)
    // The second line, as machine-readable as the first: a client must be given the dialect.
    yield* Output.line(`protocol ${cluster.protocol}`)
    yield* metrics(ofTestCoordinator(cluster.coordinator))
    if (Option.isSome(addressFile)) yield* writeAddressFile(addressFile.value, cluster.address)
    yield* Output.line(
      `test coordinator: ${engines} engine(s) (${cluster.engines.map((e) => e.identity).join(", ")}), ` +
        `policy ${policy}, protocol ${protocol}, a step every ${stepMs} ms; stop with Ctrl-C`
    )
    const watching = Effect.all([watchState(ofTestCoordinator(cluster.coordinator)), ...cluster.engines.map(watchEngine)], {
      concurrency: "unbounded"
    })
    yield* Effect.raceFirst(watching, cluster.coordinator.awaitStopped)
    yield* Output.line("SHUTDOWN received")
  }, Effect.scoped)
).pipe(
  Command.withDescription(
    "Run a test coordinator and test engines on loopback until Ctrl-C (exit code 130), SIGTERM (143) or SHUTDOWN (0). " +
      "The bound address is the first line of standard output and `protocol NAME` the second, the dialect to give " +
      "clients (logs go to standard error: do not merge them with 2>&1 to read them); --address-file also writes the address to a file"
  ),
  Command.withExamples([
    { command: "mcore coordinator --listen tcp://127.0.0.1:5555", description: "Two engines on a fixed port" },
    { command: "mcore coordinator --engines 4 --policy longest_prefix", description: "Any free port, prefix routing" },
    { command: "mcore coordinator --protocol core_v0.19", description: "Speaking Megatron-LM core_v0.19's wire" },
    { command: "mcore coordinator --address-file /tmp/mcore.address &", description: "Any free port, its address in a file" },
    {
      command: "mcore coordinator --protocol main --listen tcp://127.0.0.1:5555 --external-engines 2 --tokenizer ./Qwen3-8B",
      description: "For two engines of a Megatron-LM deployment to dial (launch_inference_coordinator=False, port 5555)"
    },
    {
      command: "mcore coordinator --protocol main --listen tcp://0.0.0.0:5555 --external-engines 8 --tokenizer ./Qwen3-8B --allow-from 10.0.0.0/8",
      description: "Engines and clients from 10.x only"
    }
  ])
)
