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
import { InferenceClient } from "@mcore-effect/client"
import type { Dialect } from "@mcore-effect/protocol"
import { Server, ServerConfig, Workers } from "@mcore-effect/server"
import { TestCluster, WordTokenizer } from "@mcore-effect/testkit"
import { Tokenizer } from "@mcore-effect/text"
import * as Config from "effect/Config"
import * as Data from "effect/Data"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { HttpServer } from "effect/http"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { CliError, Command, Flag } from "effect/cli"
import * as Path from "node:path"
import * as Flags from "../Flags.ts"
import * as Output from "../Output.ts"
import { integer } from "../Values.ts"

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
  coordinator: Flag.String("coordinator").pipe(
    Flag.withAlias("a"),
    Flag.withMetavar("address"),
    Flag.withDescription("The coordinator's address: tcp://host:port or ipc://path (env MCORE_COORDINATOR_ADDRESS)"),
    Flag.withFallbackConfig(Config.String("MCORE_COORDINATOR_ADDRESS")),
    Flag.optional
  ),
  tokenizer: Flag.String("tokenizer").pipe(
    Flag.withMetavar("directory"),
    Flag.withDescription("The model's Hugging Face tokenizer directory (tokenizer.json, tokenizer_config.json)"),
    Flag.optional
  ),
  model: Flag.String("model").pipe(
    Flag.withDescription("The model name served (default: the tokenizer directory's name)"),
    Flag.optional
  ),
  host: Flag.String("host").pipe(
    Flag.withDefault(ServerConfig.defaults.host),
    Flag.withDescription("Interface to listen on (default 127.0.0.1: this machine only)")
  ),
  port: integer("port", 0).pipe(
    Flag.withDefault(ServerConfig.defaults.port),
    Flag.withDescription("Port (default 8000; 0: any free port)")
  ),
  workers: integer("workers", 1).pipe(
    Flag.withDefault(1),
    Flag.withDescription("Server processes sharing the port, each with its own coordinator connection (default 1)")
  ),
  // A plain string flag (wrapped in Redacted at once below): a Redacted flag's type cannot be
  // named in the command tree's declaration.
  apiKey: Flag.String("api-key").pipe(
    Flag.withMetavar("key"),
    Flag.withDescription("Require Authorization: Bearer KEY on /v1/* (env MCORE_API_KEY)"),
    Flag.withFallbackConfig(Config.String("MCORE_API_KEY")),
    Flag.optional
  ),
  chatTemplate: Flag.String("chat-template").pipe(
    Flag.withMetavar("file"),
    Flag.withDescription("A Jinja chat template to use instead of the tokenizer's"),
    Flag.optional
  ),
  toolCallParser: Flag.Literals("tool-call-parser", ServerConfig.toolCallParsers).pipe(
    Flag.withDescription("How tool calls are read from generated text (without one, requests with tools get 400)"),
    Flag.optional
  ),
  reasoningParser: Flag.Literals("reasoning-parser", ServerConfig.reasoningParsers).pipe(
    Flag.withDescription("Split <think> reasoning into reasoning_content"),
    Flag.optional
  ),
  maxBodyBytes: integer("max-body-bytes", 1).pipe(
    Flag.withDefault(ServerConfig.defaults.maxBodyBytes),
    Flag.withDescription("Largest request body, in bytes (default 4 MiB)")
  ),
  maxConcurrent: integer("max-concurrent", 1).pipe(
    Flag.withDefault(ServerConfig.defaults.maxConcurrentRequests),
    Flag.withDescription("Generation requests served at once per process; more get 429 (default 1024)")
  ),
  requestTimeout: Flags.duration("request-timeout").pipe(
    Flag.withDescription("Deadline of a generation request; 504 and aborted after it (default 10m)"),
    Flag.optional
  ),
  shutdownGrace: Flags.duration("shutdown-grace").pipe(
    Flag.withDescription("On SIGTERM or Ctrl-C, how long streams in flight may take to finish (default 10s)"),
    Flag.optional
  ),
  maxModelLen: integer("max-model-len", 2).pipe(
    Flag.withDescription(
      "Context length, prompt plus generated tokens; more is a 400 (default: the tokenizer directory's config.json / tokenizer_config.json, as vLLM reads them; 4096 with --embedded)"
    ),
    Flag.optional
  ),
  allowedOrigins: Flag.String("allowed-origins").pipe(
    Flag.withMetavar("origins"),
    Flag.withDescription("Origins whose browser pages may call the server (CORS), comma-separated; * for any (default none)"),
    Flag.optional
  ),
  allowedMediaDomains: Flag.String("allowed-media-domains").pipe(
    Flag.withMetavar("hosts"),
    Flag.withDescription("Hosts whose http(s) image URLs chat image_url parts may name, comma-separated; * for any public host (default none: data: URLs only)"),
    Flag.optional
  ),
  maxImageBytes: integer("max-image-bytes", 1).pipe(
    Flag.withDefault(ServerConfig.defaults.maxImageBytes),
    Flag.withDescription("Largest image of a chat image_url part, decoded or fetched, in bytes (default 20 MiB)")
  ),
  maxImagesPerRequest: integer("max-images-per-request", 0).pipe(
    Flag.withDefault(ServerConfig.defaults.maxImagesPerRequest),
    Flag.withDescription("Most images in one chat request (default 16)")
  ),
  mediaFetchTimeout: Flags.duration("media-fetch-timeout").pipe(
    Flag.withDescription("How long fetching one remote image may take (default 5s)"),
    Flag.optional
  ),
  imagePlaceholder: Flag.String("image-placeholder").pipe(
    Flag.withMetavar("text"),
    Flag.withDescription("For a chat template that takes text only: the text each image part becomes (the model's image token, e.g. <image>)"),
    Flag.optional
  ),
  connectTimeout: Flags.connectTimeout,
  protocol: Flags.optionalProtocol(
    "The coordinator's wire protocol, by Megatron-LM version: required with --coordinator (no default: a wrong one can kill the coordinator); with --embedded the test cluster speaks it (default reference)"
  ),
  embedded: Flag.Boolean("embedded").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Start a test coordinator, test engines and the word tokenizer in this process")
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
    onSome: Effect.succeed,
    onNone: () =>
      options.embedded
        ? Effect.succeed("reference" as const)
        : Option.isNone(options.coordinator)
        ? usage(noCoordinator)
        : Effect.fail(new CliError.ValidationError({ message: `${Flags.missingProtocol} (needed with --coordinator)` }))
  })

/** Any failure to start (the port taken, no coordinator, a bad tokenizer directory) as one line. */
const failed = (error: { readonly message: string }): ServeFailed =>
  error instanceof ServeFailed ? error : new ServeFailed({ why: error.message })

/** The coordinator and tokenizer to use: given, from the primary, or embedded. */
const backend = (options: Parsed, protocol: Dialect.Name) =>
  Effect.gen(function*() {
    const fromPrimary = process.env[WORKER_COORDINATOR]
    if (Workers.isWorker() && fromPrimary !== undefined) {
      return { coordinator: fromPrimary, tokenizer: process.env[WORKER_TOKENIZER]!, model: "embedded", embedded: process.env[WORKER_EMBEDDED] === "1" }
    }
    if (options.embedded) {
      const cluster = yield* TestCluster.make({ engines: options.engines, protocol, engine: { stepMs: options.stepMs } })
      const tokenizer = yield* WordTokenizer.directory
      return { coordinator: cluster.address, tokenizer, model: "embedded", embedded: true }
    }
    if (Option.isNone(options.coordinator)) return yield* usage(noCoordinator)
    if (Option.isNone(options.tokenizer)) return yield* usage("--tokenizer DIR is required without --embedded")
    return {
      coordinator: options.coordinator.value,
      tokenizer: options.tokenizer.value,
      model: Path.basename(Path.resolve(options.tokenizer.value)),
      embedded: false
    }
  })

const serverOptions = (options: Parsed, model: string, embedded: boolean): ServerConfig.ServerOptions => ({
  model: Option.getOrElse(options.model, () => model),
  host: options.host,
  port: options.port,
  apiKey: Option.match(options.apiKey, { onNone: () => undefined, onSome: Redacted.make }),
  chatTemplate: Option.getOrUndefined(options.chatTemplate),
  toolCallParser: Option.getOrUndefined(options.toolCallParser),
  reasoningParser: Option.getOrUndefined(options.reasoningParser),
  maxBodyBytes: options.maxBodyBytes,
  maxConcurrentRequests: options.maxConcurrent,
  requestTimeout: Option.getOrUndefined(options.requestTimeout),
  shutdownGracePeriod: Option.getOrUndefined(options.shutdownGrace),
  maxModelLen: Option.getOrElse(options.maxModelLen, () => embedded ? EMBEDDED_MAX_MODEL_LEN : undefined),
  allowedOrigins: Option.match(options.allowedOrigins, { onNone: () => undefined, onSome: commaList }),
  allowedMediaDomains: Option.match(options.allowedMediaDomains, { onNone: () => undefined, onSome: commaList }),
  maxImageBytes: options.maxImageBytes,
  maxImagesPerRequest: options.maxImagesPerRequest,
  mediaFetchTimeout: Option.getOrUndefined(options.mediaFetchTimeout),
  imagePlaceholder: Option.getOrUndefined(options.imagePlaceholder)
})

const commaList = (list: string): Array<string> => list.split(",").map((item) => item.trim()).filter((item) => item.length > 0)

const urlOf = (address: HttpServer.HttpServer["Service"]["address"], host: string): string =>
  "port" in address ? `http://${host.includes(":") ? `[${host}]` : host}:${address.port}` : HttpServer.formatAddress(address)

/** One server in this process, until interrupted. */
const serveHere = (
  options: Parsed,
  protocol: Dialect.Name,
  coordinator: string,
  tokenizer: string,
  model: string,
  embedded: boolean
) =>
  Effect.gen(function*() {
    const client = InferenceClient.layer({
      address: coordinator,
      // The embedded coordinator speaks it too (a worker parses the same flags as its primary).
      protocol,
      connectTimeout: Option.getOrUndefined(options.connectTimeout)
    })
    const context = yield* Layer.build(
      Server.layer(serverOptions(options, model, embedded)).pipe(
        Layer.provide(Layer.merge(client, Tokenizer.layer(tokenizer)))
      )
    )
    const url = urlOf(Context.get(context, HttpServer.HttpServer).address, options.host)
    if (Workers.isWorker()) {
      yield* Workers.reportListening(url)
    } else {
      yield* Output.line(url)
      yield* Output.errorLine(
        `serving ${serverOptions(options, model, embedded).model} over ${coordinator} (protocol ${protocol}); stop with Ctrl-C`
      )
    }
    return yield* Effect.never
  })

/**
 * The command.
 *
 * @example
 * ```sh
 * mcore serve --embedded
 * mcore serve --coordinator tcp://127.0.0.1:5555 --protocol main --tokenizer ./qwen3 --model qwen3 --workers 2
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
    const graceMillis = Option.match(options.shutdownGrace, {
      onNone: () => ServerConfig.defaults.shutdownGraceMillis,
      onSome: Duration.toMillis
    })
    const url = yield* Workers.fork({
      count: options.workers,
      env: { [WORKER_COORDINATOR]: coordinator, [WORKER_TOKENIZER]: tokenizer, [WORKER_EMBEDDED]: embedded ? "1" : "0" },
      graceMillis,
      warn: (line) => Output.print(`${line}\n`)
    }).pipe(Effect.catch((why) => usage(why)))
    yield* Output.line(url)
    yield* Output.errorLine(`serving with ${options.workers} workers over ${coordinator}; stop with Ctrl-C`)
    return yield* Effect.never
  }, Effect.scoped)
).pipe(
  Command.withDescription("Serve the OpenAI API (chat and completions, streamed or not) over a coordinator"),
  Command.withExamples([
    { command: "mcore serve --embedded", description: "A test coordinator, engines and tokenizer in-process, on 127.0.0.1:8000" },
    {
      command: "mcore serve --coordinator tcp://127.0.0.1:5555 --protocol main --tokenizer ./qwen3 --workers 2",
      description: "Two server processes in front of a real coordinator"
    }
  ])
)

