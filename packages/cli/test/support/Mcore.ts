/**
 * Runs the built `mcore` (`dist/main.js`) as a subprocess, the way a person or a script does.
 * Every process is a scoped resource killed when its scope closes, and every wait is bounded by
 * a real timer, so a hung command fails its test instead of hanging the suite.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect, type Scope } from "effect"

/** The built executable. */
export const main = fileURLToPath(new URL("../../dist/main.js", import.meta.url))

/** How a finished process ended. */
export interface Finished {
  /** The exit code, or `null` when a signal ended it. */
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** A process still running. */
export interface Running {
  /** Output so far. */
  readonly stdout: () => string
  readonly stderr: () => string
  /** Waits until standard output has a line satisfying `predicate`, and returns it. */
  readonly line: (what: string, predicate: (line: string) => boolean, millis?: number) => Effect.Effect<string>
  readonly kill: (signal: NodeJS.Signals) => Effect.Effect<void>
  /** Waits for the process to end (at most `millis`; then it is killed and the test fails). */
  readonly exited: (millis?: number) => Effect.Effect<Finished>
}

/** Fails the test, showing what the process printed so far. */
const failure = (why: string, child: ChildProcess, out: () => string, err: () => string) =>
  Effect.die(
    new Error(`mcore ${child.spawnargs.slice(2).join(" ")}: ${why}\n--- stdout\n${out()}\n--- stderr\n${err()}`)
  )

/** Bounds an effect with a real timer (the subprocess runs in real time whatever the test clock says). */
const within = <A>(self: Effect.Effect<A>, millis: number, onTimeout: () => Effect.Effect<never>) =>
  Effect.raceFirst(
    self,
    Effect.callback<never>((resume) => {
      const timer = setTimeout(() => resume(onTimeout()), millis)
      return Effect.sync(() => clearTimeout(timer))
    })
  )

/**
 * Starts `mcore ...args`; it is killed (SIGKILL) when the scope closes if it is still running.
 */
export const start = (
  args: ReadonlyArray<string>,
  options?: { readonly env?: Record<string, string> | undefined }
): Effect.Effect<Running, never, Scope.Scope> =>
  Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        spawn(process.execPath, [main, ...args], {
          stdio: ["ignore", "pipe", "pipe"],
          // No drain on SIGTERM (5 s by default) unless a test asks for one.
          env: { ...process.env, MCORE_DRAIN_DELAY: "0", ...options?.env }
        })
      ),
      (child) =>
        Effect.sync(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
        })
    )
    let stdout = ""
    let stderr = ""
    const changed = new Set<() => void>()
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk
      changed.forEach((f) => f())
    })
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk))
    const ended = new Promise<Finished>((resolve) => {
      // "close", not "exit": by then both pipes are drained.
      child.once("close", (code, signal) => {
        changed.forEach((f) => f())
        resolve({ code, signal, stdout, stderr })
      })
    })
    const out = () => stdout
    const err = () => stderr

    const line: Running["line"] = (what, predicate, millis = 60_000) =>
      within(
        Effect.callback<string>((resume) => {
          const check = () => {
            const found = stdout.split("\n").slice(0, -1).find(predicate)
            if (found !== undefined) {
              changed.delete(check)
              resume(Effect.succeed(found))
            } else if (child.exitCode !== null || child.signalCode !== null) {
              changed.delete(check)
              resume(failure(`ended without printing ${what}`, child, out, err))
            }
          }
          changed.add(check)
          check()
          return Effect.sync(() => changed.delete(check))
        }),
        millis,
        () => failure(`no ${what} within ${millis} ms`, child, out, err)
      )

    return {
      stdout: out,
      stderr: err,
      line,
      kill: (signal) => Effect.sync(() => void child.kill(signal)),
      exited: (millis = 60_000) =>
        within(Effect.promise(() => ended), millis, () => failure(`still running after ${millis} ms`, child, out, err))
    } satisfies Running
  })

/** Runs `mcore ...args` to its end (at most `millis`) and returns how it ended. */
export const run = (
  args: ReadonlyArray<string>,
  options?: { readonly millis?: number | undefined; readonly env?: Record<string, string> | undefined }
): Effect.Effect<Finished> =>
  Effect.scoped(Effect.flatMap(start(args, options), (process) => process.exited(options?.millis)))

/** Runs `mcore ...args`, expecting exit code 0, and returns its standard output. */
export const ok = (args: ReadonlyArray<string>, options?: { readonly millis?: number | undefined }) =>
  Effect.flatMap(run(args, options), (finished) =>
    finished.code === 0
      ? Effect.succeed(finished.stdout)
      : Effect.die(
        new Error(`mcore ${args.join(" ")} exited with ${finished.code ?? finished.signal}\n${finished.stderr}`)
      ))

/**
 * A `mcore coordinator` on an ephemeral loopback port, with its address (its first line) and its
 * dialect (the second, `protocol NAME`), as a script reads them. It is killed when the scope
 * closes.
 */
export const coordinator = (args: ReadonlyArray<string> = []) =>
  Effect.gen(function*() {
    const process = yield* start(["coordinator", ...args])
    const address = yield* process.line("the bound address", () => true)
    const second = yield* process.line("its dialect", (line) => line !== address)
    const protocol = /^protocol (\S+)$/.exec(second)?.[1]
    if (protocol === undefined) return yield* Effect.die(new Error(`the second line is not "protocol NAME": ${second}`))
    return { process, address, protocol }
  })
