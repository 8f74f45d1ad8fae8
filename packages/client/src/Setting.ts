/**
 * One option, declared once: its type (what callers may pass), its default, how it is checked
 * and resolved, its one-line description, the environment variable it is read from and the
 * `mcore` flag it becomes. The client's options (`ClientConfig.settings`) and the server's
 * (`ServerConfig.settings`) are records of these; from a record come the options type
 * ({@link Options}), the defaults ({@link defaults}), the resolution with its typed problem
 * ({@link resolve}), the environment `Config` ({@link config}) and, in the CLI, the flags with a
 * help text that states the declared default. Adding an option is adding one entry.
 *
 * @example
 * ```ts
 * import { Setting } from "@mcore-effect/client"
 *
 * const settings = {
 *   port: Setting.integer({ description: "Port", default: 8000, min: 0, max: 65535, flag: "port" }),
 *   timeout: Setting.duration({ description: "Deadline", default: "10 seconds", env: "APP_TIMEOUT" })
 * }
 * Setting.resolve(settings, { port: 80 }) // Result.succeed({ port: 80, timeout: 10000 })
 * Setting.resolve(settings, { port: -1 }) // Result.fail({ name: "port", why: "must be an integer 0..65535, got -1" })
 * ```
 *
 * @since 0.2.0
 */
import * as Config from "effect/Config"
import { SourceError } from "effect/ConfigProvider"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import type * as Schema from "effect/Schema"
import * as Kinds from "./internal/settingKinds.ts"
import type { FlagSpec, Setting } from "./internal/settingKinds.ts"

/**
 * A duration, resolved to milliseconds (see `ClientConfig.durationMillis`); its default reads
 * `10s`, `10m` or `250ms` in help text.
 *
 * @since 0.2.0
 * @category constructors
 */
export const duration = Kinds.duration

/**
 * An integer within bounds; `unit: "bytes"` shows its default as `4 MiB` in help text.
 *
 * @since 0.2.0
 * @category constructors
 */
export const integer = Kinds.integer

/**
 * A boolean, `false` unless given.
 *
 * @since 0.2.0
 * @category constructors
 */
export const boolean = Kinds.boolean

/**
 * A piece of text, taken as given (`nonEmpty` refuses `""`).
 *
 * @since 0.2.0
 * @category constructors
 */
export const text = Kinds.text

/**
 * A name out of a table, resolved to the table's entry: `hermes` to its parser.
 *
 * @since 0.2.0
 * @category constructors
 */
export const choice = Kinds.choice

/**
 * A list of text items, empty unless given. Its flag takes them comma-separated, or, with
 * `flag: { name, repeatable: true }`, one per occurrence of the flag.
 *
 * @since 0.2.0
 * @category constructors
 */
export const list = Kinds.list

/**
 * An option of its own kind: its type, check and resolution written out.
 *
 * @since 0.2.0
 * @category constructors
 */
export const custom = Kinds.custom

/**
 * The same option, required: leaving it out fails with `why: "missing: <missing>"`, and reading
 * it from the environment without its variable says `<VAR> is not set: set it to <missing>`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const required = Kinds.required

/**
 * One declared option (see the module's description).
 *
 * @since 0.2.0
 * @category models
 */
export type { FlagSpec, Kind, Setting } from "./internal/settingKinds.ts"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnySetting = Setting<any, any, boolean, FlagSpec | undefined>

/**
 * A record of declared options.
 *
 * @since 0.2.0
 * @category models
 */
export type Settings = { readonly [name: string]: AnySetting }

/**
 * What callers may pass for a setting.
 *
 * @since 0.2.0
 * @category models
 */
export type InputOf<S> = S extends Setting<infer I, infer _A, infer _R, infer _F> ? I : never

/**
 * What a setting resolves to.
 *
 * @since 0.2.0
 * @category models
 */
export type OutputOf<S> = S extends Setting<infer _I, infer A, infer _R, infer _F> ? A : never

type RequiredKey<S extends Settings, K extends keyof S> = S[K] extends Setting<infer _I, infer _A, true, infer _F> ? K
  : never

/**
 * The options type of a record of settings: the required ones as they are, the rest optional
 * (and `undefined` allowed).
 *
 * @since 0.2.0
 * @category models
 */
export type Options<S extends Settings> =
  & { readonly [K in keyof S as RequiredKey<S, K>]: InputOf<S[K]> }
  & { readonly [K in keyof S as K extends RequiredKey<S, K> ? never : K]?: InputOf<S[K]> | undefined }

/**
 * Every setting of a record, resolved.
 *
 * @since 0.2.0
 * @category models
 */
export type Resolved<S extends Settings> = { readonly [K in keyof S]: OutputOf<S[K]> }

/**
 * What is wrong with an option: its name and why. The one error of {@link resolve}, for the
 * client and the server alike.
 *
 * @since 0.2.0
 * @category models
 */
export interface Problem {
  readonly name: string
  readonly why: string
}

/**
 * Applies the defaults and checks every setting, in the order declared: the first problem, or
 * every option resolved.
 *
 * @since 0.2.0
 * @category resolution
 */
export const resolve = <S extends Settings>(settings: S, options: Options<S>): Result.Result<Resolved<S>, Problem> => {
  const resolved: Record<string, unknown> = {}
  for (const [name, setting] of Object.entries(settings)) {
    const given = (options as Record<string, unknown>)[name]
    if (given === undefined && setting.required) return Result.fail({ name, why: `missing: ${setting.missing}` })
    const value = setting.resolve(given === undefined ? setting.default : given)
    if (Result.isFailure(value)) return Result.fail({ name, why: value.failure })
    resolved[name] = value.success
  }
  return Result.succeed(resolved as Resolved<S>)
}

/**
 * The declared defaults, as declared (a duration as the `Duration` written down), of the
 * settings that have one.
 *
 * @since 0.2.0
 * @category resolution
 */
export const defaults = <S extends Settings>(
  settings: S
): { readonly [K in keyof S as S[K]["default"] extends undefined ? never : K]: Exclude<S[K]["default"], undefined> } =>
  Object.fromEntries(
    Object.entries(settings).flatMap(([name, setting]) => setting.default === undefined ? [] : [[name, setting.default]])
  ) as never

const optional = <A>(config: Config.Config<A>): Config.Config<A | undefined> =>
  Config.option(config).pipe(Config.map(Option.getOrUndefined))

/**
 * One setting read from its environment variable, decoded by its schema; `undefined` when the
 * variable is not set (or the setting has none), a `ConfigError` naming the variable when it is
 * set wrong, and, for a required setting, one saying what to set when it is missing.
 *
 * @since 0.2.0
 * @category environment
 */
export const configOf = <I>(setting: Setting<I, unknown, boolean, FlagSpec | undefined>): Config.Config<I | undefined> => {
  if (setting.config !== undefined) return setting.config
  const { env, envSchema } = setting
  if (env === undefined || envSchema === undefined) return Config.succeed(undefined)
  const read = optional(Config.schema(envSchema as unknown as Schema.ConstraintCodec<I, unknown>, env))
  if (!setting.required) return read
  return read.pipe(Config.flatMap((value) =>
    value !== undefined
      ? Config.succeed(value)
      : Config.fail(new SourceError({ message: `${env} is not set: set it to ${setting.missing}` }))
  ))
}

/**
 * The options read from the environment: each setting from its variable (see {@link configOf}).
 *
 * @since 0.2.0
 * @category environment
 */
export const config = <S extends Settings>(settings: S): Config.Config<Options<S>> =>
  Config.all(Object.fromEntries(Object.entries(settings).map(([name, setting]) => [name, configOf(setting)]))) as never
