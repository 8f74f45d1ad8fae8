/**
 * `pnpm bench soak`: a long run through one client, against the testkit's coordinator and
 * engines in the same process, with a mixed workload (single replies, streams read to the end,
 * streams dropped after their first tokens, submissions interrupted in flight, per-request
 * deadlines that fire). It reports the heap (after a full GC) once warmed up and at the end, and
 * what the process still holds once the client's scope has closed; the process must then exit by
 * itself.
 *
 * Run as a program of its own (`node --expose-gc --conditions=source --import tsx soak.ts
 * <requests>`): prints its report as one JSON line, and sends it to a parent over IPC when there
 * is one (the hardening test runs a short soak this way). `run()` (the bench) runs 1,000,000
 * requests in a child process (`--quick`: 50,000).
 */
import { fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { TestCluster } from "@mcore-effect/testkit"
import { Effect, Metric, References, Stream } from "effect"
import { ClientMetrics, InferenceClient } from "../src/index.ts"

/**
 * What a soak reports.
 */
export interface Report {
  readonly requests: number
  readonly seconds: number
  readonly outcomes: Record<Kind, number>
  /** heapUsed after a full GC, once warmed up (after the first 5% of requests, and at least 4,000). */
  readonly heapStart: number
  /** heapUsed after a full GC, after the last request. */
  readonly heapEnd: number
  readonly pendingAtEnd: number
  readonly counters: {
    readonly submitted: number
    readonly completed: number
    readonly aborted: number
    readonly failed: number
    readonly inFlight: number
  }
  /**
   * `process.getActiveResourcesInfo()` once the client's scope has closed (timers, sockets, ...),
   * the IPC channel to a parent excepted.
   */
  readonly resourcesAfterClose: ReadonlyArray<string>
}

type Kind = "submit" | "stream" | "streamDropped" | "interrupted" | "deadline"

const CONCURRENCY = 256

/** The kind of request `i` is: mostly plain submissions, some of each of the rest. */
const kindOf = (i: number): Kind => {
  const r = (i * 2654435761) % 100
  return r < 60 ? "submit" : r < 75 ? "stream" : r < 85 ? "streamDropped" : r < 93 ? "interrupted" : "deadline"
}

const gc = (): number => {
  const collect = (globalThis as { gc?: () => void }).gc
  if (collect === undefined) throw new Error("the soak needs --expose-gc")
  collect()
  collect()
  return process.memoryUsage().heapUsed
}

const count = (metric: Metric.Metric<number, Metric.CounterState<number>>) =>
  Effect.map(Metric.value(metric), (s) => s.count)

/** Runs `requests` requests through one client; the cluster and client live in `Effect.scoped`. */
export const soak = (requests: number): Effect.Effect<Omit<Report, "resourcesAfterClose">, unknown> =>
  Effect.gen(function*() {
    const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 0 }, coordinator: { recordLimit: 0 } })
    const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol })
    const outcomes: Record<Kind, number> = { submit: 0, stream: 0, streamDropped: 0, interrupted: 0, deadline: 0 }
    const one = (i: number): Effect.Effect<void> => {
      const prompt = [1 + (i % 500), 2 + (i % 7), 3]
      const params = { num_tokens_to_generate: 2 + (i % 6) }
      const kind = kindOf(i)
      const request = kind === "submit"
        ? client.submit(prompt, params)
        : kind === "stream"
        ? Stream.runDrain(client.stream(prompt, params))
        : kind === "streamDropped"
        ? Stream.runDrain(Stream.take(client.stream(prompt, { num_tokens_to_generate: 20 }), 1))
        : kind === "interrupted"
        ? Effect.timeoutOption(client.submit(prompt, { num_tokens_to_generate: 50 }), 1)
        : client.submit(prompt, { num_tokens_to_generate: 50 }, { timeout: 1 })
      return request.pipe(
        Effect.tap(() => Effect.sync(() => outcomes[kind]++)),
        Effect.catchIf((e) => kind === "deadline" && e.reason._tag === "RequestTimeout", () => Effect.sync(() => outcomes[kind]++)),
        Effect.orDie,
        Effect.asVoid
      )
    }
    let next = 0
    const worker = (until: number) =>
      Effect.whileLoop({
        while: () => next < until,
        body: () => one(next++),
        step: () => {}
      })
    const phase = (until: number) =>
      Effect.all(Array.from({ length: CONCURRENCY }, () => worker(until)), { concurrency: "unbounded", discard: true })

    // The heap fills for the first few thousand requests whatever the run's length (caches, the
    // JIT, the coordinator's bounded logs): measured from after 500 of 10,000 it grew 8.6-10.4%,
    // from after 4,000 of 80,000 2.2%, to the same ~37 MB at the end. So the warm-up is at least
    // 4,000 requests (at most half the run), and growth past it is what the run has to show.
    const warmup = Math.min(Math.floor(requests / 2), Math.max(CONCURRENCY, Math.floor(requests / 20), 4_000))
    const started = performance.now()
    yield* phase(warmup)
    yield* cluster.coordinator.waitFor("the warm-up to settle", (s) => s.inFlight === 0)
    const heapStart = gc()
    yield* phase(requests)
    yield* cluster.coordinator.waitFor("the last requests to settle", (s) => s.inFlight === 0)
    const seconds = (performance.now() - started) / 1000
    const heapEnd = gc()
    return {
      requests,
      seconds,
      outcomes,
      heapStart,
      heapEnd,
      pendingAtEnd: yield* client.pendingCount,
      counters: {
        submitted: yield* count(ClientMetrics.submitted),
        completed: yield* count(ClientMetrics.completed),
        aborted: yield* count(ClientMetrics.aborted),
        failed: yield* count(ClientMetrics.failed),
        inFlight: (yield* Metric.value(ClientMetrics.inFlight)).value
      }
    }
  }).pipe(
    Effect.scoped,
    Effect.provideService(Metric.MetricRegistry, new Map()),
    Effect.provideService(References.MinimumLogLevel, "Error")
  )

const self = fileURLToPath(import.meta.url)

/** The bench: a full soak in a child process, printed. */
export const run = async (): Promise<Report> => {
  const quick = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1"
  const requests = quick ? 50_000 : 1_000_000
  console.log(`soak: ${requests.toLocaleString("en")} requests through one client (child process)`)
  const child = fork(self, [String(requests)], {
    execArgv: ["--expose-gc", "--conditions=source", "--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  let report: Report | undefined
  child.on("message", (m) => (report = m as Report))
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve))
  if (report === undefined || code !== 0) throw new Error(`the soak process failed (exit ${code})`)
  const growth = (report.heapEnd - report.heapStart) / report.heapStart
  console.log(
    `soak: ${(report.requests / report.seconds).toFixed(0)} req/s over ${report.seconds.toFixed(1)} s; ` +
      `heap ${(report.heapStart / 1e6).toFixed(1)} MB -> ${(report.heapEnd / 1e6).toFixed(1)} MB ` +
      `(${(growth * 100).toFixed(1)}%); outcomes ${JSON.stringify(report.outcomes)}; ` +
      `left after close: ${JSON.stringify(report.resourcesAfterClose)}; exited by itself`
  )
  return report
}

if (process.argv[1] === self) {
  const requests = Number(process.argv[2] ?? 20_000)
  const report = await Effect.runPromise(soak(requests))
  const resources = process.getActiveResourcesInfo()
  // The IPC channel to a parent is a pipe of its own; it does not keep the process alive.
  const ipc = resources.indexOf("PipeWrap")
  if (process.channel !== undefined && ipc >= 0) resources.splice(ipc, 1)
  const full: Report = { ...report, resourcesAfterClose: resources }
  console.log(JSON.stringify(full))
  process.send?.(full)
  // Nothing else: the process must exit on its own now.
}
