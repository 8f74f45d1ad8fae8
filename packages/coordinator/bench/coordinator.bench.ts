/**
 * `pnpm bench coordinator`: our coordinator beside Megatron-LM's, in one run, with the same
 * engines and the same clients (issue 42). Each coordinator runs in a process of its own with two
 * engine ranks dialing it (`subjects.ts`: Megatron's own engine methods, no model), first with
 * instant steps, then with 10 ms steps; they take turns, round after round, and the table gives
 * medians and ours/Megatron ratios.
 *
 * Measured per coordinator, the coordinator process's CPU always (Megatron's: every thread of
 * its process from `/proc`, 10 ms ticks; ours: `process_cpu_seconds_total` from its
 * `--metrics-port`, to the microsecond, its own scrapes included):
 *
 * - **saturation**: three bursts of requests in flight from our client (32-token prompts, 4
 *   tokens each): requests/s, coordinator CPU per request, and each process's cores busy during
 *   them (coordinator, engines, client), which says which one is the limit;
 * - **Megatron's Python client**, the same burst, when the machine has Python with pyzmq;
 * - **streams**: 64-token streams from our client, a fixed number at a time: streamed tokens/s
 *   and coordinator CPU per streamed token;
 * - **latency** (instant steps only): round trips with 16 requests in flight at all times, p50
 *   and p99. Not one at a time: Megatron's engine loop sleeps 20 ms whenever it has nothing to
 *   do (`asyncio.sleep(0.02)`), which would be all that one request at a time measures.
 *
 * Needs `MEGATRON_GIT` (a Megatron-LM git dir, as `scripts/megatron` does; `MEGATRON_REF`,
 * default `refs/heads/main`), Python 3 with numpy, msgpack and pyzmq, and Linux (`/proc`);
 * without them it says so in one line and measures nothing. `--quick` (or `BENCH_QUICK=1`):
 * one round, smaller bursts. `BENCH_STEPS=10` (a comma list; default `0,10`): those step lengths
 * only.
 */
import { InferenceClient } from "@mcore-effect/client"
import { Timing } from "@mcore-effect/testkit"
import { Effect, Stream } from "effect"
import { rmSync } from "node:fs"
import * as Subjects from "./subjects.ts"

const { median } = Timing
const QUICK = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1"
const ROUNDS = QUICK ? 1 : 3
const BURST = QUICK ? 3_000 : 10_000
/** Streams per round: more with instant steps, where they take less time and CPU. */
const streamsFor = (stepMs: number) => (stepMs === 0 ? (QUICK ? 256 : 1_024) : QUICK ? 96 : 256)
const SATURATION_BURSTS = 3
const STREAMS_AT_ONCE = 32
const STREAM_TOKENS = 64
const LATENCY_REQUESTS = QUICK ? 500 : 2_000
const LATENCY_IN_FLIGHT = 16
const REQUEST_TOKENS = 4

/** One subject's figures in one round (NaN where not measured). */
interface Figures {
  readonly requestsPerSecond: number
  readonly cpuPerRequest: number
  readonly cores: { readonly coordinator: number; readonly engines: number; readonly client: number }
  readonly pythonRequestsPerSecond: number
  readonly pythonCpuPerRequest: number
  readonly tokensPerSecond: number
  readonly cpuPerToken: number
  readonly p50: number
  readonly p99: number
}

const prompt = (i: number): Array<number> => Array.from({ length: 32 }, (_, j) => 100 + ((i + j) % 5000))

const clientSeconds = () => {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1e6
}

/** Every workload against one running coordinator, from our client (and Python's). */
const measure = (running: Subjects.Running, setup: Subjects.Setup): Promise<Figures> =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const client = yield* InferenceClient.make({ address: running.address, protocol: "main" })
    const burst = (n: number) =>
      Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => client.submit(prompt(i), { num_tokens_to_generate: REQUEST_TOKENS }), {
        concurrency: "unbounded"
      })
    const STREAMS = streamsFor(setup.stepMs)
    const streams = (offset: number, onTokens: (count: number) => void) =>
      Effect.forEach(Array.from({ length: STREAMS }, (_, i) => i), (i) =>
        Stream.runForEach(client.stream(prompt(i + offset), { num_tokens_to_generate: STREAM_TOKENS }), (event) =>
          Effect.sync(() => {
            if (event._tag === "Tokens") onTokens(event.newTokens.length)
          })), { concurrency: STREAMS_AT_ONCE, discard: true })
    // Warm-up: two bursts and a wave of streams as large as the measured one, so that our
    // coordinator's code is compiled by V8 before anything is measured. Megatron's Python
    // coordinator has nothing to compile; ours, measured wave by wave (1,024 streams each, instant
    // steps) after start, cost 4.2, 2.7, 2.1, 1.8 µs per streamed token, its compiler threads
    // alone 1.8, 0.9, 0.2, 0.5 (and its first burst about three times its later ones).
    // Long-running coordinators are in that state.
    yield* burst(BURST)
    yield* burst(BURST)
    yield* streams(0, () => {})
    const coordinator = () => Effect.promise(running.coordinatorCpu)
    const engines = () => Subjects.cpuSeconds(running.enginesPid)
    let c0 = yield* coordinator()
    let [e0, b0, t0] = [engines(), clientSeconds(), performance.now()]
    // Three bursts back to back, measured as one: a major GC of ours (every few bursts: 10,000
    // requests in flight are old by the time they end) lands in some bursts and not others, and
    // one burst alone gave 14.4, 29.5 and 15.8 µs per request in three rounds.
    for (let b = 0; b < SATURATION_BURSTS; b++) {
      const replies = yield* burst(BURST)
      const short = replies.filter((r) => r.status !== "COMPLETED" || (r.generated_tokens as ReadonlyArray<number>).length !== REQUEST_TOKENS).length
      if (short > 0) throw new Error(`${short} of ${BURST} replies were not COMPLETED with ${REQUEST_TOKENS} tokens`)
    }
    let seconds = (performance.now() - t0) / 1000
    const [c1, e1, b1] = [yield* coordinator(), engines(), clientSeconds()]
    const saturation = {
      requestsPerSecond: (SATURATION_BURSTS * BURST) / seconds,
      cpuPerRequest: ((c1 - c0) / (SATURATION_BURSTS * BURST)) * 1e6,
      cores: { coordinator: (c1 - c0) / seconds, engines: (e1 - e0) / seconds, client: (b1 - b0) / seconds }
    }

    c0 = yield* coordinator()
    t0 = performance.now()
    let tokens = 0
    yield* streams(7, (count) => (tokens += count))
    seconds = (performance.now() - t0) / 1000
    // The partials carry all but what the final reply brings last: every stream's tokens counted.
    const streamed = STREAMS * STREAM_TOKENS
    if (tokens === 0) throw new Error("no partials arrived")
    const streaming = { tokensPerSecond: streamed / seconds, cpuPerToken: (((yield* coordinator()) - c0) / streamed) * 1e6 }

    const latencies: Array<number> = []
    if (setup.stepMs === 0) {
      yield* Effect.forEach(Array.from({ length: LATENCY_REQUESTS }, (_, i) => i), (i) =>
        Effect.suspend(() => {
          const start = performance.now()
          return Effect.map(
            client.submit(prompt(i), { num_tokens_to_generate: REQUEST_TOKENS }),
            () => void latencies.push((performance.now() - start) * 1000)
          )
        }), { concurrency: LATENCY_IN_FLIGHT, discard: true })
    }
    latencies.sort((a, b) => a - b)
    const python = yield* Effect.promise(() => Subjects.pythonBurst(setup, running.address, BURST, REQUEST_TOKENS, running.coordinatorCpu))
    if (python.ok !== BURST) throw new Error(`Megatron's Python client: ${python.ok} of ${BURST} replies exact`)
    return {
      ...saturation,
      ...streaming,
      pythonRequestsPerSecond: BURST / python.seconds,
      pythonCpuPerRequest: ((python.after - python.before) / BURST) * 1e6,
      p50: latencies.length === 0 ? Number.NaN : latencies[latencies.length >> 1]!,
      p99: latencies.length === 0 ? Number.NaN : latencies[Math.floor(latencies.length * 0.99)]!
    }
  })))

const fmt = (value: number, digits = 0) =>
  Number.isNaN(value) ? "-" : value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })

const report = (stepMs: number, megatron: ReadonlyArray<Figures>, ours: ReadonlyArray<Figures>) => {
  const row = (label: string, of: (f: Figures) => number, digits = 0) => {
    const [m, o] = [median(megatron.map(of)), median(ours.map(of))]
    console.log(`| ${label} | ${fmt(m, digits)} | ${fmt(o, digits)} | ${Number.isNaN(m) ? "-" : `${(o / m).toFixed(2)}x`} |`)
  }
  console.log(`\nengines with ${stepMs === 0 ? "instant" : `${stepMs} ms`} steps, medians of ${ROUNDS} round(s):\n`)
  console.log("| measurement | Megatron's coordinator | ours | ours / Megatron |")
  console.log("|---|---|---|---|")
  row(`requests/s at saturation (our client, ${SATURATION_BURSTS} bursts of ${BURST.toLocaleString("en-US")} in flight)`, (f) => f.requestsPerSecond)
  row("coordinator CPU per request (µs)", (f) => f.cpuPerRequest, 1)
  row(`requests/s, Megatron's Python client (one burst of ${BURST.toLocaleString("en-US")})`, (f) => f.pythonRequestsPerSecond)
  row("coordinator CPU per request, Python client (µs)", (f) => f.pythonCpuPerRequest, 1)
  row(`streamed tokens/s (${streamsFor(stepMs)} streams of ${STREAM_TOKENS}, ${STREAMS_AT_ONCE} at a time)`, (f) => f.tokensPerSecond)
  row("coordinator CPU per streamed token (µs)", (f) => f.cpuPerToken, 2)
  if (stepMs === 0) {
    row(`round trip p50, ${LATENCY_IN_FLIGHT} in flight (µs)`, (f) => f.p50)
    row(`round trip p99, ${LATENCY_IN_FLIGHT} in flight (µs)`, (f) => f.p99)
  }
  for (const [name, figures] of [["Megatron's", megatron], ["ours", ours]] as const) {
    const cores = (of: (f: Figures) => number) => median(figures.map(of)).toFixed(2)
    console.log(
      `\nat saturation with ${name}: cores busy: coordinator ${cores((f) => f.cores.coordinator)}, ` +
        `engines ${cores((f) => f.cores.engines)}, client ${cores((f) => f.cores.client)}`
    )
  }
}

export const run = async (): Promise<void> => {
  const found = Subjects.needs()
  if (typeof found === "string") {
    console.log(`coordinator bench: skipped: ${found}`)
    return
  }
  const { megatronGit, python } = found
  const ref = process.env.MEGATRON_REF ?? "refs/heads/main"
  const staged = Subjects.stage(megatronGit, ref)
  const tokenizerDir = Subjects.codepointTokenizer()
  try {
    await compare(ref, python, staged, tokenizerDir)
  } finally {
    rmSync(staged.dir, { recursive: true, force: true })
    rmSync(tokenizerDir, { recursive: true, force: true })
  }
}

const compare = async (ref: string, python: string, staged: { readonly dir: string; readonly commit: string }, tokenizerDir: string) => {
  console.log(
    `coordinator bench: Megatron-LM ${ref} (${staged.commit.slice(0, 10)}) beside ours (mcore coordinator), ` +
      "2 engine ranks of Megatron's engine code each (scripts/megatron/fake_engine.py), our client and Megatron's Python client"
  )
  for (const stepMs of (process.env.BENCH_STEPS ?? "0,10").split(",").map(Number)) {
    const setup: Subjects.Setup = { python, stageDir: staged.dir, tokenizerDir, stepMs }
    const figures = { megatron: [] as Array<Figures>, ours: [] as Array<Figures> }
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (["megatron", "ours"] as const) : (["ours", "megatron"] as const)
      for (const name of order) {
        const running = await (name === "megatron" ? Subjects.megatron(setup) : Subjects.ours(setup))
        try {
          const measured = await measure(running, setup)
          figures[name].push(measured)
          console.log(
            `  round ${round + 1}, ${name}: ${fmt(measured.requestsPerSecond)} req/s, ${fmt(measured.cpuPerRequest, 1)} µs/request ` +
              `(Python client ${fmt(measured.pythonCpuPerRequest, 1)}), ${fmt(measured.cpuPerToken, 2)} µs/token`
          )
        } finally {
          await running.stop()
        }
      }
    }
    report(stepMs, figures.megatron, figures.ours)
  }
}
