/**
 * Closing the client flushes: a control signal (fire-and-forget, nothing to wait for) sent just
 * before the client's scope closes still reaches the coordinator and its engines, and closing
 * stays prompt when the coordinator is gone. Over real ZeroMQ sockets on loopback, in this
 * process and in a program of its own that exits right after closing, as `mcore control` does.
 */
import { describe, expect, it } from "@effect/vitest"
import { TestCluster, TestSupport } from "@mcore-effect/testkit"
import { fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect, Exit, Schedule, Scope } from "effect"
import { InferenceClient } from "../src/index.ts"
import { withRegistry } from "./support/Cluster.ts"

/** Real elapsed milliseconds of an effect (the scope's close runs on real timers). */
const timed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const start = performance.now()
    return Effect.map(effect, (a) => [a, performance.now() - start] as const)
  })

const program = fileURLToPath(new URL("./support/signalThenClose.ts", import.meta.url))

/** What `support/signalThenClose.ts` reported, how it ended, and how long after `go` it exited. */
interface ProgramRun {
  readonly report: { readonly outcome: string; readonly closeMillis: number } | undefined
  readonly code: number | null
  readonly stderr: string
  readonly exitMillis: number
}

/** A bound on every wait for the program: exceeding it means something hung. */
const bounded = TestSupport.bounded("the program", "20 seconds")

/** Runs the program against a cluster, doing `beforeGo` once it is connected. */
const runProgram = <E, R>(cluster: TestCluster.Handle, beforeGo: Effect.Effect<void, E, R>) =>
  Effect.gen(function*() {
    const child = fork(program, [cluster.address, cluster.protocol], {
      execArgv: ["--conditions=source", "--import", "tsx"],
      // Its standard output is the client's log: a client closing while its coordinator goes
      // may warn of the lost coordinator, which a passing run does not print.
      stdio: ["ignore", "ignore", "pipe", "ipc"]
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
    let stderr = ""
    child.stderr!.on("data", (chunk) => stderr += String(chunk))
    let report: ProgramRun["report"] = undefined
    const connected = new Promise<void>((resolve) =>
      child.on("message", (message) => {
        if (message === "connected") resolve()
        else report = message as ProgramRun["report"]
      })
    )
    // "close", not "exit": by then standard error has been read to its end.
    const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)))
    yield* bounded(Effect.promise(() => connected))
    yield* beforeGo
    const goAt = performance.now()
    child.send("go")
    const code = yield* bounded(Effect.promise(() => exited))
    const run: ProgramRun = { report, code, stderr, exitMillis: performance.now() - goAt }
    return run
  })

/** Far above what closing takes, far below the one-second flush bound: exceeding it means closing waited. */
const PROMPT_MILLIS = 250

describe("closing the client", () => {
  it.live("a signal sent just before the scope closes reaches every engine, after a burst still in the queues", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 2 })
      // Thousands of signals then PAUSE, and the scope closes at once: without the flush, ZeroMQ
      // still held the tail of the burst (PAUSE with it) when the socket closed, and dropped it.
      const burst = 2_000
      const scope = yield* Scope.make()
      const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol }).pipe(Scope.provide(scope))
      for (let epoch = 1; epoch <= burst; epoch++) yield* client.setGenerationEpoch(epoch)
      yield* client.pauseEngines()
      const [, closeMillis] = yield* timed(Scope.close(scope, Exit.void))
      for (const engine of cluster.engines) {
        const snapshot = yield* engine.waitFor("the burst and PAUSE", (s) => s.signals.at(-1) === "PAUSE", {
          timeoutMillis: 5_000
        })
        expect(snapshot.generationEpoch).toBe(burst)
        expect(snapshot.signals.filter((s) => s === "SET_GENERATION_EPOCH")).toHaveLength(burst)
      }
      expect((yield* cluster.coordinator.snapshot).state).toBe("PAUSED")
      // Whatever is left to flush, closing waits for it one second at most.
      expect(closeMillis).toBeLessThan(1_500)
    }).pipe(withRegistry), 30_000)

  it.live("closing is prompt when the coordinator is gone, noticed or not", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const connect = Effect.gen(function*() {
        const scope = yield* Scope.make()
        const client = yield* InferenceClient.make({
          address: cluster.address,
          protocol: cluster.protocol,
          heartbeatInterval: 50,
          heartbeatTimeout: 300
        }).pipe(Scope.provide(scope))
        return { client, close: timed(Scope.close(scope, Exit.void)) }
      })

      // Gone and noticed: the client refuses the signal, nothing is queued, nothing is waited for.
      const noticed = yield* connect
      yield* cluster.coordinator.crash
      const refused = yield* Effect.flip(
        noticed.client.pauseEngines().pipe(Effect.repeat({ schedule: Schedule.spaced("10 millis"), times: 500 }))
      )
      expect(refused.reason._tag).toBe("CoordinatorLost")
      const [, noticedMillis] = yield* noticed.close
      expect(noticedMillis).toBeLessThan(PROMPT_MILLIS)

      // Gone a moment ago: the signal is queued for a coordinator that will never read it.
      yield* cluster.coordinator.restart
      const unnoticed = yield* connect
      yield* cluster.coordinator.crash
      yield* unnoticed.client.pauseEngines()
      const [, unnoticedMillis] = yield* unnoticed.close
      expect(unnoticedMillis).toBeLessThan(PROMPT_MILLIS)
    }).pipe(withRegistry), 30_000)

  it.live("a program that sends a signal and closes at once delivers it and exits by itself, at once", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 2 })
      const run = yield* runProgram(cluster, Effect.void)
      expect(run.report?.outcome).toBe("sent")
      expect(run.code).toBe(0)
      // No "waiting for queued ZeroMQ messages" from zeromq.js at exit: nothing was left queued.
      expect(run.stderr).toBe("")
      for (const engine of cluster.engines) {
        yield* engine.waitFor("PAUSE", (s) => s.signals.includes("PAUSE"), { timeoutMillis: 5_000 })
      }
      expect(run.report!.closeMillis).toBeLessThan(PROMPT_MILLIS)
      // Sending, closing and the process's own teardown, with room for a loaded machine.
      expect(run.exitMillis).toBeLessThan(2_000)
    }).pipe(withRegistry), 60_000)

  it.live("a program whose coordinator is gone still exits by itself, within the flush bound", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1 })
      const run = yield* runProgram(cluster, cluster.coordinator.crash)
      // Either the client saw the loss first (refused), or it queued PAUSE for nobody (sent).
      expect(["sent", "CoordinatorLost"]).toContain(run.report?.outcome)
      expect(run.code).toBe(0)
      expect(run.report!.closeMillis).toBeLessThan(PROMPT_MILLIS)
      // At most the one-second bound of what ZeroMQ may hold at exit, plus the process's teardown.
      expect(run.exitMillis).toBeLessThan(3_000)
    }).pipe(withRegistry), 60_000)
})
