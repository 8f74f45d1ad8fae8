/**
 * What the client's loopback tests share: a fresh metrics registry per test (from the testkit's
 * `TestSupport`), and a test cluster
 * (coordinator and engines from the testkit) with a client connected to it.
 */
import { TestCluster, type TestkitError, TestSupport } from "@mcore-effect/testkit"
import { Effect, type Scope } from "effect"
import { type ClientConfig, type ClientError, InferenceClient } from "../../src/index.ts"

/** Runs `effect` with a registry of its own, so its metrics start at zero (the testkit's). */
export const withRegistry = TestSupport.withRegistry

/** A cluster (two engines unless told otherwise) and a client connected to it, in the scope. */
export const setup = (
  options?: TestCluster.Options & { readonly client?: Partial<ClientConfig.ClientOptions> }
): Effect.Effect<
  { readonly cluster: TestCluster.Handle; readonly client: InferenceClient.Service },
  TestkitError.TestkitError | ClientError.ClientError,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const cluster = yield* TestCluster.make({ engines: 2, ...options })
    const client = yield* InferenceClient.make({ address: cluster.address, protocol: cluster.protocol, ...options?.client })
    return { cluster, client }
  })
