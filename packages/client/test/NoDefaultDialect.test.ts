/**
 * There is no default dialect: one SUBMIT in a dialect a Megatron-LM coordinator does not speak
 * kills it (packages/protocol/DIALECTS.md, "What kills"), so a client is never built without
 * being told. The compiler says so for typed code, and untyped code, casts and the environment
 * get a typed error before any socket is opened.
 */
import { describe, expect, it } from "@effect/vitest"
import { Dialect } from "@mcore-effect/protocol"
import { ConnectionCounter, TestSupport } from "@mcore-effect/testkit"
import { ConfigProvider, Effect, Layer, Result } from "effect"
import { ClientConfig, InferenceClient } from "../src/index.ts"

/** Never called: type-checked only, each line a compile error were `protocol` ever optional again. */
export const compileErrors = (address: string) => [
  // @ts-expect-error `protocol` is required: there is no default dialect
  { address } satisfies ClientConfig.ClientOptions,
  // @ts-expect-error `protocol` is required: there is no default dialect
  InferenceClient.layer({ address }),
  // @ts-expect-error `protocol` is required: there is no default dialect
  InferenceClient.make({ address, deserialize: true }),
  // @ts-expect-error `protocol` is required: there is no default dialect
  InferenceClient.layerDeserialized({ address })
]

/** Options as untyped code (or a cast) hands them over: no `protocol`. */
const untyped = (options: Omit<ClientConfig.ClientOptions, "protocol">) => options as ClientConfig.ClientOptions

const expectedWhy = "missing: the coordinator's wire dialect, one of main, pr-6497, core_v0.19, core_v0.18, core_v0.17, " +
  "core_v0.16, reference (no default: a dialect the coordinator does not speak can kill it; which Megatron-LM speaks " +
  "which: README.md#against-a-real-megatron-deployment)"

describe("no default dialect", () => {
  it("lists every dialect, main first and the project's own last", () => {
    expect(Dialect.names[0]).toBe("main")
    expect(Dialect.names.at(-1)).toBe("reference")
    expect(ClientConfig.protocolChoices).toContain(Dialect.names.join(", "))
  })

  it("resolve refuses options without a protocol, naming the choices and the table on one line", () => {
    const resolved = ClientConfig.resolve(untyped({ address: "tcp://127.0.0.1:5555" }))
    expect(resolved).toEqual(Result.fail({ name: "protocol", why: expectedWhy }))
    expect(expectedWhy).not.toContain("\n")
    expect(ClientConfig.optionProblem(untyped({ address: "tcp://127.0.0.1:5555" }))).toEqual({ name: "protocol", why: expectedWhy })
    // A dialect given: nothing refused, and it is the dialect used.
    expect(Result.getOrThrow(ClientConfig.resolve({ address: "tcp://127.0.0.1:5555", protocol: "core_v0.18" })).dialect.name)
      .toBe("core_v0.18")
  })

  it.live("make and layer fail with InvalidArgument (name protocol), connecting nowhere", () =>
    Effect.gen(function*() {
      const listener = yield* ConnectionCounter.make
      // A connect timeout far beyond the test's: a client that went on to connect would fail
      // with ConnectTimeout, not InvalidArgument.
      const options = untyped({ address: listener.address, connectTimeout: "1 hour" })
      const made = yield* Effect.flip(Effect.scoped(InferenceClient.make(options)))
      expect(made.reason).toMatchObject({ _tag: "InvalidArgument", name: "protocol", why: expectedWhy })
      expect(made.message).toBe(`InvalidArgument: invalid protocol: ${expectedWhy}`)
      const layered = yield* Effect.flip(Effect.scoped(Layer.build(InferenceClient.layer(options))))
      expect(layered.reason).toMatchObject({ _tag: "InvalidArgument", name: "protocol" })
      expect(yield* listener.connectionsBefore).toBe(0)
    }).pipe(TestSupport.withRegistry))

  it.live("layerConfig without MCORE_PROTOCOL fails with a ConfigError naming the variable and the choices, connecting nowhere", () =>
    Effect.gen(function*() {
      const listener = yield* ConnectionCounter.make
      const env = ConfigProvider.layer(ConfigProvider.fromEnv({ env: { MCORE_COORDINATOR_ADDRESS: listener.address } }))
      const error = yield* Effect.flip(Effect.scoped(Layer.build(InferenceClient.layerConfig().pipe(Layer.provide(env)))))
      expect(error._tag).toBe("ConfigError")
      expect(error.message).toContain(`MCORE_PROTOCOL is not set: set it to ${ClientConfig.protocolChoices}`)
      expect(yield* listener.connectionsBefore).toBe(0)
    }).pipe(TestSupport.withRegistry))

  it.live("the connection counter sees a client that does connect (the check above can fail)", () =>
    Effect.gen(function*() {
      const listener = yield* ConnectionCounter.make
      // It never answers the ZeroMQ greeting: the client connects, then times out.
      const error = yield* Effect.flip(
        Effect.scoped(InferenceClient.make({ address: listener.address, protocol: "main", connectTimeout: "300 millis" }))
      )
      expect(error.reason._tag).toBe("ConnectTimeout")
      expect(yield* listener.connectionsBefore).toBeGreaterThanOrEqual(1)
    }).pipe(TestSupport.withRegistry))
})
