import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Metric } from "effect"
import { ClientConfig, InferenceClient } from "../src/index.ts"
import * as StubCoordinator from "./support/StubCoordinator.ts"

const fromEnv = (env: Record<string, string>) =>
  ConfigProvider.layer(ConfigProvider.fromEnv({ env }))

describe("ClientConfig", () => {
  it("applies the defaults", () => {
    expect(ClientConfig.resolve({ address: "tcp://127.0.0.1:5555" })).toEqual({
      address: "tcp://127.0.0.1:5555",
      deserialize: false,
      hashing: { blockSizeTokens: null, prefixCachingPolicy: null },
      connectTimeoutMillis: 10_000,
      heartbeatIntervalMillis: 1_000,
      heartbeatTimeoutMillis: 5_000,
      requestTimeoutMillis: undefined,
      maxFrameBytes: 64 * 1024 * 1024,
      maxDecodedBytes: 256 * 1024 * 1024,
      curve: undefined
    })
  })

  it("takes durations in any Duration form", () => {
    const resolved = ClientConfig.resolve({
      address: "ipc:///tmp/x",
      connectTimeout: "2 seconds",
      heartbeatInterval: 250,
      heartbeatTimeout: { seconds: 3 },
      requestTimeout: "1 minute"
    })
    expect(resolved).toMatchObject({
      connectTimeoutMillis: 2_000,
      heartbeatIntervalMillis: 250,
      heartbeatTimeoutMillis: 3_000,
      requestTimeoutMillis: 60_000
    })
  })

  it.effect("reads every option from the environment", () =>
    Effect.gen(function*() {
      const options = yield* ClientConfig.config
      expect(options).toEqual({
        address: "tcp://127.0.0.1:5555",
        deserialize: true,
        blockSizeTokens: 64,
        prefixCachingPolicy: "longest_prefix",
        connectTimeout: expect.anything(),
        heartbeatInterval: expect.anything(),
        heartbeatTimeout: expect.anything(),
        requestTimeout: undefined
      })
      expect(ClientConfig.resolve(options)).toMatchObject({ connectTimeoutMillis: 3_000, heartbeatTimeoutMillis: 2_000 })
    }).pipe(Effect.provide(fromEnv({
      MCORE_COORDINATOR_ADDRESS: "tcp://127.0.0.1:5555",
      MCORE_DESERIALIZE: "true",
      MCORE_BLOCK_SIZE_TOKENS: "64",
      MCORE_PREFIX_CACHING_POLICY: "longest_prefix",
      MCORE_CONNECT_TIMEOUT: "3 seconds",
      MCORE_HEARTBEAT_INTERVAL: "500 millis",
      MCORE_HEARTBEAT_TIMEOUT: "2 seconds"
    }))))

  it.effect("refuses a policy it does not know, and a missing address", () =>
    Effect.gen(function*() {
      const read = Effect.gen(function*() {
        return yield* ClientConfig.config
      })
      const missing = yield* Effect.flip(read.pipe(Effect.provide(fromEnv({}))))
      expect(missing.message).toContain("MCORE_COORDINATOR_ADDRESS")
      const policy = yield* Effect.flip(read.pipe(
        Effect.provide(fromEnv({ MCORE_COORDINATOR_ADDRESS: "tcp://127.0.0.1:1", MCORE_PREFIX_CACHING_POLICY: "random" }))
      ))
      expect(policy.message).toContain("MCORE_PREFIX_CACHING_POLICY")
    }))

  it.live("InferenceClient.layerConfig connects to the configured address", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const pending = yield* InferenceClient.InferenceClient.use((client) => client.pendingCount).pipe(
        Effect.provide(InferenceClient.layerConfig().pipe(Layer.provide(fromEnv({ MCORE_COORDINATOR_ADDRESS: stub.address }))))
      )
      expect(pending).toBe(0)
      expect((yield* stub.take).frames.length).toBe(1)
    }).pipe(Effect.provideService(Metric.MetricRegistry, new Map())))
})
