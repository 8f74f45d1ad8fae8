/**
 * What the disaggregation tests share: a prefill cluster and a decode cluster on one in-memory
 * network, a client of each, and the disaggregated client over them; and the engines' books of
 * pins, read back for the invariants (blocks pinned == released, each pin released at most once).
 */
import { MemorySocket } from "@mcore-effect/protocol"
import { TestCluster, type TestkitError } from "@mcore-effect/testkit"
import { Effect, type Scope } from "effect"
import { type ClientConfig, type ClientError, Disaggregated, InferenceClient, Transport } from "../../src/index.ts"

/** Options of {@link setup}. */
export interface SetupOptions {
  readonly protocol?: "main" | "pr-6497" | "reference" | undefined
  readonly stepMs?: number | undefined
  readonly decodeGrace?: Disaggregated.Options["decodeGrace"]
  readonly requestTimeout?: Disaggregated.Options["requestTimeout"]
  readonly client?: Partial<ClientConfig.ClientOptions> | undefined
  readonly observe?: Disaggregated.Options["observe"]
  /**
   * The members' clients as a wrapper gives them (a spread copy): the disaggregated client takes
   * its members through the `Service` interface alone (`start`, `releaseKvHandoff`), so a copy
   * must serve it as the client itself does.
   */
  readonly viaStart?: boolean | undefined
}

/** What {@link setup} gives. */
export interface Setup {
  readonly network: MemorySocket.Network
  readonly prefillCluster: TestCluster.Handle
  readonly decodeCluster: TestCluster.Handle
  readonly prefill: InferenceClient.Service
  readonly decode: InferenceClient.Service
  readonly disaggregated: Disaggregated.Disaggregated
  readonly client: InferenceClient.Service
}

/** Both clusters (one engine each), their clients, and the disaggregated client, in the scope. */
export const setup = (
  options?: SetupOptions
): Effect.Effect<Setup, TestkitError.TestkitError | ClientError.ClientError, Scope.Scope> =>
  Effect.gen(function*() {
    const network = new MemorySocket.Network()
    const protocol = options?.protocol ?? "main"
    const engine = { stepMs: options?.stepMs ?? 0, blockSizeTokens: 4 }
    const prefillCluster = yield* TestCluster.make({ engines: 1, protocol, network, engine })
    const decodeCluster = yield* TestCluster.make({ engines: 1, protocol, network, engine })
    const clientOf = (address: string) =>
      InferenceClient.make({ address, protocol, heartbeatTimeout: "1 second", drainTimeout: "200 millis", ...options?.client }).pipe(
        Effect.provide(Transport.layerMemory(network))
      )
    const prefill = yield* clientOf(prefillCluster.address)
    const decode = yield* clientOf(decodeCluster.address)
    const member = (client: InferenceClient.Service) => (options?.viaStart === true ? { ...client } : client)
    const disaggregated = yield* Disaggregated.make({
      prefill: [{ name: prefillCluster.address, client: member(prefill) }],
      decode: [{ name: decodeCluster.address, client: member(decode) }],
      decodeGrace: options?.decodeGrace ?? "30 seconds",
      requestTimeout: options?.requestTimeout,
      observe: options?.observe
    })
    return { network, prefillCluster, decodeCluster, prefill, decode, disaggregated, client: disaggregated.client }
  })

/** The prefill engine's pins: still pinned, released (in order), releases of nothing pinned. */
export const pinsOf = (cluster: TestCluster.Handle) =>
  Effect.map(cluster.engines[0]!.snapshot, (s) => ({
    pinned: s.pinned,
    released: s.released,
    unknownRelease: s.counters.unknownRelease
  }))
