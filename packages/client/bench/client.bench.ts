/**
 * `pnpm bench client`: the `InferenceClient` against a plain zeromq.js + msgpackr baseline, both
 * talking to the same coordinator stand-in, every figure a ratio measured in the same run.
 *
 * Separate processes, so that each figure belongs to one of them: the stand-in (`standIn.ts`, a
 * bare ROUTER answering at once with a pre-encoded reply), and one subject process per
 * implementation (`subject.ts`), each measuring its own CPU time and heap: the baseline, the
 * client fanning out with `submit` (a fiber per request, as `Effect.forEach` does), and the client
 * fanning out with `submitAll` (one stream), and the client with `submit` in Megatron-LM main's
 * dialect (one frame each way, answered so by the stand-in). The subjects take turns (order reversed every
 * round) so that noise from the rest of the machine falls on all alike.
 *
 * Measured, for each subject:
 * - burst throughput: `burst` requests in flight at once (100,000), req/s; median of the rounds;
 * - CPU per request: the subject process's `process.cpuUsage()` (user + system) over a burst,
 *   divided by its size; median of the rounds;
 * - round trip p50 / p99: requests one at a time, after a warm-up;
 * - heap per pending request: heapUsed with `pending` requests held by the stand-in, minus
 *   heapUsed before submitting them (both after a full GC), divided by the count;
 * - heap growth: heapUsed (after GC) once every round has run (1,000,000 completed requests)
 *   against heapUsed (after GC) before the first round.
 *
 * `--quick` (or `BENCH_QUICK=1`) runs a short version with smaller bursts and fewer rounds.
 */
import { type ChildProcess, fork } from "node:child_process"
import { mkdirSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Msgpack } from "@mcore-effect/protocol"
import { GENERATED_TOKENS, PROMPT_TOKENS, replyMap } from "./fixture.ts"
import { Timing } from "@mcore-effect/testkit"

const { median } = Timing

interface Plan {
  readonly warmupBurst: number
  readonly warmupBursts: number
  readonly warmupSequential: number
  readonly burst: number
  readonly rounds: number
  readonly sequential: number
  readonly pending: number
}

const FULL: Plan = {
  warmupBurst: 20_000,
  warmupBursts: 2,
  warmupSequential: 500,
  burst: 100_000,
  rounds: 10,
  sequential: 2_000,
  pending: 100_000
}

const QUICK: Plan = {
  // Enough for the JIT to settle: with less, the first measured rounds still pay for compiling.
  warmupBurst: 10_000,
  warmupBursts: 2,
  warmupSequential: 200,
  burst: 20_000,
  rounds: 3,
  // Not fewer: the p99 of 500 is the 5th slowest, and one such run put the client's p99 at 2.44x
  // the bare loop's where 2,000 alternating put it at 1.01-1.69x (median 1.09x, 8 runs, quiet).
  sequential: 2_000,
  pending: 20_000
}

const TARGETS = {
  throughput: 0.9,
  cpuPerRequest: 1.2,
  p50: 1.2,
  heapPerPendingBytes: 1024,
  heapGrowthPercent: 10
} as const

// ---------------------------------------------------------------------------------------------
// Child processes
// ---------------------------------------------------------------------------------------------

type Reply = Record<string, unknown>

class Child {
  private nextId = 0
  private readonly waiting = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>()
  private readonly unsolicited: Array<(r: Reply) => void> = []
  private exited: Error | undefined

  constructor(readonly name: string, readonly process: ChildProcess) {
    process.on("message", (message: Reply) => {
      const id = message.id
      if (typeof id === "number") {
        const entry = this.waiting.get(id)
        this.waiting.delete(id)
        if (typeof message.error === "string") entry?.reject(new Error(`${name}: ${message.error}`))
        else entry?.resolve(message)
      } else {
        this.unsolicited.shift()?.(message)
      }
    })
    process.on("exit", (code, signal) => {
      this.exited = new Error(`${name} exited (${signal ?? code}) before answering`)
      for (const entry of this.waiting.values()) entry.reject(this.exited)
      this.waiting.clear()
    })
  }

  /** The next message that answers no command (the child's ready / port report). */
  next(): Promise<Reply> {
    return new Promise((resolve, reject) => {
      if (this.exited !== undefined) return reject(this.exited)
      this.unsolicited.push(resolve)
      this.process.once("exit", () => reject(new Error(`${this.name} exited during start-up`)))
    })
  }

  call(op: string, fields: Record<string, unknown> = {}): Promise<Reply> {
    return new Promise((resolve, reject) => {
      if (this.exited !== undefined) return reject(this.exited)
      const id = this.nextId++
      this.waiting.set(id, { resolve, reject })
      this.process.send({ id, op, ...fields })
    })
  }

  send(message: Record<string, unknown>): void {
    this.process.send(message)
  }

  async stop(): Promise<void> {
    if (this.exited !== undefined || this.process.exitCode !== null) return
    const gone = new Promise<void>((resolve) => this.process.once("exit", () => resolve()))
    if (this.process.connected) this.process.disconnect()
    const timer = setTimeout(() => this.process.kill(), 2_000)
    await gone
    clearTimeout(timer)
  }
}

/** Node flags for the children: the parent's (tsx's loader, the source condition) plus gc. */
const childExecArgv = (): Array<string> => {
  const flags = process.execArgv.filter((flag) => flag !== "--expose-gc")
  if (!flags.some((flag) => flag.startsWith("--conditions"))) flags.unshift("--conditions=source")
  return [...flags, "--expose-gc"]
}

const spawn = (name: string, file: string, args: ReadonlyArray<string>): Child =>
  new Child(
    name,
    fork(fileURLToPath(new URL(file, import.meta.url)), [...args], {
      execArgv: childExecArgv(),
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
  )

const startStandIn = async (): Promise<{ readonly child: Child; readonly address: string }> => {
  const child = spawn("coordinator stand-in", "./standIn.ts", [])
  const body = Msgpack.encode(replyMap())
  const ack = Msgpack.encode([1])
  const ready = child.next()
  child.send({
    op: "init",
    body: Buffer.from(body).toString("base64"),
    ack: Buffer.from(ack).toString("base64")
  })
  const { port } = await ready
  return { child, address: `tcp://127.0.0.1:${port}` }
}

/** The plain baseline; the client fanning out with `submit` in a fiber each; with `submitAll`. */
type SubjectName = "baseline" | "client" | "batch" | "main"

interface SubjectProcess {
  readonly name: SubjectName
  readonly child: Child
  readonly unavailable: string | undefined
}

const startSubject = async (name: SubjectName, address: string): Promise<SubjectProcess> => {
  const child = spawn(name, "./subject.ts", [name, address])
  const ready = await child.next()
  const unavailable = typeof ready.unavailable === "string" ? ready.unavailable : undefined
  if (unavailable !== undefined) await child.stop()
  return { name, child, unavailable }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// ---------------------------------------------------------------------------------------------
// Measurements
// ---------------------------------------------------------------------------------------------

interface Figures {
  throughputs: Array<number>
  cpuPerRequestUs: Array<number>
  standInCpuPerRequestUs: Array<number>
  roundTripsMs: Array<number>
  heapStart: number
  heapEnd: number
  completedInWindow: number
  heapPerPendingBytes: number
}

const emptyFigures = (): Figures => ({
  throughputs: [],
  cpuPerRequestUs: [],
  standInCpuPerRequestUs: [],
  roundTripsMs: [],
  heapStart: 0,
  heapEnd: 0,
  completedInWindow: 0,
  heapPerPendingBytes: 0
})

const standInCpu = async (standIn: Child): Promise<number> => (await standIn.call("cpu")).cpuUs as number

const burst = async (subject: SubjectProcess, standIn: Child, n: number, figures?: Figures) => {
  const standInBefore = await standInCpu(standIn)
  const { wallMs, cpuUs } = (await subject.child.call("burst", { n })) as { wallMs: number; cpuUs: number }
  const standInUs = (await standInCpu(standIn)) - standInBefore
  if (figures !== undefined) {
    figures.throughputs.push(n / (wallMs / 1000))
    figures.cpuPerRequestUs.push(cpuUs / n)
    figures.standInCpuPerRequestUs.push(standInUs / n)
    figures.completedInWindow += n
  }
  return { throughput: n / (wallMs / 1000), cpuPerRequestUs: cpuUs / n }
}

const heapPerPending = async (subject: SubjectProcess, standIn: Child, n: number): Promise<number> => {
  await standIn.call("hold")
  try {
    const { before } = (await subject.child.call("fire", { n })) as { before: number }
    const deadline = Date.now() + 120_000
    for (;;) {
      const { held } = (await standIn.call("count")) as { held: number }
      if (held >= n) break
      if (Date.now() > deadline) throw new Error(`only ${held} of ${n} requests reached the stand-in`)
      await sleep(20)
    }
    const { heapUsed } = (await subject.child.call("settle")) as { heapUsed: number }
    return (heapUsed - before) / n
  } finally {
    await standIn.call("release")
    await subject.child.call("drain")
  }
}


/** Nearest-rank percentile. */
const percentile = (xs: ReadonlyArray<number>, p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

const fmt = (x: number, digits = 0): string =>
  Number.isFinite(x) ? x.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits }) : "n/a"

const pct = (x: number): string => (Number.isFinite(x) ? `${x >= 0 ? "+" : ""}${x.toFixed(1)}%` : "n/a")

interface Row {
  readonly label: string
  readonly baseline: string
  readonly client: string
  readonly ratio: string
  readonly target: string
  readonly verdict: string
}

const verdict = (ok: boolean | undefined): string => (ok === undefined ? "n/a" : ok ? "met" : "NOT MET")

const table = (rows: ReadonlyArray<Row>, clientLabel: string): string => {
  const header: Row = {
    label: "",
    baseline: "baseline",
    client: clientLabel,
    ratio: `${clientLabel}/base`,
    target: "target",
    verdict: ""
  }
  const all = [header, ...rows]
  const width = (key: keyof Row) => Math.max(...all.map((row) => row[key].length))
  const w = {
    label: width("label"),
    baseline: width("baseline"),
    client: width("client"),
    ratio: width("ratio"),
    target: width("target")
  }
  const line = (row: Row) =>
    [
      row.label.padEnd(w.label),
      row.baseline.padStart(w.baseline),
      row.client.padStart(w.client),
      row.ratio.padStart(w.ratio),
      row.target.padEnd(w.target),
      row.verdict
    ].join("   ").trimEnd()
  const rule = "-".repeat(line(header).length + 8)
  return [line(header), rule, ...rows.map(line)].join("\n")
}

interface Summary {
  readonly throughput: number
  readonly cpuPerRequestUs: number
  readonly standInCpuPerRequestUs: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly heapPerPendingBytes: number
  readonly heapGrowthPercent: number
  readonly heapStart: number
  readonly heapEnd: number
  readonly completedInWindow: number
}

const summarize = (f: Figures): Summary => ({
  throughput: median(f.throughputs),
  cpuPerRequestUs: median(f.cpuPerRequestUs),
  standInCpuPerRequestUs: median(f.standInCpuPerRequestUs),
  p50Ms: percentile(f.roundTripsMs, 50),
  p99Ms: percentile(f.roundTripsMs, 99),
  heapPerPendingBytes: f.heapPerPendingBytes,
  heapGrowthPercent: ((f.heapEnd - f.heapStart) / f.heapStart) * 100,
  heapStart: f.heapStart,
  heapEnd: f.heapEnd,
  completedInWindow: f.completedInWindow
})

const report = (
  plan: Plan,
  b: Summary,
  c: Summary | undefined,
  clientNote: string | undefined,
  clientLabel: string
): string => {
  const ratio = (x: number, y: number | undefined) => (y === undefined ? Number.NaN : y / x)
  const r = {
    throughput: ratio(b.throughput, c?.throughput),
    cpu: ratio(b.cpuPerRequestUs, c?.cpuPerRequestUs),
    p50: ratio(b.p50Ms, c?.p50Ms),
    p99: ratio(b.p99Ms, c?.p99Ms),
    heapPending: ratio(b.heapPerPendingBytes, c?.heapPerPendingBytes)
  }
  const known = c !== undefined
  const x = (v: number) => (Number.isFinite(v) ? `${v.toFixed(2)}x` : "n/a")
  const rows: Array<Row> = [
    {
      label: `burst throughput, ${fmt(plan.burst)} in flight (req/s)`,
      baseline: fmt(b.throughput),
      client: known ? fmt(c.throughput) : "n/a",
      ratio: x(r.throughput),
      target: `>= ${TARGETS.throughput}x`,
      verdict: verdict(known ? r.throughput >= TARGETS.throughput : undefined)
    },
    {
      label: "CPU per request, own process (µs)",
      baseline: fmt(b.cpuPerRequestUs, 1),
      client: known ? fmt(c.cpuPerRequestUs, 1) : "n/a",
      ratio: x(r.cpu),
      target: `<= ${TARGETS.cpuPerRequest}x`,
      verdict: verdict(known ? r.cpu <= TARGETS.cpuPerRequest : undefined)
    },
    {
      label: "round trip, one at a time, p50 (ms)",
      baseline: fmt(b.p50Ms, 3),
      client: known ? fmt(c.p50Ms, 3) : "n/a",
      ratio: x(r.p50),
      target: `<= ${TARGETS.p50}x`,
      verdict: verdict(known && Number.isFinite(r.p50) ? r.p50 <= TARGETS.p50 : undefined)
    },
    {
      label: "round trip, one at a time, p99 (ms)",
      baseline: fmt(b.p99Ms, 3),
      client: known ? fmt(c.p99Ms, 3) : "n/a",
      ratio: x(r.p99),
      target: "(reported)",
      verdict: ""
    },
    {
      label: `heap per pending request, ${fmt(plan.pending)} in flight (B)`,
      baseline: fmt(b.heapPerPendingBytes),
      client: known ? fmt(c.heapPerPendingBytes) : "n/a",
      ratio: x(r.heapPending),
      target: `client < ${TARGETS.heapPerPendingBytes} B`,
      verdict: verdict(known ? c.heapPerPendingBytes < TARGETS.heapPerPendingBytes : undefined)
    },
    {
      label: `heap after ${fmt(b.completedInWindow)} completed vs start`,
      baseline: pct(b.heapGrowthPercent),
      client: known ? pct(c.heapGrowthPercent) : "n/a",
      ratio: "",
      target: `client < ${TARGETS.heapGrowthPercent}%`,
      verdict: verdict(known ? c.heapGrowthPercent < TARGETS.heapGrowthPercent : undefined)
    },
    {
      label: "stand-in CPU per reply during the burst (µs)",
      baseline: fmt(b.standInCpuPerRequestUs, 1),
      client: known ? fmt(c.standInCpuPerRequestUs, 1) : "n/a",
      ratio: "",
      target: "(context)",
      verdict: ""
    }
  ]
  const heapLine = (name: string, s: Summary) =>
    `  ${name}: heap ${fmt(s.heapStart / 2 ** 20, 1)} MiB -> ${fmt(s.heapEnd / 2 ** 20, 1)} MiB`
  return [
    table(rows, clientLabel),
    "",
    `Medians of ${plan.rounds} bursts of ${fmt(plan.burst)} (order alternating); round trips: ${fmt(plan.sequential)} ` +
    `sequential requests each after ${fmt(plan.warmupSequential)} of warm-up. Prompt ${PROMPT_TOKENS} tokens, ` +
    `reply ${GENERATED_TOKENS} generated tokens.`,
    heapLine("baseline", b),
    ...(c !== undefined ? [heapLine(clientLabel, c)] : []),
    ...(clientNote !== undefined ? [`client not measured: ${clientNote}`] : [])
  ].join("\n")
}

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

export const run = async (): Promise<{
  readonly baseline: Summary
  readonly client: Summary | undefined
  readonly batch: Summary | undefined
}> => {
  const quick = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1"
  const plan = quick ? QUICK : FULL
  const log = (line: string) => console.log(`[client bench] ${line}`)
  log(`${quick ? "quick" : "full"} run: stand-in, baseline and client (submit, submitAll) in separate processes`)

  const started: Array<Child> = []
  try {
    const standIn = await startStandIn()
    started.push(standIn.child)
    const all: Array<SubjectProcess> = []
    for (const name of ["baseline", "client", "batch", "main"] as const) {
      const subject = await startSubject(name, standIn.address)
      started.push(subject.child)
      if (subject.unavailable !== undefined) log(`${name} unavailable (${subject.unavailable})`)
      all.push(subject)
    }
    const subjects = all.filter((s) => s.unavailable === undefined)
    if (!subjects.some((s) => s.name === "baseline")) throw new Error("the baseline could not be measured")
    const figures = new Map(subjects.map((s) => [s.name, emptyFigures()]))
    // `batch` answers one-at-a-time round trips with the same `submit` loop as `client`: once is enough.
    const sequentialSubjects = subjects.filter((s) => s.name !== "batch")

    log("warm-up")
    for (let i = 0; i < plan.warmupBursts; i++) {
      for (const s of subjects) await burst(s, standIn.child, plan.warmupBurst)
    }
    for (const s of sequentialSubjects) await s.child.call("sequential", { n: plan.warmupSequential })

    for (const s of subjects) figures.get(s.name)!.heapStart = (await s.child.call("heap")).heapUsed as number
    for (let round = 0; round < plan.rounds; round++) {
      const order = round % 2 === 0 ? subjects : [...subjects].reverse()
      const parts: Array<string> = []
      for (const s of order) {
        const { cpuPerRequestUs, throughput } = await burst(s, standIn.child, plan.burst, figures.get(s.name))
        parts.push(`${s.name} ${fmt(throughput)} req/s ${fmt(cpuPerRequestUs, 1)} µs/req`)
      }
      log(`burst ${round + 1}/${plan.rounds}: ${parts.join(" | ")}`)
    }
    for (const s of subjects) figures.get(s.name)!.heapEnd = (await s.child.call("heap")).heapUsed as number

    log("round trips")
    // In slices of ~100, order alternating: the machine's slow spells (a 2-core VM shared with
    // other work) then fall on both subjects alike, not on one half each. Even so, p99 moves a
    // lot: two identical baseline processes measured so (2,000 round trips each) came out at
    // 0.70-2.65x of each other's p99 in 5 runs (load 6-8), 0.67-1.23x in 6 runs on a quiet
    // machine; see the README's performance section.
    const slices = Math.max(2, Math.round(plan.sequential / 100))
    for (let slice = 0; slice < slices; slice++) {
      const order = slice % 2 === 0 ? sequentialSubjects : [...sequentialSubjects].reverse()
      for (const s of order) {
        const n = Math.round(plan.sequential * (slice + 1) / slices) - Math.round(plan.sequential * slice / slices)
        const { times } = (await s.child.call("sequential", { n })) as { times: Array<number> }
        figures.get(s.name)!.roundTripsMs.push(...times)
      }
    }

    log("heap per pending request")
    for (const s of subjects) {
      figures.get(s.name)!.heapPerPendingBytes = await heapPerPending(s, standIn.child, plan.pending)
    }

    for (const s of subjects) await s.child.call("close")

    const summary = (name: SubjectName) => (figures.has(name) ? summarize(figures.get(name)!) : undefined)
    const note = (name: SubjectName) => all.find((s) => s.name === name)?.unavailable
    const b = summary("baseline")!
    const c = summary("client")
    const batch = summary("batch")
    const main = summary("main")
    console.log("")
    console.log("InferenceClient.submit, one fiber per request (Effect.forEach, unbounded):")
    console.log(report(plan, b, c, note("client"), "client"))
    console.log("")
    console.log("InferenceClient.submitAll, one stream for the burst (round trips: as above):")
    console.log(report(plan, b, batch, note("batch"), "submitAll"))
    console.log("")
    console.log("InferenceClient.submit in Megatron-LM main's dialect (one frame each way), as the first table:")
    console.log(report(plan, b, main, note("main"), "client (main)"))
    if (c !== undefined && main !== undefined) {
      console.log(
        `main's dialect against the reference's, same run: throughput ${(main.throughput / c.throughput).toFixed(2)}x, ` +
          `CPU per request ${(main.cpuPerRequestUs / c.cpuPerRequestUs).toFixed(2)}x`
      )
    }
    console.log("")
    try {
      mkdirSync(".bench", { recursive: true })
      writeFileSync(".bench/client.json", JSON.stringify({ plan, baseline: b, client: c, batch, main }, null, 2) + "\n")
    } catch {
      // The JSON copy is a convenience; the table above is the report.
    }
    return { baseline: b, client: c, batch }
  } finally {
    await Promise.all(started.map((child) => child.stop()))
  }
}
