/**
 * How a failed command ends: one line on standard error saying what went wrong, and a non-zero
 * exit code. A typed error is something the user can act on (a coordinator that does not answer,
 * a bad address, a refused request, a bad flag), so it gets its message and never a stack trace.
 * A defect is a bug in this program and keeps the runtime's full report.
 *
 * @since 0.1.0
 * @internal
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Runtime from "effect/Runtime"
import { CliError } from "effect/cli"
import * as Output from "./Output.ts"

/**
 * Exit codes: `1` when the command ran and failed, `2` when it was called wrongly, and, for a
 * command ended by a signal, the shell's convention of 128 + its number: `130` for SIGINT
 * (Ctrl-C), `143` for SIGTERM.
 *
 * @since 0.1.0
 */
export const ExitCode = { failed: 1, usage: 2, interrupted: 130, terminated: 143 } as const

/**
 * How the process ends: as the runtime's default teardown decides, except that an interruption
 * caused by SIGTERM exits with 143, not 130 (the runtime interrupts the main fiber the same way
 * for both signals and reports 130 for either). Watches the two signals from the call on; the
 * runtime's own handlers still do the interrupting.
 *
 * @example
 * ```ts
 * import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
 * import { Effect } from "effect"
 * import { signalTeardown } from "./Failure.ts"
 *
 * NodeRuntime.runMain(Effect.never, { teardown: signalTeardown() }) // `kill` it: exit code 143
 * ```
 *
 * @since 0.1.0
 */
export const signalTeardown = (): Runtime.Teardown => {
  let first: NodeJS.Signals | undefined
  process.once("SIGINT", () => (first ??= "SIGINT"))
  process.once("SIGTERM", () => (first ??= "SIGTERM"))
  return (exit, onExit) =>
    Runtime.defaultTeardown(exit, (code) =>
      onExit(code === ExitCode.interrupted && first === "SIGTERM" ? ExitCode.terminated : code))
}

/**
 * A failure that was already reported on standard error: the runtime only sets the exit code.
 *
 * @since 0.1.0
 */
export class Reported extends Data.TaggedError("Reported")<{ readonly exitCode: number }> {
  override get [Runtime.errorExitCode](): number {
    return this.exitCode
  }
  override readonly [Runtime.errorReported] = false
}

/**
 * Folds a message onto one line (some messages carry suggestions on lines of their own).
 *
 * @since 0.1.0
 */
export const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, " ").trim()

const messageOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error && typeof error.message === "string" &&
    error.message !== ""
    ? error.message
    : String(error)

/**
 * Reports the typed failures of a command: `ShowHelp` was already presented (see
 * `UsagePresenter`), anything else is printed as `mcore: <message>`.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { report } from "./Failure.ts"
 *
 * // prints "mcore: nope" on stderr, then exits with code 1
 * const program = report(Effect.fail(new Error("nope")))
 * ```
 *
 * @since 0.1.0
 */
export const report = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A | void, Reported, R> =>
  Effect.catch(self, (error: E) => {
    if (CliError.isCliError(error) && error._tag === "ShowHelp") {
      // Help without errors (`mcore`, `mcore control`) is an answer, not a failure.
      return error.errors.length === 0 ? Effect.void : Effect.fail(new Reported({ exitCode: ExitCode.usage }))
    }
    const exitCode = CliError.isCliError(error) ? ExitCode.usage : ExitCode.failed
    return Output.errorLine(`mcore: ${oneLine(messageOf(error))}`).pipe(
      Effect.andThen(Effect.fail(new Reported({ exitCode })))
    )
  })
