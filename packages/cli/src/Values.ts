/**
 * Flag and argument values that are numbers or `KEY=VALUE` pairs, parsed here rather than by the
 * CLI module's own `Int`/`Finite`/`KeyValuePair`, so that every refused value is explained the
 * same way: what was expected, in words a person typed it in (the module says "a string
 * representing a finite number" for an integer flag). Each failure is the module's
 * `InvalidValue`, shown by `UsagePresenter` as `invalid value "abc" for --top-k: expected an
 * integer`, exit code 2.
 *
 * @since 0.1.0
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import { Argument, Flag } from "effect/cli"

const INTEGER = /^[+-]?\d+$/
const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/

/**
 * An integer as typed (`7`, `-3`, `+2`), within the safe range and at least `min`.
 *
 * @example
 * ```ts
 * import { parseInteger } from "./Values.ts"
 *
 * parseInteger("42") // Option.some(42)
 * parseInteger("1.5") // Option.none()
 * parseInteger("-1", 0) // Option.none()
 * ```
 *
 * @since 0.1.0
 */
export const parseInteger = (text: string, min = Number.MIN_SAFE_INTEGER): Option.Option<number> => {
  const trimmed = text.trim()
  if (!INTEGER.test(trimmed)) return Option.none()
  const n = Number(trimmed)
  return Number.isSafeInteger(n) && n >= min ? Option.some(n) : Option.none()
}

/**
 * A finite decimal number as typed (`0.7`, `-1`, `1e-3`); not `Infinity`, `NaN`, hex or empty.
 *
 * @since 0.1.0
 */
export const parseNumber = (text: string): Option.Option<number> => {
  const trimmed = text.trim()
  return NUMBER.test(trimmed) ? Option.some(Number(trimmed)) : Option.none()
}

const integerExpected = (min: number | undefined) =>
  min === undefined ? "expected an integer" : min === 0 ? "expected a non-negative integer" : `expected an integer >= ${min}`

/**
 * An integer flag, optionally with a lower bound.
 *
 * @example
 * ```ts
 * import { Flag } from "effect/cli"
 * import { integer } from "./Values.ts"
 *
 * const engines = integer("engines", 1).pipe(Flag.withDefault(2))
 * ```
 *
 * @since 0.1.0
 */
export const integer = (name: string, min?: number): Flag.Flag<number> =>
  Flag.String(name).pipe(
    Flag.withMetavar("integer"),
    Flag.filterMap((text) => parseInteger(text, min), () => integerExpected(min))
  )

/**
 * An integer argument, optionally with a lower bound.
 *
 * @since 0.1.0
 */
export const integerArgument = (name: string, min?: number): Argument.Argument<number> =>
  Argument.String(name).pipe(
    Argument.withMetavar("integer"),
    Argument.filterMap((text) => parseInteger(text, min), () => integerExpected(min))
  )

/**
 * A number flag (finite).
 *
 * @since 0.1.0
 */
export const number = (name: string): Flag.Flag<number> =>
  Flag.String(name).pipe(
    Flag.withMetavar("number"),
    Flag.filterMap(parseNumber, () => "expected a number")
  )

/**
 * `KEY=VALUE`, split at the first `=`; the key is not empty.
 *
 * @example
 * ```ts
 * import { parseKeyValue } from "./Values.ts"
 *
 * parseKeyValue("top_n_logprobs=3") // Option.some(["top_n_logprobs", "3"])
 * parseKeyValue("bogus") // Option.none()
 * ```
 *
 * @since 0.1.0
 */
export const parseKeyValue = (text: string): Option.Option<readonly [string, string]> => {
  const at = text.indexOf("=")
  return at > 0 ? Option.some([text.slice(0, at), text.slice(at + 1)] as const) : Option.none()
}

/**
 * A repeatable `KEY=VALUE` flag, in the order given.
 *
 * @since 0.1.0
 */
export const keyValues = (name: string, example: string): Flag.Flag<ReadonlyArray<readonly [string, string]>> =>
  Flag.String(name).pipe(
    Flag.withMetavar("key=value"),
    Flag.filterMap(parseKeyValue, () => `expected KEY=VALUE, such as ${example}`),
    Flag.atLeast(0)
  )

const shorthand = /^(\d+(?:\.\d+)?)(ms|s|m)$/
const units = { ms: "millis", s: "seconds", m: "minutes" } as const

/**
 * Reads a duration as people type it on a command line: `500` (milliseconds), `500ms`, `2s`,
 * `1m`, or Effect's own `"2 seconds"`. Negative durations are refused.
 *
 * @example
 * ```ts
 * import { parseDuration } from "./Values.ts"
 *
 * parseDuration("250ms") // Option.some(Duration.millis(250))
 * parseDuration("soon") // Option.none()
 * ```
 *
 * @since 0.1.0
 */
export const parseDuration = (text: string): Option.Option<Duration.Duration> => {
  const trimmed = text.trim()
  const short = shorthand.exec(trimmed)
  const input = /^\d+(?:\.\d+)?$/.test(trimmed)
    ? Number(trimmed)
    : short !== null
    ? `${short[1]} ${units[short[2] as keyof typeof units]}`
    : trimmed
  return Duration.fromInput(input as Duration.Input).pipe(
    Option.filter((d) => Duration.isGreaterThanOrEqualTo(d, Duration.zero))
  )
}

/**
 * A duration flag (see {@link parseDuration}).
 *
 * @since 0.1.0
 */
export const duration = (name: string): Flag.Flag<Duration.Duration> =>
  Flag.String(name).pipe(
    Flag.withMetavar("duration"),
    Flag.filterMap(parseDuration, () => `expected a duration such as 500ms, 2s or "2 seconds"`)
  )
