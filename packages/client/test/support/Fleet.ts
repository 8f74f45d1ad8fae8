/**
 * What the fleet tests share: several test clusters (each a coordinator with its engines) on one
 * in-memory network, and a fleet over them reaching them through `Transport.memory`.
 */
import { MemorySocket } from "@mcore-effect/protocol"
import { Generation, type TestCluster, TestFleet, type TestkitError } from "@mcore-effect/testkit"
import { Effect, Exit, type Scope } from "effect"
import { type ClientError, Fleet, Transport } from "../../src/index.ts"

/** `count` clusters on a fresh in-memory network and a fleet over them (the fleet's options merged). */
export const fleetSetup = (
  count: number,
  options?: {
    readonly cluster?: Omit<TestFleet.Options, "network" | "coordinators"> | undefined
    readonly fleet?: Partial<Fleet.FleetOptions> | undefined
  }
): Effect.Effect<
  {
    readonly network: MemorySocket.Network
    readonly clusters: ReadonlyArray<TestCluster.Handle>
    readonly testFleet: TestFleet.Handle
    readonly fleet: Fleet.FleetService
    /** Another fleet over the same coordinators, sharing nothing with `fleet` (another process's). */
    readonly another: Effect.Effect<Fleet.FleetService, ClientError.ClientError, Scope.Scope>
  },
  TestkitError.TestkitError | ClientError.ClientError,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const network = new MemorySocket.Network()
    const testFleet = yield* TestFleet.make({ engines: 2, ...options?.cluster, coordinators: count, network })
    const clusters = testFleet.clusters
    const fleet = yield* Fleet.make({
      coordinators: testFleet.addresses,
      protocol: "reference",
      rejoinBackoff: "20 millis",
      rejoinBackoffMax: "200 millis",
      connectTimeout: "500 millis",
      ...options?.fleet
    }).pipe(Effect.provide(Transport.layerMemory(network)))
    const another = Fleet.make({ coordinators: testFleet.addresses, protocol: "reference" }).pipe(
      Effect.provide(Transport.layerMemory(network))
    )
    return { network, clusters, testFleet, fleet, another }
  })

/** Requests the coordinator of each cluster has routed to its engines so far. */
export const routedCounts = (clusters: ReadonlyArray<TestCluster.Handle>) =>
  Effect.forEach(clusters, (c) =>
    Effect.map(c.coordinator.snapshot, (s) =>
      s.engines.reduce((sum, e) => sum + e.received.filter((d) => d.name === "SUBMIT_REQUEST").length, 0)))

/** A prompt of `blocks` blocks of 64 tokens, the first `shared` of them common to every prompt with the same `group`. */
export const promptOf = (group: number, own: number, blocks: number, shared: number): Array<number> => {
  const tokens: Array<number> = []
  for (let b = 0; b < blocks; b++) {
    for (let t = 0; t < 64; t++) tokens.push(b < shared ? 1 + ((group * 131 + b * 64 + t) % 900) : 1 + ((own * 977 + group * 31 + b * 64 + t * 7) % 900))
  }
  return tokens
}

/** How a request ended, for tests that count: its tokens were right, wrong, or it failed with a reason. */
export const outcomeOf = (prompt: ReadonlyArray<number>, count: number) => (exit: Exit.Exit<ReadonlyArray<number>, { readonly reason: { readonly _tag: string } }>): string => {
  if (Exit.isSuccess(exit)) {
    return JSON.stringify(exit.value) === JSON.stringify(Generation.tokens(prompt, count)) ? "ok" : "wrong"
  }
  const error = exit.cause.reasons.find((r) => r._tag === "Fail")
  return error?._tag === "Fail" ? error.error.reason._tag : "defect"
}
