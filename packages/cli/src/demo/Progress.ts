/**
 * Progress of a batch of requests: a bar redrawn in place when standard output is a terminal,
 * plain lines at every tenth otherwise (a log or a pipe should not fill up with redraws).
 *
 * @since 0.1.0
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"
import * as Output from "../Output.ts"

/**
 * A running progress display.
 *
 * @since 0.1.0
 */
export interface Progress {
  /** Counts one more finished item. Cheap: called once per request. */
  readonly advance: () => void
  /** Draws the final state and ends the display's line. */
  readonly finish: Effect.Effect<void>
}

/** How often the bar is redrawn, in milliseconds: fast enough to look live, cheap to draw. */
const REDRAW_MILLIS = 80

const bar = (done: number, total: number, width: number): string => {
  const filled = total === 0 ? width : Math.round((done / total) * width)
  return `[${"#".repeat(filled)}${".".repeat(width - filled)}]`
}

/**
 * Starts a display for `total` items named `label`. In a terminal a fiber redraws the bar until
 * `finish` (or the scope's end); elsewhere each tenth is printed once, as it is crossed.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import * as Progress from "./Progress.ts"
 *
 * const program = Effect.gen(function*() {
 *   const progress = yield* Progress.make("burst", 3)
 *   for (let i = 0; i < 3; i++) progress.advance()
 *   yield* progress.finish
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.1.0
 */
export const make = Effect.fnUntraced(function*(
  label: string,
  total: number
): Effect.fn.Return<Progress, never, Scope.Scope> {
  const terminal = yield* Output.isTerminal
  const startedAt = performance.now()
  let done = 0

  if (!terminal) {
    let nextTenth = 1
    const advance = () => {
      done++
      while (nextTenth <= 10 && done * 10 >= total * nextTenth) {
        Output.print(`${label}: ${done}/${total} (${nextTenth * 10}%)\n`)
        nextTenth++
      }
    }
    return { advance, finish: Effect.void }
  }

  const width = Math.max(10, Math.min(40, (yield* Output.columns) - 50))
  const draw = () => {
    const seconds = (performance.now() - startedAt) / 1000
    const rate = seconds > 0 ? Math.round(done / seconds) : 0
    const pct = total === 0 ? 100 : Math.floor((100 * done) / total)
    // \r and "erase to end of line": the bar overwrites itself.
    Output.print(`\r${label} ${bar(done, total, width)} ${done}/${total} ${pct}% ${rate} req/s\x1b[K`)
  }
  const redraw = Effect.sync(draw).pipe(Effect.andThen(Effect.sleep(REDRAW_MILLIS)), Effect.forever)
  const fiber = yield* Effect.forkScoped(redraw)
  return {
    advance: () => {
      done++
    },
    finish: Effect.gen(function*() {
      yield* Fiber.interrupt(fiber)
      draw()
      yield* Output.line()
    })
  }
})
