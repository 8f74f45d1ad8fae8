/**
 * One measured implementation (the plain baseline, or the `InferenceClient`), in a process of
 * its own so that its CPU time and heap are its own. Forked by `client.bench.ts` with
 * `node [...] --expose-gc subject.ts <baseline|client|batch|main> <address>` (`main`: the client
 * with `submit` in Megatron-LM main's dialect); driven over IPC, one command
 * at a time, each answered `{ id, ... }`:
 *
 * - `burst { n }`: n requests in flight at once; answers the wall time (ms) and this process's
 *   CPU time (user + system, µs) from the first submission to the last reply.
 * - `sequential { n }`: n requests one after the other; answers each round trip (ms).
 * - `heap`: a full GC, then `heapUsed`.
 * - `fire { n }`: a full GC, `heapUsed` as `before`, then n requests left in flight (the
 *   stand-in is holding its replies); `settle`: a full GC and `heapUsed` with them pending;
 *   `drain`: waits until they have all completed.
 * - `close`.
 */
import * as v8 from "node:v8"
import * as vm from "node:vm"
import { prompt, samplingParamsInput, samplingParamsWire } from "./fixture.ts"
import { type Subject, Unavailable } from "./measured.ts"

const gc: () => void = (globalThis as { gc?: () => void }).gc ??
  (() => {
    v8.setFlagsFromString("--expose-gc")
    return vm.runInNewContext("gc") as () => void
  })()

/** Twice: the first pass can leave objects that only a finalizer released. */
const heapAfterGc = (): number => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

interface Command {
  readonly id: number
  readonly op: string
  readonly n?: number
}

const main = async (kind: string, address: string): Promise<void> => {
  let subject: Subject
  try {
    subject = kind === "baseline"
      ? await (await import("./baseline.ts")).make(address, prompt, samplingParamsWire)
      : await (await import("./clientSubject.ts")).make(
        address,
        prompt,
        samplingParamsInput,
        kind === "batch" ? "submitAll" : "submit",
        kind === "main" ? "main" : "reference"
      )
  } catch (error) {
    if (error instanceof Unavailable) {
      process.send?.({ unavailable: error.message })
      return
    }
    throw error
  }
  process.send?.({ ready: true })

  let inFlight: Promise<void> | undefined
  const handle = async (command: Command): Promise<Record<string, unknown>> => {
    const n = command.n ?? 0
    switch (command.op) {
      case "burst": {
        const cpu = process.cpuUsage()
        const start = performance.now()
        await subject.burst(n)
        const wallMs = performance.now() - start
        const used = process.cpuUsage(cpu)
        return { wallMs, cpuUs: used.user + used.system }
      }
      case "sequential":
        return { times: await subject.sequential(n) }
      case "heap":
        return { heapUsed: heapAfterGc() }
      case "fire": {
        const before = heapAfterGc()
        inFlight = subject.burst(n)
        return { before }
      }
      case "settle":
        return { heapUsed: heapAfterGc() }
      case "drain":
        await inFlight
        inFlight = undefined
        return {}
      case "close":
        await subject.close()
        return {}
      default:
        throw new Error(`unknown command ${command.op}`)
    }
  }

  process.on("message", (command: Command) => {
    handle(command).then(
      (result) => process.send?.({ id: command.id, ...result }),
      (error) => {
        process.send?.({ id: command.id, error: String(error instanceof Error ? error.stack : error) })
      }
    )
  })
}

process.on("disconnect", () => process.exit(0))
main(process.argv[2] ?? "baseline", process.argv[3] ?? "").catch((error) => {
  console.error(`bench subject ${process.argv[2]} failed:`, error)
  process.exit(1)
})
