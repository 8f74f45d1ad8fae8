/**
 * The `mcore` flags of declared options (`Setting` of `@mcore-effect/client`): each setting that
 * names a flag becomes one, of its kind, with its description and its declared default (and
 * environment variable) in the help text, never a default written out by hand. A setting with an
 * environment variable falls back to it, read as the same text the flag takes. The flag leaves
 * the default to the option's own resolution: absent, it gives nothing (`Option.none()`).
 *
 * @since 0.2.0
 * @internal
 */
import type { Setting } from "@mcore-effect/client"
import * as Config from "effect/Config"
import * as Option from "effect/Option"
import { Flag } from "effect/cli"
import { parseDuration, parseInteger } from "./Values.ts"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnySetting = Setting.Setting<any, any, boolean, Setting.FlagSpec | undefined>

/**
 * What a setting's flag parses to: the value, or, unless the setting is required, an `Option`.
 *
 * @since 0.2.0
 */
export type FlagValue<S> = S extends Setting.Setting<infer I, infer _A, infer R, infer _F> ? R extends true ? I : Option.Option<I>
  : never

/**
 * The flags of a record of settings: one for each setting that names a flag, under the option's
 * own name.
 *
 * @since 0.2.0
 */
export type Flags<S extends Setting.Settings> = {
  readonly [K in keyof S as S[K]["flag"] extends Setting.FlagSpec ? K : never]: Flag.Flag<FlagValue<S[K]>>
}

/**
 * A flag's help text: the setting's description (or the flag's own words), then its declared
 * default and its environment variable.
 *
 * @example
 * ```ts
 * import { ServerConfig } from "@mcore-effect/server"
 * import { help } from "./SettingFlags.ts"
 *
 * help(ServerConfig.settings.maxBodyBytes) // "Largest request body, in bytes (default 4 MiB)"
 * ```
 *
 * @since 0.2.0
 */
export const help = (setting: AnySetting): string => {
  const notes = [
    setting.defaultText === undefined ? undefined : `default ${setting.defaultText}`,
    setting.env === undefined ? undefined : `env ${setting.env}`
  ].filter((note) => note !== undefined)
  const text = setting.flag?.help ?? setting.description
  return notes.length === 0 ? text : `${text} (${notes.join("; ")})`
}

/**
 * The environment variable a setting is read from, for a flag made by hand that falls back to
 * the same one (`mcore serve --coordinator`).
 *
 * @since 0.2.0
 */
export const variable = (setting: AnySetting): string => {
  if (setting.env === undefined) throw new Error(`the setting "${setting.description}" names no environment variable`)
  return setting.env
}

const commaList = (list: string): Array<string> => list.split(",").map((item) => item.trim()).filter((item) => item.length > 0)

/** A flag of text, falling back to the setting's variable, then parsed as the kind says. */
const parsed = <A>(
  setting: AnySetting,
  name: string,
  metavar: string,
  parse: (text: string) => Option.Option<A>,
  expected: string
): Flag.Flag<A> => {
  const text = Flag.String(name).pipe(Flag.withMetavar(setting.flag?.metavar ?? metavar))
  const withEnv = setting.env === undefined ? text : text.pipe(Flag.withFallbackConfig(Config.String(setting.env)))
  return withEnv.pipe(Flag.filterMap(parse, () => expected))
}

const integerFlag = (setting: AnySetting, name: string): Flag.Flag<number> => {
  const { max, min } = setting
  return parsed(
    setting,
    name,
    "integer",
    (text) => Option.filter(parseInteger(text, min), (n) => max === undefined || n <= max),
    max !== undefined ? `expected an integer ${min}..${max}` : min === 0 ? "expected a non-negative integer" : `expected an integer >= ${min}`
  )
}

const kindFlag = (setting: AnySetting, spec: Setting.FlagSpec): Flag.Flag<unknown> => {
  const { name } = spec
  const env = setting.env
  switch (setting.kind) {
    case "duration":
      return parsed(setting, name, "duration", parseDuration, `expected a duration such as 500ms, 2s or "2 seconds"`)
    case "integer":
      return integerFlag(setting, name)
    case "boolean": {
      const flag = Flag.Boolean(name)
      return env === undefined ? flag : flag.pipe(Flag.withFallbackConfig(Config.Boolean(env)))
    }
    case "choice": {
      const flag = Flag.Literals(name, setting.choices ?? [])
      return env === undefined ? flag : flag.pipe(Flag.withFallbackConfig(Config.Literals(setting.choices ?? [], env)))
    }
    case "list":
      return spec.repeatable === true
        ? Flag.String(name).pipe(Flag.withMetavar(spec.metavar ?? "value"), Flag.atLeast(0))
        : parsed(setting, name, "list", (text) => Option.some(commaList(text)), "expected a comma-separated list")
    case "text":
    case "custom":
      return parsed(setting, name, "string", Option.some, "")
  }
}

/**
 * The flag of one setting (which must name one): of its kind, with its help text; optional
 * unless the setting is required. A repeatable list flag given no times is `Option.none()`.
 *
 * @since 0.2.0
 */
export const flag = <S extends AnySetting>(setting: S): Flag.Flag<FlagValue<S>> => {
  const spec = setting.flag
  if (spec === undefined) throw new Error(`the setting "${setting.description}" names no flag`)
  let flag = kindFlag(setting, spec).pipe(Flag.withDescription(help(setting)))
  if (spec.alias !== undefined) flag = flag.pipe(Flag.withAlias(spec.alias))
  if (setting.required) return flag as Flag.Flag<FlagValue<S>>
  if (setting.kind === "list" && spec.repeatable === true) {
    return flag.pipe(Flag.map((items) => (items as ReadonlyArray<string>).length === 0 ? Option.none() : Option.some(items))) as never
  }
  return Flag.optional(flag) as Flag.Flag<FlagValue<S>>
}

/**
 * The flags of every setting that names one, under the options' own names (so that
 * {@link given} turns what they parse to back into options).
 *
 * @since 0.2.0
 */
export const flags = <S extends Setting.Settings>(settings: S): Flags<S> =>
  Object.fromEntries(
    Object.entries(settings).flatMap(([key, setting]) => setting.flag === undefined ? [] : [[key, flag(setting)]])
  ) as never

/**
 * What the flags of {@link flags} parsed to, as options: each given flag's value, nothing for
 * the others (their declared defaults apply when the options are resolved).
 *
 * @since 0.2.0
 */
export const given = <S extends Setting.Settings>(
  settings: S,
  parsedFlags: { readonly [K in keyof Flags<S>]: Flags<S>[K] extends Flag.Flag<infer A> ? A : never }
): { readonly [K in keyof Setting.Options<S> as K extends keyof Flags<S> ? K : never]: Setting.Options<S>[K] } =>
  Object.fromEntries(
    Object.keys(settings).filter((key) => settings[key]!.flag !== undefined).map((key) => {
      const value = (parsedFlags as Record<string, unknown>)[key]
      return [key, Option.isOption(value) ? Option.getOrUndefined(value) : value]
    })
  ) as never
