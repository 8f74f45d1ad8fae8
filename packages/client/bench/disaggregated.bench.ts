/**
 * `pnpm bench disaggregated`: what the disaggregated client's orchestration costs, with instant
 * engines (the testkit's, `stepMs: 0`) on the in-memory transport, in one process (this one;
 * every figure measured in the same run, the subjects taking turns, order reversed each round).
 *
 * Subjects, each doing the same requests (16 prompt tokens, 16 generated):
 * - `direct`: one coordinator, `submit` (the path without disaggregation);
 * - `by hand`: the same two requests a disaggregated one makes, written out with the member
 *   clients (prefill with `do_kv_handoff` on P, `submitWithKvHandoff` on D, `releaseKvHandoff`),
 *   no orchestration: the wire work of a hand-off and the engines' and coordinators' part of it;
 * - `disaggregated`: `Disaggregated`'s `submit` over the same two coordinators.
 *
 * Measured: CPU per request (`process.cpuUsage()` over a burst of `burst` requests, 64 in flight,
 * divided by its size; this process runs the coordinators and engines too, so the figures that
 * matter are the differences): `disaggregated - by hand` is the orchestration's own cost (target:
 * under 50 µs per request); `disaggregated - direct` what disaggregating costs in all here. And
 * time to first token p50 of a stream, one at a time, disaggregated against direct.
 *
 * `--quick` (or `BENCH_QUICK=1`) runs 1 round of smaller bursts.
 */
import { MemorySocket } from "@mcore-effect/protocol"
import { TestCluster, Timing, Vocabulary } from "@mcore-effect/testkit"
import { Effect, References, Stream } from "effect"
import { Disaggregated, InferenceClient, Transport } from "../src/index.ts"

const { median } = Timing

const QUICK = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1"
const ROUNDS = QUICK ? 1 : 3
const BURST = QUICK ? 2_000 : 10_000
const CONCURRENCY = 64
const TTFT_SAMPLES = QUICK ? 100 : 500

const prompt = Vocabulary.tokenize("the quick brown fox jumps over the lazy dog and runs far into the wood").slice(0, 16)
const params = { num_tokens_to_generate: 16 }


const cpuMicros = (): number => {
  const usage = process.cpuUsage()
  return usage.user + usage.system
}

const program = Effect.gen(function*() {
  const network = new MemorySocket.Network()
  const engine = { stepMs: 0, blockSizeTokens: 16 }
  const protocol = "main" as const
  const prefillCluster = yield* TestCluster.make({ engines: 1, protocol, network, engine })
  const decodeCluster = yield* TestCluster.make({ engines: 1, protocol, network, engine })
  const directCluster = yield* TestCluster.make({ engines: 1, protocol, network, engine })
  const clientOf = (address: string) =>
    InferenceClient.make({ address, protocol }).pipe(Effect.provide(Transport.layerMemory(network)))
  const prefill = yield* clientOf(prefillCluster.address)
  const decode = yield* clientOf(decodeCluster.address)
  const direct = yield* clientOf(directCluster.address)
  const disaggregated = yield* Disaggregated.make({
    prefill: [{ name: prefillCluster.address, client: prefill }],
    decode: [{ name: decodeCluster.address, client: decode }]
  })

  const byHand = Effect.gen(function*() {
    const p = yield* prefill.submit(prompt, { ...params, do_kv_handoff: true, num_tokens_to_generate: 0 })
    const handoff = p.disaggregated_params as { request_id: number; block_ids: Array<number>; kv_meta: Record<string, unknown> }
    const reply = yield* decode.submitWithKvHandoff(prompt, params, handoff.kv_meta, handoff.block_ids)
    yield* prefill.releaseKvHandoff(handoff.request_id)
    return reply
  })
  const subjects: Record<string, Effect.Effect<unknown, unknown>> = {
    direct: direct.submit(prompt, params),
    "by hand": byHand,
    disaggregated: disaggregated.client.submit(prompt, params)
  }

  const burst = (one: Effect.Effect<unknown, unknown>, n: number) =>
    Effect.gen(function*() {
      const before = cpuMicros()
      const start = performance.now()
      yield* Effect.forEach(Array.from({ length: n }), () => one, { concurrency: CONCURRENCY, discard: true })
      return { cpuPerRequest: (cpuMicros() - before) / n, perSecond: n / ((performance.now() - start) / 1000) }
    })

  const names = Object.keys(subjects)
  for (const name of names) yield* burst(subjects[name]!, Math.min(BURST, 2_000)) // warm-up
  const cpu: Record<string, Array<number>> = Object.fromEntries(names.map((n) => [n, []]))
  const rate: Record<string, Array<number>> = Object.fromEntries(names.map((n) => [n, []]))
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse()
    for (const name of order) {
      const result = yield* burst(subjects[name]!, BURST)
      cpu[name]!.push(result.cpuPerRequest)
      rate[name]!.push(result.perSecond)
    }
  }

  const ttft = (stream: () => Stream.Stream<unknown, unknown>) =>
    Effect.gen(function*() {
      const samples: Array<number> = []
      for (let i = 0; i < TTFT_SAMPLES; i++) {
        const start = performance.now()
        yield* Stream.runHead(stream())
        samples.push((performance.now() - start) * 1000)
      }
      return median(samples)
    })
  const ttftDirect = yield* ttft(() => direct.stream(prompt, params))
  const ttftDisaggregated = yield* ttft(() => disaggregated.client.stream(prompt, params))
  yield* disaggregated.idle
  const stats = yield* disaggregated.stats
  const pEngine = yield* prefillCluster.engines[0]!.waitFor("every release", (s) => s.pinned.length === 0)

  const row = (name: string) =>
    `  ${name.padEnd(14)} ${median(cpu[name]!).toFixed(1).padStart(8)} µs CPU/request ${median(rate[name]!).toFixed(0).padStart(8)} req/s`
  console.log(`disaggregated (instant engines, in-memory transport, ${BURST} requests x ${ROUNDS} round(s), ${CONCURRENCY} in flight; medians)`)
  for (const name of names) console.log(row(name))
  const orchestration = median(cpu.disaggregated!) - median(cpu["by hand"]!)
  console.log(`  orchestration (disaggregated - by hand): ${orchestration.toFixed(1)} µs CPU/request (target < 50)`)
  console.log(`  disaggregating (disaggregated - direct): ${(median(cpu.disaggregated!) - median(cpu.direct!)).toFixed(1)} µs CPU/request`)
  console.log(`  TTFT p50 of a stream, one at a time: direct ${ttftDirect.toFixed(0)} µs, disaggregated ${ttftDisaggregated.toFixed(0)} µs`)
  console.log(
    `  pins: ${stats.pins} made, ${stats.released} released, ${stats.died} died; prefill engine holds ${pEngine.pinned.length} (released ${pEngine.released.length} in all)`
  )
})

/** Runs the benchmark. */
export const run = (): Promise<void> =>
  Effect.runPromise(program.pipe(Effect.scoped, Effect.provideService(References.MinimumLogLevel, "Warn")))
