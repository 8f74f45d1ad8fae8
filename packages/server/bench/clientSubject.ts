/**
 * The baseline of the server benchmark, in its own process (forked by `server.bench.ts`): the bare
 * `InferenceClient` doing the same requests the server makes for the load generator (the chat
 * rendered and tokenized once, up front; the same sampling parameters; 64 tokens each), with the
 * same number in flight, no HTTP and no text layer. What the server costs beyond this is what
 * its HTTP and text layers add.
 *
 * Argv: `address [protocol] [decode]`: the protocol defaults to `reference` (the stand-in's);
 * given `decode`, the client is a disaggregated one (`Disaggregated.connect`), `address` its
 * prefill coordinator and `decode` its decode one (`disaggregated.bench.ts`). Reports `{ ready: true }`; then answers `{ id, op: "run", kind, concurrency,
 * millis }` (`kind` `plain`: `submit`; `stream`: `stream`, run to its end) with the requests
 * finished, the seconds taken, this process's CPU time (µs), latency p50 / p99 and time to first
 * token p50 (ms).
 */
import { Disaggregated, InferenceClient } from "@mcore-effect/client"
import type { Dialect } from "@mcore-effect/protocol"
import { ChatTemplate, Tokenizer } from "@mcore-effect/text"
import { Effect, Stream } from "effect"
import { GENERATED_TOKENS, messages, qwen3Directory } from "./fixture.ts"

const [address, protocolArg, decode] = process.argv.slice(2)
const protocol = (protocolArg ?? "reference") as Dialect.Name // the stand-in speaks reference

const percentile = (sorted: ReadonlyArray<number>, p: number): number =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!

const program = Effect.gen(function*() {
  const client = decode === undefined
    ? yield* InferenceClient.make({ address: address!, protocol })
    : (yield* Disaggregated.connect({ client: { protocol }, prefill: [address!], decode: [decode] })).client
  const tokenizer = yield* Tokenizer.fromDirectory(qwen3Directory)
  const template = yield* ChatTemplate.fromTokenizer(tokenizer)
  const text = yield* template.render(messages, { addGenerationPrompt: true })
  const prompt = tokenizer.encode(text, { addSpecialTokens: false })
  // What the server sends for the benchmark's chat request.
  const params = {
    temperature: 1,
    top_k: 0,
    top_p: 0,
    num_tokens_to_generate: GENERATED_TOKENS,
    return_log_probs: false,
    top_n_logprobs: 0,
    skip_prompt_log_probs: true,
    return_prompt_top_n_logprobs: false,
    termination_id: tokenizer.eosTokenIds[0] ?? null
  }

  const run = (kind: "plain" | "stream", concurrency: number, millis: number) =>
    Effect.gen(function*() {
      const latencies: Array<number> = []
      const firstTokens: Array<number> = []
      const cpuBefore = process.cpuUsage()
      const started = performance.now()
      const until = started + millis
      const one = kind === "plain"
        ? Effect.suspend(() => {
          const t0 = performance.now()
          return Effect.map(client.submit(prompt, params), () => latencies.push(performance.now() - t0))
        })
        : Effect.suspend(() => {
          const t0 = performance.now()
          let first = true
          return client.stream(prompt, params).pipe(
            Stream.runForEach(() =>
              Effect.sync(() => {
                if (first) {
                  first = false
                  firstTokens.push(performance.now() - t0)
                }
              })
            ),
            Effect.map(() => latencies.push(performance.now() - t0))
          )
        })
      const loop = Effect.whileLoop({ while: () => performance.now() < until, body: () => one, step: () => {} })
      yield* Effect.all(Array.from({ length: concurrency }, () => loop), { concurrency: "unbounded", discard: true })
      const seconds = (performance.now() - started) / 1000
      const cpu = process.cpuUsage(cpuBefore)
      latencies.sort((a, b) => a - b)
      firstTokens.sort((a, b) => a - b)
      return {
        requests: latencies.length,
        seconds,
        cpuUs: cpu.user + cpu.system,
        p50Ms: percentile(latencies, 0.5),
        p99Ms: percentile(latencies, 0.99),
        ttftP50Ms: percentile(firstTokens, 0.5)
      }
    })

  process.on(
    "message",
    (message: { readonly id?: number; readonly op?: string; readonly kind?: "plain" | "stream"; readonly concurrency?: number; readonly millis?: number }) => {
      if (message.op !== "run") return
      Effect.runPromise(run(message.kind!, message.concurrency!, message.millis!)).then(
        (figures) => process.send?.({ id: message.id, ...figures }),
        (error) => process.send?.({ id: message.id, error: String(error) })
      )
    }
  )
  process.send?.({ ready: true })
  return yield* Effect.never
})

process.on("disconnect", () => process.exit(0))
Effect.runFork(Effect.scoped(program))
