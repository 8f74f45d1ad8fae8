/**
 * Where commands write. Results go to standard output as they come (tokens without a newline,
 * one by one); diagnostics go to standard error, so a pipe only ever sees results.
 *
 * @since 0.1.0
 * @internal
 */
import * as Effect from "effect/Effect"

/**
 * Writes text to standard output now, outside any effect (for callbacks on a hot path).
 *
 * @since 0.1.0
 */
export const print = (text: string): void => {
  process.stdout.write(text)
}

/**
 * Writes text to standard output as is.
 *
 * @example
 * ```ts
 * import { write } from "./Output.ts"
 *
 * const token = write(" fox")
 * ```
 *
 * @since 0.1.0
 */
export const write = (text: string): Effect.Effect<void> => Effect.sync(() => print(text))

/**
 * Writes a line to standard output.
 *
 * @since 0.1.0
 */
export const line = (text = ""): Effect.Effect<void> => write(`${text}\n`)

/**
 * Writes a line to standard error.
 *
 * @since 0.1.0
 */
export const errorLine = (text: string): Effect.Effect<void> =>
  Effect.sync(() => {
    process.stderr.write(`${text}\n`)
  })

/**
 * Whether standard output is a terminal (worth redrawing a progress bar on).
 *
 * @since 0.1.0
 */
export const isTerminal: Effect.Effect<boolean> = Effect.sync(() => process.stdout.isTTY === true)

/**
 * The terminal's width, or 80 when it is not one.
 *
 * @since 0.1.0
 */
export const columns: Effect.Effect<number> = Effect.sync(() => process.stdout.columns ?? 80)
