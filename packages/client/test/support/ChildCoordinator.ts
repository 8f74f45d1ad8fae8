/**
 * Runs `echoCoordinator.mjs` in a child process, as a scoped resource, so a test can stop it
 * (`SIGSTOP`: alive but silent, only heartbeats can tell) or kill it (`SIGKILL`) like a real
 * coordinator process.
 */
import { type ChildProcess, fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect, type Scope } from "effect"

export interface ChildCoordinator {
  readonly address: string
  /** What it speaks (the reference protocol's framing, written by hand): what a client of it is given. */
  readonly protocol: "reference"
  readonly signal: (signal: NodeJS.Signals) => Effect.Effect<void>
  /** Resolves when the process has exited. */
  readonly exited: Effect.Effect<void>
}

const program = fileURLToPath(new URL("./echoCoordinator.mjs", import.meta.url))

export const make = (address?: string): Effect.Effect<ChildCoordinator, never, Scope.Scope> =>
  Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() =>
        fork(program, address === undefined ? [] : [address], {
          execArgv: [],
          stdio: ["ignore", "inherit", "inherit", "ipc"]
        })
      ),
      (child) =>
        Effect.sync(() => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
        })
    )
    const exitedPromise = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve()
      else child.once("exit", () => resolve())
    })
    const bound = yield* Effect.promise(() =>
      new Promise<string>((resolve, reject) => {
        child.once("message", (message: { address: string }) => resolve(message.address))
        child.once("exit", (code) => reject(new Error(`the coordinator process exited (${code}) before binding`)))
      })
    )
    return {
      address: bound,
      protocol: "reference",
      signal: (signal) => Effect.sync(() => void (child as ChildProcess).kill(signal)),
      exited: Effect.promise(() => exitedPromise)
    }
  })
