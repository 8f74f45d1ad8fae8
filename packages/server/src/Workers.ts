/**
 * Scaling out on one machine with Node's `cluster`: the primary process forks N workers running
 * the same program; each worker builds its own server and its own client connection to the
 * coordinator, and they share the listening port (the primary accepts and hands connections out
 * round-robin). `@effect/platform-node` serves HTTP in one process; this module is the part that
 * makes N of them.
 *
 * Release order (the primary's scope closing): every worker gets SIGTERM and runs its own
 * graceful shutdown (refuse new requests, let streams finish within the grace period, abort the
 * rest); workers still running after the grace period plus 5 s are killed.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import cluster, { type Worker } from "node:cluster"

/**
 * True in a worker forked by {@link fork}.
 *
 * @since 0.1.0
 * @category workers
 */
export const isWorker = (): boolean => cluster.isWorker

/** The message a worker sends its primary once it listens. */
interface Listening {
  readonly mcoreServe: "listening"
  readonly url: string
}

const isListening = (message: unknown): message is Listening =>
  typeof message === "object" && message !== null && (message as Listening).mcoreServe === "listening"

/**
 * In a worker: tells the primary the server listens at `url`.
 *
 * @since 0.1.0
 * @category workers
 */
export const reportListening = (url: string): Effect.Effect<void> =>
  Effect.sync(() => {
    if (cluster.isWorker && process.send !== undefined) process.send({ mcoreServe: "listening", url } satisfies Listening)
  })

/**
 * Options of {@link fork}.
 *
 * @since 0.1.0
 * @category models
 */
export interface ForkOptions {
  readonly count: number
  /** Extra environment of every worker. */
  readonly env?: Readonly<Record<string, string>> | undefined
  /** How long workers get to shut down gracefully (their drain and grace period) before they are killed. */
  readonly graceMillis: number
  /** Called with a line to report (a worker exited unexpectedly and was replaced). */
  readonly warn: (line: string) => void
}

/**
 * In the primary: forks `count` workers running this program, replaces any that dies while the
 * scope is open, and waits until every one reports that it listens; returns the URL they share.
 * Closing the scope stops them (SIGTERM, then SIGKILL after the grace period plus 5 s).
 *
 * @since 0.1.0
 * @category workers
 */
export const fork = (options: ForkOptions): Effect.Effect<string, string, Scope.Scope> =>
  Effect.gen(function*() {
    const workers = new Set<Worker>()
    const listening = new Set<number>()
    let stopping = false
    let failStartup: ((why: string) => void) | undefined
    const start = (): Worker => {
      const worker = cluster.fork(options.env)
      workers.add(worker)
      worker.on("exit", (code, signal) => {
        workers.delete(worker)
        if (stopping) return
        const how = signal ?? `code ${code}`
        // One that never listened failed to start (a bad option, no coordinator): so would the next.
        if (!listening.has(worker.id)) return failStartup?.(`a worker exited before it listened (${how})`)
        options.warn(`worker ${worker.process.pid} exited (${how}); starting another`)
        start()
      })
      return worker
    }
    yield* Effect.addFinalizer(() =>
      Effect.callback<void>((resume) => {
        stopping = true
        if (workers.size === 0) return resume(Effect.void)
        const kill = setTimeout(() => {
          for (const worker of workers) worker.process.kill("SIGKILL")
        }, options.graceMillis + 5_000)
        for (const worker of workers) {
          worker.once("exit", () => {
            if (workers.size === 0) {
              clearTimeout(kill)
              resume(Effect.void)
            }
          })
          worker.process.kill("SIGTERM")
        }
      })
    )
    let started: ((url: string) => void) | undefined
    const onMessage = (worker: Worker, message: unknown) => {
      if (!isListening(message)) return
      listening.add(worker.id)
      if (listening.size >= options.count) started?.(message.url)
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => cluster.on("message", onMessage)),
      () => Effect.sync(() => cluster.off("message", onMessage))
    )
    return yield* Effect.callback<string, string>((resume) => {
      failStartup = (why) => {
        failStartup = undefined
        resume(Effect.fail(why))
      }
      started = (url) => {
        started = undefined
        failStartup = undefined
        resume(Effect.succeed(url))
      }
      for (let i = 0; i < options.count; i++) start()
    })
  })
