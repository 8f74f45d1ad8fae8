/**
 * A short soak (the full one, 1,000,000 requests, is `pnpm bench soak`): one client, a mixed
 * workload of submissions, streams read to the end, streams dropped early, interruptions and
 * deadlines, in a process of its own. Everything is accounted for, the heap once warmed up and at
 * the end stays within 10%, and once the scope closes the process holds nothing and exits by
 * itself.
 */
import { describe, expect, it } from "@effect/vitest"
import { fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import * as Harness from "./support/Harness.ts"

/** What `bench/soak.ts` sends back (its `Report`; the bench is a project of its own). */
interface Report {
  readonly outcomes: Record<string, number>
  readonly heapStart: number
  readonly heapEnd: number
  readonly pendingAtEnd: number
  readonly counters: Record<"submitted" | "completed" | "aborted" | "failed" | "inFlight", number>
  readonly resourcesAfterClose: ReadonlyArray<string>
}

const REQUESTS = 10_000

describe("soak", () => {
  it.live(`${REQUESTS.toLocaleString("en")} mixed requests through one client: all accounted for, heap flat, the process exits by itself`, () =>
    Effect.gen(function*() {
      const program = fileURLToPath(new URL("../../bench/soak.ts", import.meta.url))
      const child = fork(program, [String(REQUESTS)], {
        execArgv: ["--expose-gc", "--conditions=source", "--import", "tsx"],
        stdio: ["ignore", "ignore", "inherit", "ipc"]
      })
      yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
      const reports: Array<Report> = []
      child.on("message", (m) => reports.push(m as Report))
      const code = yield* Effect.promise(() =>
        new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)))
      ).pipe(Harness.bounded("the soak process", "45 seconds"))
      expect(code).toBe(0)
      expect(reports).toHaveLength(1)
      const report = reports[0]!
      const { counters, outcomes } = report
      expect(Object.values(outcomes).reduce((a, b) => a + b, 0)).toBe(REQUESTS)
      for (const n of Object.values(outcomes)) expect(n).toBeGreaterThan(0)
      expect(counters.completed + counters.aborted + counters.failed).toBe(counters.submitted)
      expect(counters.aborted).toBeGreaterThan(0)
      expect(counters.failed).toBe(outcomes.deadline!)
      expect(counters.inFlight).toBe(0)
      expect(report.pendingAtEnd).toBe(0)
      expect(report.heapEnd).toBeLessThan(report.heapStart * 1.1)
      expect(report.resourcesAfterClose).toEqual([])
    }), { timeout: 60_000 })
})
