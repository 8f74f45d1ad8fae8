/**
 * How the CLI module's own output is shown. Help and version are shown as the module renders
 * them; a wrong invocation (unknown flag, missing argument, bad value) is one line on standard
 * error naming the mistake and where the help is, instead of the whole help page.
 *
 * @since 0.1.0
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import { type CliError, CliOutput } from "effect/cli"
import { oneLine } from "./Failure.ts"
import { addressVariable, missingProtocol } from "./Flags.ts"
import * as Output from "./Output.ts"

/**
 * One mistake, on one line (the module puts suggestions on lines of their own).
 *
 * @since 0.1.0
 */
export const describe = (error: CliError.NonShowHelpErrors): string => {
  switch (error._tag) {
    case "UnrecognizedOption": {
      const hint = error.suggestions.length > 0 ? ` (did you mean ${error.suggestions.join(" or ")}?)` : ""
      return `unrecognized flag ${error.option}${hint}`
    }
    case "UnknownSubcommand": {
      const hint = error.suggestions.length > 0 ? ` (did you mean ${error.suggestions.join(" or ")}?)` : ""
      return `unknown command ${JSON.stringify(error.subcommand)}${hint}`
    }
    case "MissingOption":
      return error.option === "address"
        ? `missing --address (or ${addressVariable} in the environment): where the coordinator is`
        : error.option === "protocol"
        ? missingProtocol
        : `missing required flag --${error.option}`
    case "InvalidValue": {
      // One style for every refused value, whoever refused it: the flag or argument, the value
      // as typed, then why ("expected ..." for a value of the wrong kind).
      const name = error.kind === "flag" ? `--${error.option}` : `<${error.option}>`
      const expected = oneLine(error.expected)
      // The module's choice flags (`Flag.Literals`) give their choices alone: `"a" | "b"`.
      const why = /^".*" \| "/.test(expected) ? `expected one of ${expected}` : expected.replace(/^Expected:?\s*/, "expected ")
      if (error.value === "" && error.kind === "flag") {
        // The module passes the flag's metavar (`number`) when the value is missing altogether.
        return why.startsWith("expected ") ? `missing value for ${name}: ${why}` : `missing value for ${name} (${why})`
      }
      return `invalid value ${JSON.stringify(error.value)} for ${name}: ${why}`
    }
    default:
      return oneLine(error.message)
  }
}

/**
 * The presenter.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { layer } from "./UsagePresenter.ts"
 *
 * // `mcore generate --tokenz 3 hi` then prints
 * // mcore generate: unrecognized flag --tokenz (did you mean --tokens?); see mcore generate --help
 * const withPresenter = <A, E, R>(cli: Effect.Effect<A, E, R>) => Effect.provide(cli, layer)
 * ```
 *
 * @since 0.1.0
 */
export const layer: Layer.Layer<never> = CliOutput.layerPresenter({
  present: (event) => {
    if (event._tag !== "InvalidInvocation") return CliOutput.defaultPresenter.present(event)
    const command = event.commandPath.join(" ")
    const mistakes = event.errors.map(describe).join("; ")
    return Output.errorLine(`${command}: ${mistakes}; see ${command} --help`).pipe(Effect.asVoid)
  }
})
