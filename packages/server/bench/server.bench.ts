/**
 * `pnpm bench server`: the OpenAI-compatible server against the bare client doing the same
 * requests, every figure measured in the same run, on the workload Megatron's own server was
 * measured on (a chat completion of 64 tokens, Qwen3's tokenizer and template, a coordinator
 * answering at once).
 *
 * Separate processes, so that each figure belongs to one of them: the coordinator stand-in
 * (`standIn.ts`), the server (`serverSubject.ts`, measuring its own CPU time and heap), the bare
 * client (`clientSubject.ts`), and this one, the load generator (autocannon, over HTTP/1.1
 * keep-alive connections). Server and client take turns, so that noise from the rest of the
 * machine falls on both alike.
 *
 * Measured (medians of the rounds):
 * - non-streaming requests/s at 64 and 256 connections; latency p50 / p99 and what the server
 *   adds to the bare client's at the same concurrency; server CPU per request and what it adds;
 * - streamed tokens/s, one stream at a time and 64 at once; server CPU per streamed token (a
 *   chunk each) and what it adds over the client's stream; time to first token p50;
 * - heap per open stream: 1,000 streams held open (the stand-in answers nothing), the server's
 *   heap after a full GC against before;
 * - requests/s with `workers: 2` against one process (64 connections);
 * - at 64 connections, the same figures when every request's user message is distinct (so no
 *   cache of rendered chats or tokenized pieces answers for it: the real per-request cost), and
 *   the floors (`floorSubject.ts`), each reading the same requests and answering the server's own
 *   response bytes, their CPU per request measured the same way: a bare `node:http` server (no
 *   Effect), and Effect's HTTP stack alone (`HttpRouter` on `NodeHttpServer`, nothing of ours):
 *   what the stack the server is built on costs before any of the server's own work.
 *
 * `--quick` (or `BENCH_QUICK=1`) runs 1 round of 3 s per figure instead of 3 of 8 s.
 * `--non-streaming` runs the non-streaming rows only (and their context rows), `--streaming` only
 * the streaming rows and the heap per open stream, for iterating on one path. `--heap` runs only
 * the heap diagnostic (`heap.ts`): where an open stream's heap goes, by owner.
 */
import { chatBody, GENERATED_TOKENS } from "./fixture.ts"
import { type Child, closeStreams, firstTokens, fmt, load, median, openStreams, type Reply, spawn, startStandIn } from "./harness.ts"

const QUICK = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1"
const ROUNDS = QUICK ? 1 : 3
const SECONDS = QUICK ? 3 : 8
const OPEN_STREAMS = 1_000
const NON_STREAMING_ONLY = process.argv.includes("--non-streaming")
const STREAMING_ONLY = process.argv.includes("--streaming")

/** Heap per open stream: `count` streams whose replies never come, the server's heap before and with them. */
const heapPerStream = async (server: Child, standIn: Child, url: string, count: number): Promise<number> => {
  await standIn.call("hold")
  const before = (await server.call("heap")).heapUsed as number
  const controllers = await openStreams(url, count)
  const during = (await server.call("heap")).heapUsed as number
  if (controllers !== undefined) await closeStreams(controllers)
  await standIn.call("release")
  return controllers !== undefined ? (during - before) / count : Number.NaN
}

export const run = async (): Promise<void> => {
  if (process.argv.includes("--heap")) return (await import("./heap.ts")).run()
  console.log(`server benchmark${QUICK ? " (quick)" : ""}: chat completions of ${GENERATED_TOKENS} tokens, Qwen3 tokenizer and template`)
  const { standIn, port } = await startStandIn()
  const address = `tcp://127.0.0.1:${port}`
  const server = spawn("server", "./serverSubject.ts", [address, "1"])
  const client = spawn("bare client", "./clientSubject.ts", [address])
  const floor = spawn("bare node:http", "./floorSubject.ts", ["node", "answer"])
  const effectFloor = spawn("Effect's HTTP floor", "./floorSubject.ts", ["effect", "answer"])
  const children = [standIn, server, client, floor, effectFloor]
  try {
    const { url } = await server.ready()
    await client.ready()
    // The floor answers with the server's own response to the benchmark's request.
    const answer = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: chatBody(false)
    }).then((response) => response.text())
    floor.process.send({ op: "init", body: answer })
    effectFloor.process.send({ op: "init", body: answer })
    const floorUrl = (await floor.ready()).url as string
    const effectFloorUrl = (await effectFloor.ready()).url as string
    // Warm-up: both paths, both kinds, until the JIT settles.
    await load(server, url, 64, false, 2)
    await load(server, url, 64, false, 2, true)
    await load(floor, floorUrl, 64, false, 2)
    await load(effectFloor, effectFloorUrl, 64, false, 2)
    if (!NON_STREAMING_ONLY) await load(server, url, 16, true, 2)
    await client.call("run", { kind: "plain", concurrency: 64, millis: 2_000 })
    if (!NON_STREAMING_ONLY) await client.call("run", { kind: "stream", concurrency: 16, millis: 2_000 })

    const rows: Array<string> = []
    const context: Array<string> = []
    for (const connections of STREAMING_ONLY ? [] : [64, 256]) {
      const s: Array<Awaited<ReturnType<typeof load>>> = []
      const c: Array<Reply> = []
      const d: Array<Awaited<ReturnType<typeof load>>> = []
      const f: Array<Awaited<ReturnType<typeof load>>> = []
      const e: Array<Awaited<ReturnType<typeof load>>> = []
      for (let round = 0; round < ROUNDS; round++) {
        s.push(await load(server, url, connections, false, SECONDS))
        c.push(await client.call("run", { kind: "plain", concurrency: connections, millis: SECONDS * 1000 }))
        if (connections === 64) {
          d.push(await load(server, url, connections, false, SECONDS, true))
          f.push(await load(floor, floorUrl, connections, false, SECONDS))
          e.push(await load(effectFloor, effectFloorUrl, connections, false, SECONDS))
        }
      }
      const serverRps = median(s.map((r) => r.perSecond))
      const clientRps = median(c.map((r) => r.requests / r.seconds))
      const serverCpu = median(s.map((r) => r.cpuUs / r.requests))
      const clientCpu = median(c.map((r) => r.cpuUs / r.requests))
      const p50 = median(s.map((r) => r.p50))
      const p99 = median(s.map((r) => r.p99))
      const clientP50 = median(c.map((r) => r.p50Ms))
      const clientP99 = median(c.map((r) => r.p99Ms))
      rows.push(
        `non-streaming, ${connections} connections: ${fmt(serverRps)} req/s (bare client ${fmt(clientRps)}, ratio ${fmt(serverRps / clientRps, 2)}); ` +
          `p50 ${fmt(p50, 1)} ms / p99 ${fmt(p99, 1)} ms (bare client ${fmt(clientP50, 1)} / ${fmt(clientP99, 1)}: added ${fmt(p50 - clientP50, 1)} / ${fmt(p99 - clientP99, 1)} ms); ` +
          `server CPU ${fmt(serverCpu)} µs/request (bare client ${fmt(clientCpu)}: added ${fmt(serverCpu - clientCpu)} µs, target <= 100)`
      )
      if (connections === 64) {
        const distinctCpu = median(d.map((r) => r.cpuUs / r.requests))
        const floorCpu = median(f.map((r) => r.cpuUs / r.requests))
        const effectCpu = median(e.map((r) => r.cpuUs / r.requests))
        context.push(
          `non-streaming, 64 connections, every user message distinct (no cache hit): ${fmt(median(d.map((r) => r.perSecond)))} req/s; ` +
            `p50 ${fmt(median(d.map((r) => r.p50)), 1)} ms; server CPU ${fmt(distinctCpu)} µs/request (bare client ${fmt(clientCpu)}: added ${fmt(distinctCpu - clientCpu)} µs, target <= 100)`,
          `context, 64 connections: bare node:http (no Effect) reading the same requests and answering the same bytes: ` +
            `${fmt(median(f.map((r) => r.perSecond)))} req/s, CPU ${fmt(floorCpu)} µs/request ` +
            `(the server's CPU over this floor: ${fmt(serverCpu - floorCpu)} µs, ${fmt(distinctCpu - floorCpu)} with distinct messages)`,
          `context, 64 connections: Effect's HTTP floor (HttpRouter on NodeHttpServer, nothing of ours) reading the same requests and answering the same bytes: ` +
            `${fmt(median(e.map((r) => r.perSecond)))} req/s, CPU ${fmt(effectCpu)} µs/request ` +
            `(${fmt(effectCpu - floorCpu)} over bare node:http; the server's CPU over this floor: ${fmt(serverCpu - effectCpu)} µs, ${fmt(distinctCpu - effectCpu)} with distinct messages)`
        )
      }
    }
    if (NON_STREAMING_ONLY) {
      for (const row of [...rows, ...context]) console.log(`  ${row}`)
      return
    }
    for (const connections of [1, 64]) {
      const s: Array<Awaited<ReturnType<typeof load>>> = []
      const c: Array<Reply> = []
      for (let round = 0; round < ROUNDS; round++) {
        s.push(await load(server, url, connections, true, SECONDS))
        c.push(await client.call("run", { kind: "stream", concurrency: connections, millis: SECONDS * 1000 }))
      }
      const serverTps = median(s.map((r) => r.perSecond * GENERATED_TOKENS))
      const clientTps = median(c.map((r) => (r.requests / r.seconds) * GENERATED_TOKENS))
      const serverCpu = median(s.map((r) => r.cpuUs / (r.requests * GENERATED_TOKENS)))
      const clientCpu = median(c.map((r) => r.cpuUs / (r.requests * GENERATED_TOKENS)))
      rows.push(
        `streaming, ${connections} at once: ${fmt(serverTps)} tokens/s (bare client ${fmt(clientTps)}, ratio ${fmt(serverTps / clientTps, 2)}); ` +
          `server CPU ${fmt(serverCpu, 1)} µs/token (bare client ${fmt(clientCpu, 1)}: added ${fmt(serverCpu - clientCpu, 1)} µs, target <= 10)`
      )
      if (connections === 1) {
        const ttft = await firstTokens(url, QUICK ? 50 : 200)
        rows.push(`time to first token p50, one stream at a time: ${fmt(ttft, 2)} ms (bare client ${fmt(median(c.map((r) => r.ttftP50Ms)), 2)} ms)`)
      }
    }
    const heap = await heapPerStream(server, standIn, url, OPEN_STREAMS)
    rows.push(`heap per open stream (${OPEN_STREAMS} open): ${fmt(heap)} B (target <= 16,384)`)
    await server.stop()
    if (STREAMING_ONLY) {
      for (const row of rows) console.log(`  ${row}`)
      return
    }

    const workers = spawn("server, 2 workers", "./serverSubject.ts", [address, "2"])
    children.push(workers)
    const two = await workers.ready()
    await load(workers, two.url, 64, false, 2)
    const single: Array<number> = []
    const double: Array<number> = []
    const one = spawn("server, 1 process", "./serverSubject.ts", [address, "1"])
    children.push(one)
    const oneUrl = (await one.ready()).url
    await load(one, oneUrl, 64, false, 2)
    for (let round = 0; round < ROUNDS; round++) {
      single.push((await load(one, oneUrl, 64, false, SECONDS)).perSecond)
      double.push((await load(workers, two.url, 64, false, SECONDS)).perSecond)
    }
    rows.push(
      `workers, 64 connections: 1 process ${fmt(median(single))} req/s, 2 workers ${fmt(median(double))} req/s (x${fmt(median(double) / median(single), 2)}; ${
        (await import("node:os")).availableParallelism()
      } cores, shared with the stand-in and the load generator)`
    )
    // The context rows last, after the rows the benchmark always printed.
    for (const row of [...rows, ...context]) console.log(`  ${row}`)
  } finally {
    // The stand-in last: stopped before the servers, it made each of them log that it lost the coordinator.
    for (const child of children.reverse()) await child.stop()
  }
}
