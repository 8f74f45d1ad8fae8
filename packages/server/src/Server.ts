/**
 * The OpenAI-compatible HTTP server as a `Layer`, on Effect's `HttpRouter` and
 * `@effect/platform-node`'s `NodeHttpServer`, over an `InferenceClient`:
 *
 * - `POST /v1/chat/completions`, `POST /v1/completions`, `POST /v1/responses` (streamed as
 *   server-sent events or not),
 * - `GET /v1/models`, `GET /v1/models/:model`, `GET /health` (and `/v1/health`), `GET /ready`,
 *   `GET /version`, `GET /metrics` (Prometheus text).
 *
 * Release order, when the layer's scope closes (SIGTERM, Ctrl-C): first the drain (`drainDelay`,
 * default 5 s: `/ready` and `/health` answer 503 while every request is still served); then new
 * generation requests are refused with 503; the listener stops accepting connections and idle keep-alive
 * connections close; responses in flight get the grace period to finish; what is still running
 * after it is interrupted, which aborts its requests on the coordinator (one ABORT each); then the
 * client (provided from outside, so released after the server) closes.
 *
 * @since 0.1.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { InferenceClient } from "@mcore-effect/client"
import { ChatTemplate, TextGeneration, type TextError, Tokenizer } from "@mcore-effect/text"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import type * as HttpServer from "effect/http/HttpServer"
import type { ServeError } from "effect/http/HttpServerError"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import * as Result from "effect/Result"
import * as Scheduler from "effect/Scheduler"
import { createServer, type IncomingMessage, type Server as Http, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import * as ExtraMetrics from "./ExtraMetrics.ts"
import * as HealthReport from "./HealthReport.ts"
import * as ChatCompletions from "./internal/ChatCompletions.ts"
import * as Cors from "./internal/Cors.ts"
import * as Completions from "./internal/Completions.ts"
import * as JsonResponse from "./internal/JsonResponse.ts"
import { answer, authenticated, generation } from "./internal/Routes.ts"
import * as RequestId from "./internal/RequestId.ts"
import * as Responses from "./internal/Responses.ts"
import * as ServerConfig from "./ServerConfig.ts"
import { Internal, ModelNotFound, NotFound, serverError } from "./ServerError.ts"
import * as ServerState from "./internal/ServerState.ts"
import * as Tokenize from "./internal/Tokenize.ts"
import { version } from "./internal/Version.ts"

const modelObject = (state: ServerState.State) => ({
  id: state.config.model,
  object: "model",
  created: state.startedAt,
  owned_by: "mcore-effect",
  // vLLM's: the context length (prompt and generated tokens), which clients size prompts by.
  max_model_len: state.maxModelLen
})

const models = (state: ServerState.State) =>
  authenticated(state, "GET", "/v1/models", () => Effect.succeed(JsonResponse.json({ object: "list", data: [modelObject(state)] })))

const model = (state: ServerState.State) =>
  authenticated(state, "GET", "/v1/models/:model", () =>
    Effect.flatMap(HttpRouter.params, (params) => {
      const name = params["model"] ?? ""
      return name === state.config.model
        ? Effect.succeed(JsonResponse.json(modelObject(state)))
        : Effect.fail(serverError(new ModelNotFound({ model: name, served: state.config.model })))
    }))

/**
 * Whether the server should be sent requests, and if not why: shutting down (new requests
 * refused), draining (still serving, for `drainDelay`, so that a load balancer stops sending
 * first), the coordinator lost, or what runs under the client says (no engines registered).
 */
const readiness = Effect.gen(function*() {
  const state = yield* ServerState.ServerState
  const client = yield* InferenceClient.InferenceClient
  const connected = yield* client.connected
  // What runs under the client, when it says (the engines of a coordinator in this process).
  const more = yield* Effect.serviceOption(HealthReport.HealthReport)
  const report = Option.isSome(more) ? yield* more.value.report : undefined
  const status = state.gate.isClosing
    ? "shutting_down"
    : state.gate.isDraining
    ? "draining"
    : !connected
    ? "coordinator_lost"
    : report?.ready === false
    ? report.status
    : "ok"
  return { state, status, ready: status === "ok", report }
})

/** `/health`, and `/v1/health` where Megatron-LM's server (and its benchmarks) look for it. */
const health = (path: "/health" | "/v1/health") => HttpRouter.route("GET", path, Effect.gen(function*() {
  const { ready, report, state, status } = yield* readiness
  // `pid` tells which process answered (with --workers, each has its own connection); `ready`
  // is Megatron-LM's server's field.
  const body = {
    status,
    ready,
    model: state.config.model,
    in_flight: state.gate.size,
    pid: process.pid,
    ...report?.fields
  }
  return yield* answer(state, path, Effect.succeed(JsonResponse.withStatus(body, ready ? 200 : 503)))
}))

/** `/ready`: readiness alone, for a load balancer's probe (no API key, as `/health`). */
const ready = HttpRouter.route("GET", "/ready", Effect.gen(function*() {
  const { ready, state, status } = yield* readiness
  return yield* answer(state, "/ready", Effect.succeed(JsonResponse.withStatus({ status, ready }, ready ? 200 : 503)))
}))

/** vLLM's `GET /version`. */
const versionRoute = (state: ServerState.State) =>
  HttpRouter.route("GET", "/version", answer(state, "/version", Effect.succeed(JsonResponse.json({ version }))))

const metrics = HttpRouter.route("GET", "/metrics", Effect.gen(function*() {
  const state = yield* ServerState.ServerState
  const more = yield* Effect.serviceOption(ExtraMetrics.ExtraMetrics)
  const own = yield* PrometheusMetrics.format()
  const text = Option.isSome(more) ? own + (own.endsWith("\n") || own === "" ? "" : "\n") + (yield* more.value.text) : own
  return yield* answer(
    state,
    "/metrics",
    Effect.succeed(HttpServerResponse.text(text, { contentType: "text/plain; version=0.0.4; charset=utf-8" }))
  )
}))

/** vLLM's `/tokenize` and `/detokenize` (see `Tokenize`). */
const tokenizeRoutes = (state: ServerState.State, text: TextGeneration.Service) => {
  const { detokenize, tokenize } = Tokenize.handlers(state, text)
  return [authenticated(state, "POST", "/tokenize", tokenize), authenticated(state, "POST", "/detokenize", detokenize)]
}

const notFound = (state: ServerState.State) =>
  HttpRouter.route("*", "*", (request) => {
    // A CORS preflight (no API key: browsers send none on one).
    const preflight = request.method === "OPTIONS" ? Cors.preflight(state.config.allowedOrigins, request) : undefined
    if (preflight !== undefined) return answer(state, "preflight", Effect.succeed(preflight))
    return answer(state, "unmatched", Effect.fail(serverError(new NotFound({ method: request.method, path: request.url }))))
  })

/**
 * Every route, registered on the current `HttpRouter`, with the server's state and text
 * generation read once, here.
 */
const routes = HttpRouter.addAll(Effect.map(
  Effect.all([Effect.service(ServerState.ServerState), Effect.service(TextGeneration.TextGeneration)]),
  ([state, text]) => [
    generation(state, text, "/v1/chat/completions", ChatCompletions.handle),
    generation(state, text, "/v1/completions", Completions.handle),
    generation(state, text, "/v1/responses", Responses.handle),
    ...tokenizeRoutes(state, text),
    models(state),
    model(state),
    health("/health"),
    health("/v1/health"),
    ready,
    versionRoute(state),
    metrics,
    notFound(state)
  ]
))

/**
 * The server listening on `host:port`, serving `model` over the `InferenceClient` and the
 * model's `Tokenizer` it is given (chats rendered with the tokenizer's template, or the
 * `chatTemplate` file). Fails with `ServeError` when the port cannot be bound, `TextError` when
 * the template file does not load. Provides `HttpServer` (its `address` says where it listens,
 * for port 0).
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { Server } from "@mcore-effect/server"
 * import { Tokenizer } from "@mcore-effect/text"
 * import { Layer } from "effect"
 *
 * const Live = Server.layer({ model: "qwen3", port: 8000 }).pipe(
 *   Layer.provide(Layer.merge(
 *     InferenceClient.layer({ address: "tcp://127.0.0.1:5555", protocol: "main" }),
 *     Tokenizer.layer("./Qwen3-8B")
 *   ))
 * )
 * // Layer.launch(Live) serves until interrupted
 * ```
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: ServerConfig.ServerOptions
): Layer.Layer<
  HttpServer.HttpServer,
  ServeError | TextError.TextError | ReturnType<typeof invalidOptions>,
  InferenceClient.InferenceClient | Tokenizer.Tokenizer
> => {
  const resolved = ServerConfig.resolve(options)
  if (Result.isFailure(resolved)) {
    return Layer.effectDiscard(Effect.fail(invalidOptions(`${resolved.failure.name}: ${resolved.failure.why}`))) as never
  }
  const config = resolved.success
  const app = HttpRouter.serve(routes, { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provide(Layer.succeed(Scheduler.Scheduler, new SharedDispatch()))
  )
  let server: Http | undefined
  const sockets = new Set<Socket>()
  const listening = NodeHttpServer.layer(() => {
    server = createServer({ keepAliveTimeout: 5_000 })
    // Before NodeHttpServer's own listener: every response, streamed or not, carries them.
    const origins = config.allowedOrigins
    const decorate = (request: IncomingMessage, response: ServerResponse) => {
      RequestId.assign(request, response)
      if (origins.length > 0) Cors.decorate(origins, request, response)
    }
    server.on("request", decorate)
    // A request with `Expect: 100-continue` (curl sends it for bodies over 1 MB) comes as
    // `checkContinue`, not `request`, once anything listens for it (NodeHttpServer does).
    server.on("checkContinue", decorate)
    server.on("connection", (socket) => {
      sockets.add(socket)
      socket.once("close", () => sockets.delete(socket))
    })
    return server
  }, {
    host: config.host,
    port: config.port,
    gracefulShutdownTimeout: config.shutdownGraceMillis
  })
  // Acquired after the listener and the routes, so released before them: the first thing
  // shutdown does is refuse new generation requests. Node's `close` closes the connections idle
  // at that moment only, and not one opened but not yet used (clients open spares): either would
  // stay open until its keep-alive timeout and hold the shutdown up (PERFORMANCE.md#shutdown),
  // so every connection without a response in progress is closed, now and as more come.
  const closeGate = Layer.effectDiscard(
    Effect.flatMap(
      Effect.service(ServerState.ServerState),
      (state) =>
        Effect.addFinalizer(() =>
          Effect.andThen(drain(state), Effect.sync(() => {
            state.gate.close()
            const node = server
            if (node === undefined) return
            const closeIdle = () => {
              for (const socket of sockets) {
                if ((socket as Socket & { _httpMessage?: unknown })._httpMessage == null) socket.destroy()
              }
            }
            closeIdle()
            const sweep = setInterval(closeIdle, 50)
            sweep.unref()
            node.once("close", () => clearInterval(sweep))
          }))
        )
    )
  )
  return closeGate.pipe(
    Layer.provideMerge(app),
    Layer.provideMerge(listening),
    Layer.provideMerge(ServerState.layer(config)),
    Layer.provideMerge(textLayer(options.chatTemplate))
  )
}

/**
 * The drain: readiness says 503 (`draining`) while every request is still served, for
 * `drainDelay`, then the shutdown proper begins. Without it, a server behind a load balancer
 * refuses requests the balancer still sends it between SIGTERM and its next probe.
 */
const drain = (state: ServerState.State): Effect.Effect<void> =>
  Effect.suspend(() => {
    const millis = state.config.drainDelayMillis
    if (!(millis > 0)) return Effect.void
    state.gate.drain()
    state.metrics.log(Effect.logInfo(`draining: /ready and /health answer 503 for ${millis} ms while requests are still served`))
    return Effect.sleep(millis)
  })

/**
 * Effect's default scheduler with one task queue for every fiber it runs, where the default
 * gives each fiber that schedules a task (every request's, for its stream's queue) a queue of its
 * own, which it keeps while it runs (PERFORMANCE.md#shared-dispatch). One
 * queue is what Node's event loop is anyway: the tasks of one turn run in one `setImmediate`, in
 * priority order, then in the order they came, as within a fiber's own queue.
 */
class SharedDispatch extends Scheduler.MixedScheduler {
  private readonly shared = super.makeDispatcher()
  override makeDispatcher() {
    return this.shared
  }
}

/** Text generation, rendering chats with the template file at `path` when given. */
const textLayer = (path: string | undefined) =>
  path === undefined
    ? TextGeneration.layer()
    : Layer.unwrap(Effect.gen(function*() {
      const tokenizer = yield* Tokenizer.Tokenizer
      const chatTemplate = yield* ChatTemplate.fromFile(path, tokenizer)
      return TextGeneration.layer({ chatTemplate })
    }))

const invalidOptions = (why: string) => serverError(new Internal({ why: `invalid server options: ${why}` }))
