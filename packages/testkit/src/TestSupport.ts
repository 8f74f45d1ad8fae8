/**
 * What tests of the packages built on the testkit share, so that each is written once: a fresh
 * metrics registry per test, a bound that turns a hang into a failure, quiet logs for tests that
 * provoke warnings, a raw socket's messages read into a queue, and running a program in a child
 * process to see that it exits on its own.
 *
 * @since 0.1.0
 */
import { FrameSocket } from "@mcore-effect/protocol"
import { fork } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { createServer } from "node:net"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import type * as LogLevel from "effect/LogLevel"
import * as Metric from "effect/Metric"
import * as Queue from "effect/Queue"
import * as References from "effect/References"
import type * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import * as Zmq from "zeromq"

/**
 * Runs `effect` with a metrics registry of its own, so its metrics start at zero.
 *
 * @example
 * ```ts
 * import { TestSupport } from "@mcore-effect/testkit"
 * import { Effect } from "effect"
 *
 * const test = Effect.void.pipe(TestSupport.withRegistry)
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const withRegistry = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, Metric.MetricRegistry, new Map())

/**
 * Runs `effect` with warnings and lower left out of the logs: for tests that provoke them on
 * purpose (a passing run stays quiet).
 *
 * @category utils
 * @since 0.1.0
 */
export const quiet = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, References.MinimumLogLevel, "Error")

/**
 * {@link withRegistry} and {@link quiet}.
 *
 * @category utils
 * @since 0.1.0
 */
export const isolated = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => quiet(withRegistry(effect))

/**
 * A tracer that keeps every span it makes, in order, in `spans` (native spans: their names,
 * attributes, parents and status can be read after the run). Install it with
 * `Effect.provideService(Tracer.Tracer, tracer)`.
 *
 * @example
 * ```ts
 * import { TestSupport } from "@mcore-effect/testkit"
 * import { Effect, Tracer } from "effect"
 *
 * const { spans, tracer } = TestSupport.recordingTracer()
 * const test = Effect.void.pipe(Effect.withSpan("work"), Effect.provideService(Tracer.Tracer, tracer))
 * // after running it: spans[0].name === "work"
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const recordingTracer = (): { readonly spans: Array<Tracer.NativeSpan>; readonly tracer: Tracer.Tracer } => {
  const spans: Array<Tracer.NativeSpan> = []
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      spans.push(span)
      return span
    }
  })
  return { spans, tracer }
}

/**
 * Runs `body` with every log line at `minimum` (default: all) and above collected, as
 * `"<Level> <message>"`, into the array it is given, instead of printed.
 *
 * @example
 * ```ts
 * import { TestSupport } from "@mcore-effect/testkit"
 * import { Effect } from "effect"
 *
 * const test = TestSupport.withLogs((lines) =>
 *   Effect.logWarning("careful").pipe(Effect.map(() => lines.includes("Warn careful")))
 * )
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const withLogs = <A, E, R>(
  body: (lines: ReadonlyArray<string>) => Effect.Effect<A, E, R>,
  minimum: LogLevel.LogLevel = "All"
): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const lines: Array<string> = []
    const logger = Logger.make<unknown, void>(({ logLevel, message }) => {
      lines.push(`${logLevel} ${Array.isArray(message) ? message.map(String).join(" ") : String(message)}`)
    })
    return body(lines).pipe(
      Effect.provide(Logger.layer([logger])),
      Effect.provideService(References.MinimumLogLevel, minimum)
    )
  })

/**
 * A fresh directory under the system's temporary one (its name starting with `prefix`), removed
 * with everything in it when the scope closes.
 *
 * @example
 * ```ts
 * import { TestSupport } from "@mcore-effect/testkit"
 * import { Effect } from "effect"
 *
 * const program = Effect.scoped(Effect.map(TestSupport.tempDirectory("my-test-"), (dir) => `${dir}/file`))
 * ```
 *
 * @category utils
 * @since 0.2.0
 */
export const tempDirectory = (prefix: string): Effect.Effect<string, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))),
    (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
  )

/**
 * A hang guard: fails the test (as a defect naming `what`) when `effect` takes longer than
 * `limit`. A bound, not a speed check: it only turns "never" into a failure.
 *
 * @example
 * ```ts
 * import { TestSupport } from "@mcore-effect/testkit"
 * import { Effect } from "effect"
 *
 * const guarded = Effect.never.pipe(TestSupport.bounded("the reply", "5 seconds"))
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const bounded = (what: string, limit: Duration.Input) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  effect.pipe(
    Effect.timeoutOrElse({
      duration: limit,
      orElse: () => Effect.die(`${what}: still not done after ${Duration.format(Duration.fromInputUnsafe(limit))}`)
    })
  )

/**
 * Every message a socket receives, in a queue, until the scope closes (the socket's own release
 * belongs to whoever opened it). The socket's one reader: nothing else may receive on it.
 *
 * @category utils
 * @since 0.1.0
 */
export const inbox = (socket: FrameSocket.Readable): Effect.Effect<Queue.Dequeue<Array<Buffer>>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<Array<Buffer>>()
    yield* FrameSocket.reader(socket, {
      onMessage: (frames) => Queue.offerUnsafe(queue, frames),
      onHandlerError: () => {},
      onReceiveError: () => {}
    })
    return queue
  })

/**
 * A raw socket driven the way every peer drives one ({@link FrameSocket}): its one writer and its
 * one reader.
 *
 * @category models
 * @since 0.1.0
 */
export interface Peer {
  /** Queues a message and waits until the writer has handed it (and all before it) to ZeroMQ. */
  readonly send: (frames: FrameSocket.Message) => Effect.Effect<void>
  /** The next message received, or a failure after `timeoutMillis` (default 5 s, a real timer). */
  readonly next: (timeoutMillis?: number) => Effect.Effect<Array<Buffer>, Error>
  /** How many messages were received and not yet taken. */
  readonly waiting: () => number
  /** True when no message arrives within `millis` (a quiet window: only for proving absence). */
  readonly quietFor: (millis: number) => Effect.Effect<boolean>
}

/**
 * Drives `socket` as a {@link Peer} until the scope closes (the socket's own release belongs to
 * whoever opened it; open it before this, so that it closes after).
 *
 * @category utils
 * @since 0.1.0
 */
export const peer = (socket: FrameSocket.Readable & FrameSocket.Writable, name = "peer"): Effect.Effect<Peer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const writer = new FrameSocket.Writer(socket)
    yield* Effect.addFinalizer(() => Effect.sync(() => writer.close()))
    const received: Array<Array<Buffer>> = []
    let waiter: (() => void) | undefined
    yield* FrameSocket.reader(socket, {
      onMessage: (frames) => {
        received.push(frames)
        const wake = waiter
        waiter = undefined
        wake?.()
      },
      onHandlerError: () => {},
      onReceiveError: () => {}
    })
    const next = (timeoutMillis = 5_000) =>
      Effect.callback<Array<Buffer>, Error>((resume) => {
        const take = () => {
          clearTimeout(timer)
          resume(Effect.succeed(received.shift()!))
        }
        const timer = setTimeout(() => {
          waiter = undefined
          resume(Effect.fail(new Error(`${name}: no message within ${timeoutMillis} ms`)))
        }, timeoutMillis)
        if (received.length > 0) take()
        else waiter = take
        return Effect.sync(() => {
          clearTimeout(timer)
          waiter = undefined
        })
      })
    return {
      send: (frames) =>
        Effect.callback<void>((resume) => {
          writer.send(frames)
          writer.whenIdle(() => resume(Effect.void))
        }),
      next,
      waiting: () => received.length,
      quietFor: (millis) =>
        Effect.callback<boolean>((resume) => {
          if (received.length > 0) return resume(Effect.succeed(false))
          const timer = setTimeout(() => {
            waiter = undefined
            resume(Effect.succeed(true))
          }, millis)
          waiter = () => {
            clearTimeout(timer)
            resume(Effect.succeed(false))
          }
          return Effect.sync(() => {
            clearTimeout(timer)
            waiter = undefined
          })
        })
    }
  })

/**
 * How a program run by {@link runProgram} ended.
 *
 * @category models
 * @since 0.1.0
 */
export interface ProgramExit {
  /** The exit code (`null` when a signal ended it, as the bound's SIGKILL does). */
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  /** What it sent with `process.send`, in order. */
  readonly messages: ReadonlyArray<unknown>
  /** False when the bound had to kill it: it did not exit on its own. */
  readonly exitedOnItsOwn: boolean
}

/**
 * Runs a TypeScript program (by path) in a child Node process, with the workspace's sources
 * (`--conditions=source`, `tsx`) and an IPC channel, and waits for it to exit. A program that
 * has not exited after `limit` (default 30 s) is killed: that is how "it exits on its own" (no
 * socket, loop or timer left behind) is tested.
 *
 * @category utils
 * @since 0.1.0
 */
export const runProgram = (
  path: string,
  args: ReadonlyArray<string> = [],
  limit: Duration.Input = "30 seconds"
): Effect.Effect<ProgramExit> =>
  Effect.callback<ProgramExit>((resume) => {
    const child = fork(path, [...args], {
      execArgv: ["--conditions=source", "--import", "tsx"],
      stdio: ["ignore", "pipe", "pipe", "ipc"]
    })
    let stdout = ""
    let stderr = ""
    const messages: Array<unknown> = []
    let killed = false
    child.stdout!.on("data", (chunk) => (stdout += String(chunk)))
    child.stderr!.on("data", (chunk) => (stderr += String(chunk)))
    child.on("message", (message) => messages.push(message))
    const timer = setTimeout(() => {
      killed = true
      child.kill("SIGKILL")
    }, Duration.toMillis(Duration.fromInputUnsafe(limit)))
    // "close", not "exit": by then its output has been read to the end.
    child.once("close", (code) => {
      clearTimeout(timer)
      resume(Effect.succeed({ code, stdout, stderr, messages, exitedOnItsOwn: !killed }))
    })
    return Effect.sync(() => {
      clearTimeout(timer)
      child.kill("SIGKILL")
    })
  })

/**
 * A loopback TCP address nothing listens on, so that connecting is refused: a port from 20,000
 * to 29,999 on 127.0.0.2, found free by listening on it, then released. Below Linux's ephemeral
 * range (32,768 and up) on purpose: a port freed from that range (bound with port 0) can be
 * handed to another test's listener meanwhile, or taken as the source port of the very
 * connection that tries it (a loopback self-connect), and the connection then succeeds (seen
 * twice in full runs, as `seen: "connected"`).
 *
 * @example
 * ```ts
 * import { TestSupport } from "@mcore-effect/testkit"
 * import { Effect } from "effect"
 *
 * const program = Effect.map(TestSupport.refusedAddress, (address) => address.startsWith("tcp://127.0.0.2:"))
 * ```
 *
 * @category utils
 * @since 0.2.0
 */
export const refusedAddress: Effect.Effect<string> = Effect.promise(async () => {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 10_000)
    const free = await new Promise<boolean>((resolve) => {
      const server = createServer()
      server.once("error", () => resolve(false))
      server.listen(port, "127.0.0.2", () => server.close(() => resolve(true)))
    })
    if (free) return `tcp://127.0.0.2:${port}`
  }
  throw new Error("no free port from 20,000 to 29,999 on 127.0.0.2 in 50 tries")
})

/**
 * A zeromq.js ROUTER bound on loopback at a free port (`tcp://127.0.0.1:0`, its address in
 * `lastEndpoint`), closed with the scope: libzmq as the peer a test holds its socket against.
 *
 * @example
 * ```ts
 * import { TestSupport } from "@mcore-effect/testkit"
 * import { Effect } from "effect"
 *
 * const program = Effect.scoped(Effect.map(TestSupport.loopbackRouter, (router) => router.lastEndpoint))
 * ```
 *
 * @category utils
 * @since 0.2.0
 */
export const loopbackRouter: Effect.Effect<Zmq.Router, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(async () => {
    const socket = new Zmq.Router({ linger: 0 })
    await socket.bind("tcp://127.0.0.1:0")
    return socket
  }),
  (socket) => Effect.sync(() => socket.close())
)
