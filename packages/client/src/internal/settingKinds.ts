/**
 * The kinds of option a `Setting` declares (durations, integers, text, choices, lists), each with
 * its check, its environment schema and how its default reads in help text. Public through
 * `Setting`.
 */
import { Values } from "@mcore-effect/protocol"
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"

/** What kind of value an option takes; the CLI builds a flag of the kind. */
export type Kind = "duration" | "integer" | "boolean" | "text" | "choice" | "list" | "custom"

/** The `mcore` flag an option becomes. */
export interface FlagSpec {
  /** Kebab-case, without the dashes: `max-body-bytes`. */
  readonly name: string
  readonly alias?: string | undefined
  readonly metavar?: string | undefined
  /** The help text, when the command line wants other words than the option's description. */
  readonly help?: string | undefined
  /** A list flag taken once per item (`--x a --x b`) rather than comma-separated. */
  readonly repeatable?: boolean | undefined
}

/** One declared option: `I` what callers pass, `A` what it resolves to. */
export interface Setting<in out I, out A, out R extends boolean = false, out F extends FlagSpec | undefined = undefined> {
  readonly kind: Kind
  /** One line: the flag's help text and the environment table say it. */
  readonly description: string
  readonly required: R
  /** For a required option: what to give, in words (`the coordinator's address (...)`). */
  readonly missing: string | undefined
  /** As callers would pass it; resolved like a given value. */
  readonly default: I | undefined
  /** The default in help text: `10s`, `4 MiB`, `1024`; or words for one no value states. */
  readonly defaultText: string | undefined
  /** The environment variable the option is read from, if any. */
  readonly env: string | undefined
  /** How the variable's text decodes to what callers pass. */
  readonly envSchema: Schema.Top | undefined
  /** Reading it from the environment, when one variable and a schema cannot say it (CurveZMQ keys). */
  readonly config: Config.Config<I | undefined> | undefined
  readonly flag: F
  /** A choice's names; an integer's bounds. */
  readonly choices: ReadonlyArray<string> | undefined
  readonly min: number | undefined
  readonly max: number | undefined
  /** Checks and resolves a value (the default when none was given): why it is refused, or what it is. */
  readonly resolve: (input: I | undefined) => Result.Result<A, string>
}

/** What every kind's declaration says. */
export interface Declared<F extends FlagSpec | string | undefined> {
  readonly description: string
  readonly env?: string | undefined
  /** A name alone, or the whole spec. */
  readonly flag?: F
  readonly defaultText?: string | undefined
}

type FlagOf<F> = F extends string ? { readonly name: F } : F extends FlagSpec ? F : undefined
type Out<D, A> = D extends undefined ? A | undefined : A

const base = <F extends FlagSpec | string | undefined>(declared: Declared<F>) => ({
  description: declared.description,
  required: false as const,
  missing: undefined,
  env: declared.env,
  config: undefined,
  flag: (typeof declared.flag === "string" ? { name: declared.flag } : declared.flag) as FlagOf<F>,
  choices: undefined,
  min: undefined,
  max: undefined
})

/**
 * A duration option in milliseconds, or why it is refused: something that is not a duration
 * (`"banana"`), a negative duration, or (unless `infinite` is `"allowed"`) an infinite one.
 */
export const durationMillis = (
  name: string,
  input: unknown,
  infinite: "allowed" | "refused" = "allowed"
): Result.Result<number, { readonly name: string; readonly why: string }> => {
  let duration: Option.Option<Duration.Duration>
  try {
    duration = Duration.fromInput(input as Duration.Input)
  } catch {
    duration = Option.none()
  }
  const { describeValue } = Values
  if (Option.isNone(duration)) return Result.fail({ name, why: `not a duration: ${describeValue(input)}` })
  const millis = Duration.toMillis(duration.value)
  if (Number.isNaN(millis) || millis < 0) return Result.fail({ name, why: `must not be negative, got ${describeValue(input)}` })
  if (millis === Infinity && infinite === "refused") return Result.fail({ name, why: "must be finite" })
  return Result.succeed(millis)
}

/** `10s`, `10m`, `250ms`: how a command line writes a duration (the CLI reads these back). */
const durationText = (input: Duration.Input): string => {
  const millis = Duration.toMillis(Duration.fromInputUnsafe(input))
  return millis % 60_000 === 0 && millis > 0 ? `${millis / 60_000}m` : millis % 1000 === 0 ? `${millis / 1000}s` : `${millis}ms`
}

export const duration = <const F extends FlagSpec | string | undefined = undefined, const D extends Duration.Input | undefined = undefined>(
  declared: Declared<F> & {
    readonly default?: D
    /** Default `"allowed"`. */
    readonly infinite?: "allowed" | "refused" | undefined
    /** Zero refused too. */
    readonly positive?: boolean | undefined
  }
): Setting<Duration.Input, Out<D, number>, false, FlagOf<F>> & { readonly default: D } => ({
  // The default's own type (a `Duration`, not any `Duration.Input`) is kept, for `Setting.defaults`.
  ...base(declared),
  kind: "duration",
  default: declared.default as D,
  defaultText: declared.defaultText ?? (declared.default === undefined ? undefined : durationText(declared.default)),
  envSchema: Schema.DurationFromString,
  resolve: (input) => {
    if (input === undefined) return Result.succeed(undefined as Out<D, number>)
    const millis = durationMillis("", input, declared.infinite)
    if (Result.isFailure(millis)) return Result.fail(millis.failure.why)
    return declared.positive === true && millis.success === 0 ? Result.fail("must be positive") : Result.succeed(millis.success)
  }
})

const MiB = 1024 * 1024

export const integer = <const F extends FlagSpec | string | undefined = undefined, const D extends number | undefined = undefined>(
  declared: Declared<F> & {
    readonly default?: D
    readonly min: number
    readonly max?: number | undefined
    readonly unit?: "bytes" | undefined
  }
): Setting<number, Out<D, number>, false, FlagOf<F>> & { readonly default: D } => ({
  ...base(declared),
  kind: "integer",
  min: declared.min,
  max: declared.max,
  default: declared.default as D,
  defaultText: declared.defaultText ?? (declared.default === undefined
    ? undefined
    : declared.unit === "bytes" && declared.default % MiB === 0
    ? `${declared.default / MiB} MiB`
    : String(declared.default)),
  envSchema: Schema.Int,
  resolve: (n) => {
    if (n === undefined) return Result.succeed(undefined as Out<D, number>)
    const { max, min } = declared
    return Number.isSafeInteger(n) && n >= min && (max === undefined || n <= max)
      ? Result.succeed(n)
      : Result.fail(max === undefined ? `must be an integer >= ${min}, got ${String(n)}` : `must be an integer ${min}..${max}, got ${String(n)}`)
  }
})

export const boolean = <const F extends FlagSpec | string | undefined = undefined>(
  declared: Declared<F>
): Setting<boolean, boolean, false, FlagOf<F>> => ({
  ...base(declared),
  kind: "boolean",
  default: false,
  defaultText: declared.defaultText,
  envSchema: undefined,
  // `Config.Boolean`'s words (true/false, yes/no, on/off, 1/0); its schema is not exported.
  config: declared.env === undefined ? undefined : Config.option(Config.Boolean(declared.env)).pipe(Config.map(Option.getOrUndefined)),
  resolve: (b) => Result.succeed(b === true)
})

export const text = <const F extends FlagSpec | string | undefined = undefined, const D extends string | undefined = undefined>(
  declared: Declared<F> & { readonly default?: D; readonly nonEmpty?: boolean | undefined }
): Setting<string, Out<D, string>, false, FlagOf<F>> & { readonly default: D } => ({
  ...base(declared),
  kind: "text",
  default: declared.default as D,
  defaultText: declared.defaultText ?? declared.default,
  envSchema: Schema.String,
  resolve: (s) =>
    s !== undefined && (typeof s !== "string" || (declared.nonEmpty === true && s.length === 0))
      ? Result.fail(declared.nonEmpty === true ? "must not be empty" : "must be text")
      : Result.succeed(s as Out<D, string>)
})

export const choice = <A, const F extends FlagSpec | string | undefined = undefined>(
  declared: Declared<F> & { readonly choices: ReadonlyMap<string, A> }
): Setting<string, A | undefined, false, FlagOf<F>> => {
  const names = [...declared.choices.keys()]
  return {
    ...base(declared),
    kind: "choice",
    choices: names,
    default: undefined,
    defaultText: declared.defaultText,
    envSchema: Schema.Literals(names),
    resolve: (name) =>
      name === undefined
        ? Result.succeed(undefined)
        : declared.choices.has(name)
        ? Result.succeed(declared.choices.get(name))
        : Result.fail(`${JSON.stringify(name)} is not one of ${names.join(", ")}`)
  }
}

export const list = <const F extends FlagSpec | string | undefined = undefined>(
  declared: Declared<F> & { readonly check?: ((item: string) => string | undefined) | undefined }
): Setting<ReadonlyArray<string>, ReadonlyArray<string>, false, FlagOf<F>> => ({
  ...base(declared),
  kind: "list",
  default: undefined,
  defaultText: declared.defaultText,
  envSchema: undefined,
  resolve: (items) => {
    for (const item of items ?? []) {
      const why = declared.check?.(item)
      if (why !== undefined) return Result.fail(why)
    }
    return Result.succeed(items ?? [])
  }
})

export const custom = <I, A, const F extends FlagSpec | string | undefined = undefined>(
  declared: Declared<F> & {
    readonly default?: I | undefined
    readonly envSchema?: Schema.Top | undefined
    readonly config?: Config.Config<I | undefined> | undefined
    readonly choices?: ReadonlyArray<string> | undefined
    readonly resolve: (input: I | undefined) => Result.Result<A, string>
  }
): Setting<I, A, false, FlagOf<F>> => ({
  ...base(declared),
  kind: "custom",
  default: declared.default,
  defaultText: declared.defaultText,
  envSchema: declared.envSchema,
  config: declared.config,
  choices: declared.choices,
  resolve: declared.resolve
})

export const required = <I, A, F extends FlagSpec | undefined>(
  setting: Setting<I, A, false, F>,
  missing: string
): Setting<I, Exclude<A, undefined>, true, F> => ({
  ...setting,
  required: true,
  missing,
  resolve: setting.resolve as (input: I | undefined) => Result.Result<Exclude<A, undefined>, string>
})
