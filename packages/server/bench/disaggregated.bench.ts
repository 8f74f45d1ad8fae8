/**
 * `pnpm bench disaggregated`, the server's part: what prefill/decode disaggregation adds to the
 * OpenAI-compatible server, with instant engines, every figure measured in the same run. (The
 * client's part, `packages/client/bench/disaggregated.bench.ts`, runs first.)
 *
 * Separate processes, as in `server.bench.ts` (whose load generation, CPU accounting and
 * processes this reuses), so that a server's CPU time is the server's alone: the coordinators
 * (`clustersSubject.ts`: prefill, decode and direct testkit clusters on ZeroMQ, `main`, one
 * instant engine each), two servers (`serverSubject.ts`, Qwen3's tokenizer): `direct` over one
 * coordinator, `disaggregated` over `Disaggregated.layer` (the prefill and decode
 * coordinators), their two bare clients (`clientSubject.ts`: the same requests, no HTTP, no text
 * layer, for the client library's share), and this one, the load generator (autocannon). The servers take turns, the
 * order reversed each round, on the server benchmark's workload (a chat completion of 64 tokens).
 *
 * Measured (medians of the rounds), for both servers, not streamed, 64 connections: requests/s,
 * latency p50 and the server process's CPU per request at full load, and the CPU per request at
 * the same load for both (a fixed rate, half the slower one's warm-up throughput: at full load
 * each runs at its own rate, and CPU per request falls as the rate rises, more work batched per
 * wake-up); streamed, time to first token p50, one stream at a time. Reported: disaggregated
 * against direct (the CPU difference at the same load against the target of under 50 µs per
 * request; the ratios of requests/s and TTFT).
 *
 * `--quick` (or `BENCH_QUICK=1`) runs 1 round of 3 s per figure instead of 3 of 8 s.
 */
import { firstTokens, fmt, load, median, spawn } from "./harness.ts"

const QUICK = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1"
const ROUNDS = QUICK ? 1 : 3
const SECONDS = QUICK ? 3 : 8
const CONNECTIONS = 64
const TTFT_SAMPLES = QUICK ? 50 : 200

interface Figures {
  readonly cpu: Array<number>
  readonly cpuAtRate: Array<number>
  readonly perSecond: Array<number>
  readonly p50: Array<number>
  readonly ttft: Array<number>
  readonly clientCpu: Array<number>
  readonly clientPerSecond: Array<number>
}

const empty = (): Figures => ({ cpu: [], cpuAtRate: [], perSecond: [], p50: [], ttft: [], clientCpu: [], clientPerSecond: [] })

export const run = async (): Promise<void> => {
  const clusters = spawn("coordinators", "./clustersSubject.ts", [])
  const children = [clusters]
  try {
    const { prefill, decode, direct } = await clusters.ready()
    const servers = {
      direct: spawn("server, direct", "./serverSubject.ts", [direct, "1", "main"]),
      disaggregated: spawn("server, disaggregated", "./serverSubject.ts", [prefill, "1", "main", decode])
    }
    const clients = {
      direct: spawn("bare client, direct", "./clientSubject.ts", [direct, "main"]),
      disaggregated: spawn("bare client, disaggregated", "./clientSubject.ts", [prefill, "main", decode])
    }
    children.push(servers.direct, servers.disaggregated, clients.direct, clients.disaggregated)
    const urls = { direct: (await servers.direct.ready()).url as string, disaggregated: (await servers.disaggregated.ready()).url as string }
    const names = ["direct", "disaggregated"] as const
    // Warm-up: both kinds, until the JIT settles. The same-load rate: half the slower server's
    // warm-up throughput, rounded down to 50 requests/s.
    const warm: Array<number> = []
    for (const name of names) {
      warm.push((await load(servers[name], urls[name], CONNECTIONS, false, 2)).perSecond)
      await load(servers[name], urls[name], 16, true, 2)
      await clients[name].ready()
      await clients[name].call("run", { kind: "plain", concurrency: CONNECTIONS, millis: 2_000 })
    }
    const rate = Math.max(50, Math.floor(Math.min(...warm) / 2 / 50) * 50)
    const figures: Record<(typeof names)[number], Figures> = {
      direct: empty(),
      disaggregated: empty()
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const name of round % 2 === 0 ? names : [...names].reverse()) {
        const result = await load(servers[name], urls[name], CONNECTIONS, false, SECONDS)
        figures[name].cpu.push(result.cpuUs / result.requests)
        figures[name].perSecond.push(result.perSecond)
        figures[name].p50.push(result.p50)
        const paced = await load(servers[name], urls[name], CONNECTIONS, false, SECONDS, false, rate)
        figures[name].cpuAtRate.push(paced.cpuUs / paced.requests)
        figures[name].ttft.push(await firstTokens(urls[name], TTFT_SAMPLES))
        const bare = await clients[name].call("run", { kind: "plain", concurrency: CONNECTIONS, millis: SECONDS * 1000 })
        figures[name].clientCpu.push(bare.cpuUs / bare.requests)
        figures[name].clientPerSecond.push(bare.requests / bare.seconds)
      }
    }
    // The last releases may still be on their way (a request's pin is released after its reply).
    let pins = await clusters.call("pins")
    for (let i = 0; i < 20 && pins.made !== pins.released; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      pins = await clusters.call("pins")
    }

    const m = (name: (typeof names)[number]) => ({
      cpu: median(figures[name].cpu),
      cpuAtRate: median(figures[name].cpuAtRate),
      perSecond: median(figures[name].perSecond),
      p50: median(figures[name].p50),
      ttft: median(figures[name].ttft),
      clientCpu: median(figures[name].clientCpu),
      clientPerSecond: median(figures[name].clientPerSecond)
    })
    const d = m("direct")
    const g = m("disaggregated")
    console.log(
      `disaggregated server${QUICK ? " (quick)" : ""}: chat completions of 64 tokens, Qwen3 tokenizer, instant testkit engines (main, ZeroMQ), ` +
        `coordinators in their own process; ${ROUNDS} round(s) of ${SECONDS} s at ${CONNECTIONS} connections; medians`
    )
    for (const [name, f] of [["direct", d], ["disaggregated", g]] as const) {
      console.log(
        `  ${name.padEnd(14)} at full load: ${fmt(f.perSecond).padStart(6)} req/s, p50 ${fmt(f.p50, 1)} ms, server CPU ${fmt(f.cpu).padStart(5)} µs/request; ` +
          `at ${rate} req/s: server CPU ${fmt(f.cpuAtRate).padStart(5)} µs/request; TTFT p50 (one stream at a time) ${fmt(f.ttft, 2)} ms`
      )
    }
    console.log(
      `  server CPU added by disaggregating (disaggregated - direct): ${fmt(g.cpuAtRate - d.cpuAtRate, 1)} µs/request at the same ${rate} req/s ` +
        `(target < 50); ${fmt(g.cpu - d.cpu, 1)} at full load (each at its own req/s)`
    )
    console.log(
      `  of which the client library's (the bare client, no HTTP, no text layer, ${CONNECTIONS} in flight, full load): ` +
        `direct ${fmt(d.clientCpu)} µs/request at ${fmt(d.clientPerSecond)} req/s, disaggregated ${fmt(g.clientCpu)} at ${fmt(g.clientPerSecond)}: ` +
        `added ${fmt(g.clientCpu - d.clientCpu, 1)} µs/request`
    )
    console.log(
      `  ratios disaggregated / direct: req/s ${fmt(g.perSecond / d.perSecond, 2)}, TTFT p50 ${fmt(g.ttft / d.ttft, 2)} (+${fmt(g.ttft - d.ttft, 2)} ms)`
    )
    console.log(
      `  prefill pins: ${pins.made} made, ${pins.released} released (${pins.foreign} foreign, ${pins.early} before the decode's first output)`
    )
  } finally {
    // The coordinators last: stopped first, they made the servers log that they lost them.
    for (const child of children.reverse()) await child.stop()
  }
}
