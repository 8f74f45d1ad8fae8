import { Config, ConfigProvider, Context, Duration, Effect, Layer, Option, Schema } from "effect"

// Constructors are Capitalized in 4.x: Config.String / Int / Number / Boolean / Duration / Redacted / Port / URL / Literals
const settings = Config.all({
  host: Config.String("MCORE_HOST"),
  port: Config.Int("MCORE_PORT").pipe(Config.withDefault(5555)),
  timeout: Config.Duration("MCORE_TIMEOUT"),                 // "10 seconds", "500 millis"
  token: Config.option(Config.Redacted("MCORE_TOKEN")),      // Option<Redacted<string>>
  mode: Config.Literals(["fast", "safe"], "MCORE_MODE").pipe(Config.withDefault("safe" as const)),
  ratio: Config.schema(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 })), "MCORE_RATIO").pipe(Config.withDefault(0.5))
})

class Settings extends Context.Service<Settings, Config.Success<typeof settings>>()("mcore/Settings") {
  // A Config is yieldable inside Effect.gen; Layer.effect reads it at layer build time (error: Config.ConfigError)
  static readonly layer = Layer.effect(Settings, Effect.gen(function*() {
    const s = yield* settings
    return Settings.of(s)
  }))
}

// Tests: provide a ConfigProvider built from a map
const testEnv = ConfigProvider.layer(ConfigProvider.fromEnv({ env: { MCORE_HOST: "h", MCORE_TIMEOUT: "2 seconds", MCORE_RATIO: "0.25" } }))
// or a nested JSON-ish object: ConfigProvider.fromUnknown({ MCORE_HOST: "h", ... })

const program = Effect.gen(function*() {
  const s = yield* Settings
  return { ...s, timeout: Duration.toMillis(s.timeout), token: Option.isSome(s.token) }
})

Effect.runPromise(program.pipe(Effect.provide(Settings.layer.pipe(Layer.provide(testEnv))))).then(console.log)

// Directly, without a layer:
const direct = Config.String("A").pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown({ A: "x" })))
Effect.runPromise(direct).then(console.log)

// Missing value -> ConfigError
Effect.runPromiseExit(Effect.gen(function*() { return yield* Config.Int("NOPE_NOT_SET_XYZ") })).then((e) => console.log(e._tag, e._tag === "Failure" ? String(e.cause).slice(0, 120) : ""))
