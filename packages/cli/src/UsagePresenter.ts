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
