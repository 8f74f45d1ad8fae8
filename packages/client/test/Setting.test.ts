/**
 * One declaration per option: the type, the defaults, the check, the environment `Config` all
 * come from it (the flags are `mcore`'s, tested in the cli package).
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Duration, Effect, Result } from "effect"
import { Setting } from "../src/index.ts"

const settings = {
  name: Setting.required(Setting.text({ description: "A name", env: "APP_NAME", nonEmpty: true }), "a name for the app"),
  port: Setting.integer({ description: "Port", default: 8000, min: 0, max: 65535, env: "APP_PORT", flag: "port" }),
  limit: Setting.integer({ description: "Limit", default: 4 * 1024 * 1024, min: 1, unit: "bytes" }),
  timeout: Setting.duration({ description: "Deadline", default: Duration.seconds(10), infinite: "refused", env: "APP_TIMEOUT" }),
  verbose: Setting.boolean({ description: "Say more", env: "APP_VERBOSE" }),
  parser: Setting.choice({ description: "Parser", choices: new Map([["a", 1], ["b", 2]]) }),
  hosts: Setting.list({ description: "Hosts", check: (host) => host.includes("/") ? `${JSON.stringify(host)} is not a host` : undefined })
}

const env = (vars: Record<string, string>) => Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: vars }))

describe("Setting", () => {
  it("applies the declared defaults and resolves what is given", () => {
    expect(Setting.resolve(settings, { name: "app" })).toEqual(Result.succeed({
      name: "app",
      port: 8000,
      limit: 4 * 1024 * 1024,
      timeout: 10_000,
      verbose: false,
      parser: undefined,
      hosts: []
    }))
    expect(Result.getOrThrow(Setting.resolve(settings, { name: "app", timeout: "2 seconds", parser: "b", verbose: true })))
      .toMatchObject({ timeout: 2000, parser: 2, verbose: true })
  })

  it("fails with the option's name and why, one line", () => {
    const problem = (options: Setting.Options<typeof settings>) => Result.match(Setting.resolve(settings, options), { onSuccess: () => undefined, onFailure: (p) => p })
    expect(problem({ name: "app", port: 70000 })).toEqual({ name: "port", why: "must be an integer 0..65535, got 70000" })
    expect(problem({ name: "app", limit: 0 })).toEqual({ name: "limit", why: "must be an integer >= 1, got 0" })
    expect(problem({ name: "app", timeout: "Infinity" })).toEqual({ name: "timeout", why: "must be finite" })
    expect(problem({ name: "app", timeout: "soon" as never })).toEqual({ name: "timeout", why: "not a duration: \"soon\"" })
    expect(problem({ name: "app", parser: "c" })).toEqual({ name: "parser", why: "\"c\" is not one of a, b" })
    expect(problem({ name: "app", hosts: ["ok", "a/b"] })).toEqual({ name: "hosts", why: "\"a/b\" is not a host" })
    expect(problem({ name: "" })).toEqual({ name: "name", why: "must not be empty" })
    expect(problem({} as never)).toEqual({ name: "name", why: "missing: a name for the app" })
  })

  it("types the options from the declarations: the required one required", () => {
    const options: Setting.Options<typeof settings> = { name: "app", port: 1, timeout: "1 second", hosts: ["x"] }
    // @ts-expect-error `name` is required
    const missing: Setting.Options<typeof settings> = { port: 1 }
    // @ts-expect-error `port` is a number
    const wrong: Setting.Options<typeof settings> = { name: "app", port: "1" }
    expect([options, missing, wrong].length).toBe(3)
  })

  it("gives the declared defaults, as declared, and how help text shows them", () => {
    expect(Setting.defaults(settings)).toEqual({ port: 8000, limit: 4 * 1024 * 1024, timeout: Duration.seconds(10), verbose: false })
    expect([settings.port.defaultText, settings.limit.defaultText, settings.timeout.defaultText]).toEqual(["8000", "4 MiB", "10s"])
    expect(settings.port.flag).toEqual({ name: "port" })
    expect(settings.limit.flag).toBeUndefined()
  })

  it.effect("reads the options from their environment variables, by their schemas", () =>
    Effect.gen(function*() {
      const options = yield* Setting.config(settings).pipe(env({ APP_NAME: "app", APP_PORT: "81", APP_TIMEOUT: "3 seconds", APP_VERBOSE: "true" }))
      expect(options).toMatchObject({ name: "app", port: 81, verbose: true, limit: undefined })
      expect(Result.getOrThrow(Setting.resolve(settings, options))).toMatchObject({ port: 81, timeout: 3000, limit: 4 * 1024 * 1024 })
    }))

  it.effect("a required variable missing says what to set; a bad one names its variable", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(Setting.config(settings).pipe(env({})))
      expect(missing.message).toContain("APP_NAME is not set: set it to a name for the app")
      const bad = yield* Effect.flip(Setting.config(settings).pipe(env({ APP_NAME: "app", APP_PORT: "eighty" })))
      expect(bad.message).toContain("APP_PORT")
    }))
})
