/**
 * `mcore serve`: the OpenAI-compatible HTTP server (`@mcore-effect/server`) in front of a
 * coordinator, with the model's Hugging Face tokenizer. `--embedded` brings its own: the
 * testkit's coordinator and engines and its word-level tokenizer, in this process, so
 * `curl http://127.0.0.1:8000/v1/chat/completions` works with nothing else running.
 *
 * It prints the URL it listens on alone on its first line (so a script can read it), then runs
 * until SIGINT or SIGTERM: new requests are refused, streams in flight get the grace period to
 * finish, the rest are aborted on the coordinator, and the process exits. With `--workers N`,
 * N processes (Node's cluster) share the port, each with its own connection to the coordinator.
 *
 * @since 0.1.0
 */
import { ClientConfig, Disaggregated, Fleet, FleetConfig, InferenceClient } from "@mcore-effect/client"
import { Coordinator } from "@mcore-effect/coordinator"
import { type Dialect, DialectCatalog } from "@mcore-effect/protocol"
import { Server, ServerConfig, Workers } from "@mcore-effect/server"
import { TestCluster, WordTokenizer } from "@mcore-effect/testkit"
import { Tokenizer } from "@mcore-effect/text"
import * as Data from "effect/Data"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { HttpServer } from "effect/http"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { CliError, Command, Flag } from "effect/cli"
import * as Path from "node:path"
import * as Flags from "../Flags.ts"
import * as HttpUrl from "../HttpUrl.ts"
import * as Output from "../Output.ts"
import * as SettingFlags from "../SettingFlags.ts"
import { integer } from "../Values.ts"
import * as ServeEngines from "./ServeEngines.ts"
import * as ServeMembership from "./ServeMembership.ts"

/**
 * The embedded word tokenizer's context length: its config says 2^20 (no real limit), and the
 * test engines generate as long as they are asked, so an omitted `max_tokens` would be a million.
 */
const EMBEDDED_MAX_MODEL_LEN = 4096

/** How a worker learns what the primary set up (an embedded cluster's address, its tokenizer). */
const WORKER_COORDINATOR = "MCORE_SERVE_COORDINATOR"
const WORKER_TOKENIZER = "MCORE_SERVE_TOKENIZER"
const WORKER_EMBEDDED = "MCORE_SERVE_EMBEDDED"

const flags = {
  // The client's `address` option under the name vLLM-style servers use; the same words and
  // variable. Several (repeated, or comma-separated) make a fleet.
  coordinator: Flags.addressList(
    Flag.String("coordinator").pipe(Flag.withAlias("a")),
    `${SettingFlags.help(ClientConfig.settings.address)}; several (repeated, or comma-separated) serve a fleet; ` +
      "dns:NAME:PORT: every A and AAAA record of NAME, resolved again every --resolve-interval, the fleet following them",
    { dns: true }
  ).pipe(Flag.optional),
  ...ServeMembership.flags,
  prefillCoordinator: Flag.String("prefill-coordinator").pipe(
    Flag.withMetavar("address"),
    Flag.withDescription(
      "A prefill coordinator of a disaggregated deployment (repeat for several; with --decode-coordinator, instead of " +
        "--coordinator): each request is prefilled there with do_kv_handoff, decoded on a decode coordinator, and its " +
        "KV pin released once (protocols main, pr-6497, reference)"
    ),
    Flag.atLeast(0)
  ),
  decodeCoordinator: Flag.String("decode-coordinator").pipe(
    Flag.withMetavar("address"),
    Flag.withDescription("A decode coordinator of a disaggregated deployment (repeat for several; see --prefill-coordinator)"),
    Flag.atLeast(0)
  ),
  ...SettingFlags.flags(Disaggregated.settings),
  ...ServeEngines.flags,
  tokenizer: Flag.String("tokenizer").pipe(
    Flag.withMetavar("directory"),
    Flag.withDescription("The model's Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json)"),
    Flag.optional
  ),
  model: Flag.String("model").pipe(
    Flag.withDescription("The model name served (default: the tokenizer directory's name)"),
    Flag.optional
  ),
  workers: integer("workers", 1).pipe(
    Flag.withDefault(1),
    Flag.withDescription("Server processes sharing the port, each with its own coordinator connection (default 1)")
  ),
  // Every server option that has a flag, with its declared default in its help text.
  ...SettingFlags.flags(ServerConfig.settings),
  // The client's options with a flag (--connect-timeout, ...), as every command takes them.
  ...SettingFlags.flags(Flags.clientSettingsBesidesAddress),
  // A fleet's options with a flag (--routing, --stall-timeout, ...), read with several coordinators.
  ...SettingFlags.flags(FleetConfig.settings),
  protocol: Flags.optionalProtocol(
    "The coordinator's wire protocol, by Megatron-LM version: required with --coordinator (no default: a wrong one can kill the coordinator); with --embedded the test cluster speaks it (default reference)"
  ),
  embedded: Flag.Boolean("embedded").pipe(
    Flag.withDefault(false),
    Flag.withDescription(
      `Start a test coordinator, test engines and the word tokenizer in this process (context length ${EMBEDDED_MAX_MODEL_LEN} unless --max-model-len)`
    )
  ),
  engines: integer("engines", 1).pipe(
    Flag.withDefault(2),
    Flag.withDescription("With --embedded: test engines (default 2)")
  ),
  stepMs: integer("step-ms", 0).pipe(
    Flag.withDefault(10),
    Flag.withDescription("With --embedded: milliseconds between engine steps (default 10)")
  )
} as const

type Parsed = Command.Command.Config.Infer<typeof flags>

/**
 * What keeps the server from starting, reported as one line with exit code 1 (see `Failure`).
 *
 * @since 0.1.0
 */
export class ServeFailed extends Data.TaggedError("ServeFailed")<{ readonly why: string }> {
  override get message(): string {
    return this.why
  }
}

const usage = (message: string) => Effect.fail(new ServeFailed({ why: message }))

const noCoordinator = "--coordinator (or MCORE_COORDINATOR_ADDRESS) is required without --embedded"

/**
 * The dialect to speak: as given; with `--embedded`, the test cluster's own choice when not
 * given; with a coordinator the project did not start, required (a bad invocation, exit code 2,
 * before anything is opened).
 */
const dialectOf = (options: Parsed): Effect.Effect<Dialect.Name, CliError.ValidationError | ServeFailed> =>
  Option.match(options.protocol, {
    onSome: (name) => {
      // Refused by name, before anything is opened: only these carry the KV hand-off.
      if (!isDisaggregated(options) || DialectCatalog.get(name).features.has("kvHandoff")) return Effect.succeed(name)
      return Effect.fail(
        new CliError.ValidationError({
          message: `--protocol ${name} does not carry the KV hand-off (SUBMIT_REQUEST_WITH_KV, RELEASE_KV) that ` +
            "--prefill-coordinator needs: use main, pr-6497 or reference"
        })
      )
    },
    onNone: () =>
      options.embedded
        ? Effect.succeed("reference" as const)
        : Option.isSome(options.enginesListen)
        ? Effect.fail(new CliError.ValidationError({ message: `${Flags.missingProtocol} (needed with --engines-listen: the dialect the engines speak)` }))
        : isDisaggregated(options)
        ? Effect.fail(new CliError.ValidationError({ message: `${Flags.missingProtocol} (needed with --prefill-coordinator)` }))
        : Option.isSome(options.coordinatorsFile)
        ? Effect.fail(new CliError.ValidationError({ message: `${Flags.missingProtocol} (needed with --coordinators-file)` }))
        : Option.isNone(options.coordinator)
        ? usage(noCoordinator)
        : Effect.fail(new CliError.ValidationError({ message: `${Flags.missingProtocol} (needed with --coordinator)` }))
  })

/** Whether the command names a disaggregated deployment (prefill and decode coordinators). */
const isDisaggregated = (options: Parsed): boolean =>
  options.prefillCoordinator.length > 0 || options.decodeCoordinator.length > 0

/**
 * Where requests go: one coordinator (or several, comma-joined: a fleet), a prefill pool and a
 * decode pool, or engines dialing a coordinator in this process.
 */
type Target =
  | string
  | { readonly prefill: ReadonlyArray<string>; readonly decode: ReadonlyArray<string> }
  | { readonly hosted: ServeEngines.Hosted }

const describeTarget = (target: Target): string =>
  typeof target === "string"
    ? ServeMembership.isSource(target) ? ServeMembership.describe(target) : target
    : "hosted" in target
    ? ServeEngines.describe(target.hosted)
    : `prefill ${target.prefill.join(", ")} / decode ${target.decode.join(", ")}`

/** Any failure to start (the port taken, no coordinator, a bad tokenizer directory) as one line. */
const failed = (error: { readonly message: string }): ServeFailed =>
  error instanceof ServeFailed ? error : new ServeFailed({ why: error.message })

/** The coordinator and tokenizer to use: given, from the primary, or embedded. */
const backend = (options: Parsed, protocol: Dialect.Name) =>
  Effect.gen(function*() {
    if (isDisaggregated(options)) {
      if (options.prefillCoordinator.length === 0 || options.decodeCoordinator.length === 0) {
        return yield* usage("--prefill-coordinator and --decode-coordinator go together (at least one of each)")
      }
      if (Option.isSome(options.coordinator) || options.embedded) {
        return yield* usage("--prefill-coordinator and --decode-coordinator replace --coordinator and --embedded")
      }
      if (Option.isNone(options.tokenizer)) return yield* usage("--tokenizer DIR is required without --embedded")
      for (const address of [...options.prefillCoordinator, ...options.decodeCoordinator]) {
        const problem = ClientConfig.addressProblem(address)
        if (problem !== undefined) return yield* usage(`cannot connect to ${JSON.stringify(address)}: ${problem}`)
      }
      const target: Target = { prefill: options.prefillCoordinator, decode: options.decodeCoordinator }
      return {
        coordinator: target,
        tokenizer: options.tokenizer.value,
        model: Path.basename(Path.resolve(options.tokenizer.value)),
        embedded: false
      }
    }
    if (Option.isSome(options.coordinatorsFile)) {
      if (Option.isSome(options.coordinator) || options.embedded || Option.isSome(options.enginesListen)) {
        return yield* usage("--coordinators-file replaces --coordinator, --embedded and --engines-listen")
      }
      if (Option.isNone(options.tokenizer)) return yield* usage("--tokenizer DIR is required without --embedded")
      return {
        coordinator: ServeMembership.fileSource(Path.resolve(options.coordinatorsFile.value)) as Target,
        tokenizer: options.tokenizer.value,
        model: Path.basename(Path.resolve(options.tokenizer.value)),
        embedded: false
      }
    }
    if (Option.isSome(options.enginesListen)) {
      if (Option.isSome(options.coordinator) || options.embedded) {
        return yield* usage("--engines-listen replaces --coordinator and --embedded: the server is the coordinator")
      }
      if (options.workers > 1) {
        return yield* usage(
          "--workers above 1 cannot go with --engines-listen: an engine has one coordinator, and each server process " +
            "would be another (for several server processes, run mcore coordinator --external-engines and give each --coordinator)"
        )
      }
      if (Option.isNone(options.tokenizer)) return yield* usage("--tokenizer DIR is required with --engines-listen")
      const hosted: ServeEngines.Hosted = {
        listen: options.enginesListen.value,
        expected: Option.getOrElse(options.externalEngines, () => 1),
        policy: Option.getOrUndefined(options.policy),
        allowFrom: Option.getOrUndefined(options.allowFrom)
      }
      return {
        coordinator: { hosted } as Target,
        tokenizer: options.tokenizer.value,
        model: Path.basename(Path.resolve(options.tokenizer.value)),
        embedded: false
      }
    }
    const hostedOnly = [
      ["--external-engines", Option.isSome(options.externalEngines)],
      ["--policy", Option.isSome(options.policy)],
      ["--allow-from", Option.isSome(options.allowFrom)]
    ] as const
    for (const [name, given] of hostedOnly) if (given) return yield* usage(`${name} goes with --engines-listen`)
    const fromPrimary = process.env[WORKER_COORDINATOR]
    if (Workers.isWorker() && fromPrimary !== undefined) {
      return { coordinator: fromPrimary as Target, tokenizer: process.env[WORKER_TOKENIZER]!, model: "embedded", embedded: process.env[WORKER_EMBEDDED] === "1" }
    }
    if (options.embedded) {
      const cluster = yield* TestCluster.make({ engines: options.engines, protocol, engine: { stepMs: options.stepMs } })
      const tokenizer = yield* WordTokenizer.directory
      return { coordinator: cluster.address as Target, tokenizer, model: "embedded", embedded: true }
    }
    if (Option.isNone(options.coordinator)) return yield* usage(noCoordinator)
    if (Option.isNone(options.tokenizer)) return yield* usage("--tokenizer DIR is required without --embedded")
    return {
      coordinator: options.coordinator.value.join(",") as Target,
      tokenizer: options.tokenizer.value,
      model: Path.basename(Path.resolve(options.tokenizer.value)),
      embedded: false
    }
  })

const serverOptions = (options: Parsed, model: string, embedded: boolean): ServerConfig.ServerOptions => ({
  ...SettingFlags.given(ServerConfig.settings, options),
  model: Option.getOrElse(options.model, () => model),
  maxModelLen: Option.getOrElse(options.maxModelLen, () => embedded ? EMBEDDED_MAX_MODEL_LEN : undefined)
})

/** One server in this process, until interrupted. */
const serveHere = (
  options: Parsed,
  protocol: Dialect.Name,
  coordinator: Target,
  tokenizer: string,
  model: string,
  embedded: boolean
) =>
  Effect.gen(function*() {
    const settings = SettingFlags.given(Flags.clientSettingsBesidesAddress, options)
    // The embedded coordinator speaks the protocol too (a worker parses the same flags as its
    // primary). Several coordinators (comma-joined, so that workers get them from one variable):
    // a fleet, which the server takes as its `InferenceClient` (its `/health` is 200 while one
    // is up; `/metrics` has each coordinator's).
    if (typeof coordinator !== "string" && "hosted" in coordinator) {
      const context = yield* Layer.build(
        Server.layer(serverOptions(options, model, embedded)).pipe(
          Layer.provideMerge(ServeEngines.layer(coordinator.hosted, protocol, tokenizer, settings))
        )
      )
      const running = Context.get(context, Coordinator.Coordinator)
      // The address bound (its port when 0 was asked).
      const bound: Target = { hosted: { ...coordinator.hosted, listen: running.address } }
      yield* started(options, protocol, bound, model, embedded, Context.get(context, HttpServer.HttpServer).address)
      return yield* ServeEngines.announce(running, coordinator.hosted.expected)
    }
    const client = typeof coordinator !== "string"
      // The text layer and the server run on it unchanged; /metrics gains its hand-off figures.
      ? Disaggregated.layer({
        client: { protocol, ...settings },
        prefill: coordinator.prefill,
        decode: coordinator.decode,
        ...SettingFlags.given(Disaggregated.settings, options)
      })
      : ServeMembership.isSource(coordinator)
      ? ServeMembership.layer(
        coordinator,
        { protocol, ...settings, ...SettingFlags.given(FleetConfig.settings, options) },
        SettingFlags.given(ServeMembership.settings, options)
      )
      : coordinator.includes(",")
      ? Fleet.layer({ protocol, ...settings, ...SettingFlags.given(FleetConfig.settings, options), coordinators: coordinator.split(",") })
      : InferenceClient.layer({ address: coordinator, protocol, ...settings })
    const context = yield* Layer.build(
      Server.layer(serverOptions(options, model, embedded)).pipe(
        Layer.provide(Layer.merge(client, Tokenizer.layer(tokenizer)))
      )
    )
    yield* started(options, protocol, coordinator, model, embedded, Context.get(context, HttpServer.HttpServer).address)
    return yield* Effect.never
  })

/** The server's URL on the first line of standard output (a worker's to its primary), and what it serves. */
const started = (
  options: Parsed,
  protocol: Dialect.Name,
  coordinator: Target,
  model: string,
  embedded: boolean,
  address: HttpServer.HttpServer["Service"]["address"]
) =>
  Effect.gen(function*() {
    const url = HttpUrl.of(address, Option.getOrElse(options.host, () => ServerConfig.defaults.host))
    if (Workers.isWorker()) return yield* Workers.reportListening(url)
    yield* Output.line(url)
    yield* Output.errorLine(
      `serving ${serverOptions(options, model, embedded).model} over ${describeTarget(coordinator)} (protocol ${protocol}); stop with Ctrl-C`
    )
  })

/**
 * The command.
 *
 * @example
 * ```sh
 * mcore serve --embedded
 * mcore serve --coordinator tcp://127.0.0.1:5555 --protocol main --tokenizer ./qwen3 --model qwen3 --workers 2
 * mcore serve --prefill-coordinator tcp://10.0.0.1:5555 --decode-coordinator tcp://10.0.0.2:5555 --protocol main --tokenizer ./qwen3
 * ```
 *
 * @since 0.1.0
 */
export const command = Command.make(
  "serve",
  flags,
  Effect.fn("mcore.serve")(function*(options) {
    const protocol = yield* dialectOf(options)
    const { coordinator, embedded, model, tokenizer } = yield* backend(options, protocol).pipe(Effect.mapError(failed))
    if (options.workers === 1 || Workers.isWorker()) {
      return yield* serveHere(options, protocol, coordinator, tokenizer, model, embedded).pipe(Effect.mapError(failed))
    }
    // A worker drains, then has its grace period: both before the primary kills it.
    const graceMillis = Duration.toMillis(
      Duration.fromInputUnsafe(Option.getOrElse(options.shutdownGracePeriod, () => ServerConfig.defaults.shutdownGracePeriod))
    ) + Duration.toMillis(Duration.fromInputUnsafe(Option.getOrElse(options.drainDelay, () => ServerConfig.defaults.drainDelay)))
    // A disaggregated worker reads its coordinators off the same flags as its primary.
    const env: Record<string, string> = typeof coordinator === "string"
      ? { [WORKER_COORDINATOR]: coordinator, [WORKER_TOKENIZER]: tokenizer, [WORKER_EMBEDDED]: embedded ? "1" : "0" }
      : {}
    const url = yield* Workers.fork({
      count: options.workers,
      env,
      graceMillis,
      warn: (line) => Output.print(`${line}\n`)
    }).pipe(Effect.catch((why) => usage(why)))
    yield* Output.line(url)
    yield* Output.errorLine(`serving with ${options.workers} workers over ${describeTarget(coordinator)}; stop with Ctrl-C`)
    return yield* Effect.never
  }, Effect.scoped)
).pipe(
  Command.withDescription("Serve the OpenAI API (chat and completions, streamed or not) over a coordinator"),
  Command.withExamples([
    { command: "mcore serve --embedded", description: "A test coordinator, engines and tokenizer in-process, on 127.0.0.1:8000" },
    {
      command: "mcore serve --coordinator tcp://127.0.0.1:5555 --protocol main --tokenizer ./qwen3 --workers 2",
      description: "Two server processes in front of a real coordinator"
    },
    {
      command:
        "mcore serve --prefill-coordinator tcp://10.0.0.1:5555 --decode-coordinator tcp://10.0.0.2:5555 --protocol main --tokenizer ./qwen3",
      description: "Prefill/decode disaggregation: prefill on one coordinator, decode on another (KV hand-off)"
    }
  ])
)

