import { Dialects } from "@mcore-effect/protocol"
import { describe, expect, it } from "@effect/vitest"
import { TestSupport } from "@mcore-effect/testkit"
import { ConfigProvider, Effect, Layer, Metric, Result } from "effect"
import * as Zmq from "zeromq"
import { ClientConfig, InferenceClient } from "../src/index.ts"
import * as StubCoordinator from "./support/StubCoordinator.ts"

const resolved = (options: ClientConfig.ClientOptions) => Result.getOrThrow(ClientConfig.resolve(options))

const fromEnv = (env: Record<string, string>) =>
  ConfigProvider.layer(ConfigProvider.fromEnv({ env }))

describe("ClientConfig", () => {
  it("applies the defaults", () => {
    expect(resolved({ address: "tcp://127.0.0.1:5555", protocol: "main" })).toEqual({
      address: "tcp://127.0.0.1:5555",
      dialect: Dialects.get("main"),
      deserialize: false,
      hashing: { blockSizeTokens: null, prefixCachingPolicy: null },
      connectTimeoutMillis: 10_000,
      ackTimeoutMillis: 1_000,
      heartbeatIntervalMillis: 1_000,
      heartbeatTimeoutMillis: 5_000,
      requestTimeoutMillis: undefined,
      maxFrameBytes: 64 * 1024 * 1024,
      maxDecodedBytes: 256 * 1024 * 1024,
      maxQueuedBytes: 1024 * 1024 * 1024,
      curve: undefined,
      closeTimeoutMillis: 1_000,
      drainTimeoutMillis: 30_000
    })
  })

  it("takes durations in any Duration form", () => {
    const options = resolved({
      address: "ipc:///tmp/x",
      protocol: "main",
      connectTimeout: "2 seconds",
      heartbeatInterval: 250,
      heartbeatTimeout: { seconds: 3 },
      requestTimeout: "1 minute"
    })
    expect(options).toMatchObject({
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
        protocol: "reference",
        deserialize: true,
        blockSizeTokens: 64,
        prefixCachingPolicy: "longest_prefix",
        connectTimeout: expect.anything(),
        ackTimeout: expect.anything(),
        heartbeatInterval: expect.anything(),
        heartbeatTimeout: expect.anything(),
        requestTimeout: undefined,
        closeTimeout: expect.anything(),
        drainTimeout: expect.anything(),
        maxFrameBytes: 1_048_576,
        maxDecodedBytes: 4_194_304,
        curve: undefined
      })
      expect(resolved(options)).toMatchObject({
        connectTimeoutMillis: 3_000,
        ackTimeoutMillis: 300,
        heartbeatTimeoutMillis: 2_000,
        closeTimeoutMillis: 250,
        drainTimeoutMillis: 5_000
      })
    }).pipe(Effect.provide(fromEnv({
      MCORE_COORDINATOR_ADDRESS: "tcp://127.0.0.1:5555",
      // The one dialect whose coordinator takes the client's block hashes (set below).
      MCORE_PROTOCOL: "reference",
      MCORE_DESERIALIZE: "true",
      MCORE_BLOCK_SIZE_TOKENS: "64",
      MCORE_PREFIX_CACHING_POLICY: "longest_prefix",
      MCORE_CONNECT_TIMEOUT: "3 seconds",
      MCORE_ACK_TIMEOUT: "300 millis",
      MCORE_HEARTBEAT_INTERVAL: "500 millis",
      MCORE_HEARTBEAT_TIMEOUT: "2 seconds",
      MCORE_CLOSE_TIMEOUT: "250 millis",
      MCORE_DRAIN_TIMEOUT: "5 seconds",
      MCORE_MAX_FRAME_BYTES: "1048576",
      MCORE_MAX_DECODED_BYTES: "4194304"
    }))))

  it.effect("leaves the limits and CurveZMQ unset when their variables are", () =>
    Effect.gen(function*() {
      const options = yield* ClientConfig.config
      expect(options).toMatchObject({ maxFrameBytes: undefined, maxDecodedBytes: undefined, curve: undefined })
      expect(resolved(options)).toMatchObject({
        maxFrameBytes: ClientConfig.defaults.maxFrameBytes,
        maxDecodedBytes: ClientConfig.defaults.maxDecodedBytes,
        curve: undefined
      })
    }).pipe(Effect.provide(fromEnv({ MCORE_COORDINATOR_ADDRESS: "tcp://127.0.0.1:5555", MCORE_PROTOCOL: "main" }))))

  it.effect("refuses limits that are not integers", () =>
    Effect.gen(function*() {
      for (const [name, value] of [["MCORE_MAX_FRAME_BYTES", "64 MiB"], ["MCORE_MAX_DECODED_BYTES", "1.5"]] as const) {
        const error = yield* Effect.flip(
          Effect.gen(function*() {
            return yield* ClientConfig.config
          }).pipe(Effect.provide(fromEnv({ MCORE_COORDINATOR_ADDRESS: "tcp://127.0.0.1:5555", MCORE_PROTOCOL: "main", [name]: value })))
        )
        expect(error.message).toContain(name)
      }
    }))

  const server = Zmq.curveKeyPair()
  const client = Zmq.curveKeyPair()

  it.effect("reads the CurveZMQ keys, the secret one unwrapped only into the option", () =>
    Effect.gen(function*() {
      const options = yield* ClientConfig.config
      expect(options.curve).toEqual({ serverKey: server.publicKey, publicKey: client.publicKey, secretKey: client.secretKey })
      expect(ClientConfig.optionProblem(options)).toBeUndefined()
    }).pipe(Effect.provide(fromEnv({
      MCORE_COORDINATOR_ADDRESS: "tcp://127.0.0.1:5555",
      MCORE_PROTOCOL: "main",
      MCORE_CURVE_SERVER_KEY: server.publicKey,
      MCORE_CURVE_PUBLIC_KEY: client.publicKey,
      MCORE_CURVE_SECRET_KEY: client.secretKey
    }))))

  it.effect("takes the server key alone (the client makes a key pair)", () =>
    Effect.gen(function*() {
      const options = yield* ClientConfig.config
      expect(options.curve).toEqual({ serverKey: server.publicKey, publicKey: undefined, secretKey: undefined })
      expect(ClientConfig.optionProblem(options)).toBeUndefined()
    }).pipe(Effect.provide(fromEnv({ MCORE_COORDINATOR_ADDRESS: "tcp://127.0.0.1:5555", MCORE_PROTOCOL: "main", MCORE_CURVE_SERVER_KEY: server.publicKey }))))

  it.effect("refuses client keys without the server key, never printing the secret", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Effect.gen(function*() {
          return yield* ClientConfig.config
        }).pipe(Effect.provide(fromEnv({
          MCORE_COORDINATOR_ADDRESS: "tcp://127.0.0.1:5555",
          MCORE_PROTOCOL: "main",
          MCORE_CURVE_PUBLIC_KEY: client.publicKey,
          MCORE_CURVE_SECRET_KEY: client.secretKey
        })))
      )
      expect(error.message).toContain("MCORE_CURVE_SERVER_KEY")
      expect(error.message).not.toContain(client.secretKey)
      expect(String(error)).not.toContain(client.secretKey)
    }))

  it.effect("leaves a half key pair to the client's own check", () =>
    Effect.gen(function*() {
      const options = yield* ClientConfig.config
      expect(ClientConfig.optionProblem(options)).toEqual({
        name: "curve",
        why: "give both publicKey and secretKey, or neither"
      })
    }).pipe(Effect.provide(fromEnv({
      MCORE_COORDINATOR_ADDRESS: "tcp://127.0.0.1:5555",
      MCORE_PROTOCOL: "main",
      MCORE_CURVE_SERVER_KEY: server.publicKey,
      MCORE_CURVE_SECRET_KEY: client.secretKey
    }))))

  it.effect("refuses a policy it does not know, and a missing address", () =>
    Effect.gen(function*() {
      const read = Effect.gen(function*() {
        return yield* ClientConfig.config
      })
      const missing = yield* Effect.flip(read.pipe(Effect.provide(fromEnv({}))))
      expect(missing.message).toContain("MCORE_COORDINATOR_ADDRESS")
      expect(missing.message).toContain("is not set: set it to the coordinator's address")
      const policy = yield* Effect.flip(read.pipe(
        Effect.provide(fromEnv({ MCORE_COORDINATOR_ADDRESS: "tcp://127.0.0.1:1", MCORE_PROTOCOL: "main", MCORE_PREFIX_CACHING_POLICY: "random" }))
      ))
      expect(policy.message).toContain("MCORE_PREFIX_CACHING_POLICY")
    }))

  it.live("InferenceClient.layerConfig connects to the configured address", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const pending = yield* InferenceClient.InferenceClient.use((client) => client.pendingCount).pipe(
        Effect.provide(
          InferenceClient.layerConfig().pipe(
            Layer.provide(fromEnv({ MCORE_COORDINATOR_ADDRESS: stub.address, MCORE_PROTOCOL: stub.protocol }))
          )
        )
      )
      expect(pending).toBe(0)
      expect((yield* stub.take).frames.length).toBe(1)
    }).pipe(TestSupport.withRegistry))

  describe("one validation of every duration, client-level and per request", () => {
    it("refuses a negative or non-duration option with its name", () => {
      expect(ClientConfig.optionProblem({ address: "ipc:///tmp/x", protocol: "main", requestTimeout: -1 })).toMatchObject({ name: "requestTimeout" })
      expect(ClientConfig.optionProblem({ address: "ipc:///tmp/x", protocol: "main", requestTimeout: "banana" as never })).toEqual({
        name: "requestTimeout",
        why: "not a duration: \"banana\""
      })
      expect(ClientConfig.optionProblem({ address: "ipc:///tmp/x", protocol: "main", heartbeatInterval: "Infinity" })).toEqual({
        name: "heartbeatInterval",
        why: "must be finite"
      })
      expect(ClientConfig.durationMillis("timeout", -1)._tag).toBe("Failure")
      expect(ClientConfig.durationMillis("timeout", "1 second")).toEqual(Result.succeed(1000))
    })

    it("takes an infinite requestTimeout as no deadline", () => {
      expect(resolved({ address: "ipc:///tmp/x", protocol: "main", requestTimeout: "Infinity" }).requestTimeoutMillis).toBeUndefined()
    })

    // Regression: `requestTimeout: -1` was clamped to 0 (every request expired at once), and
    // `requestTimeout: "banana"` threw inside `make` (a defect, not a typed error).
    for (const requestTimeout of [-1, "banana"]) {
      it.effect(`make refuses requestTimeout: ${JSON.stringify(requestTimeout)} with InvalidArgument, opening nothing`, () =>
        Effect.gen(function*() {
          const error = yield* Effect.flip(
            InferenceClient.make({ address: "tcp://127.0.0.1:1", protocol: "main", requestTimeout: requestTimeout as never }).pipe(Effect.scoped)
          )
          expect(error.reason._tag).toBe("InvalidArgument")
          expect(error.reason).toMatchObject({ name: "requestTimeout" })
        }).pipe(TestSupport.withRegistry))
    }
  })
})
