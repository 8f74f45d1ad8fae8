import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Layer } from "effect"
import { TestCluster, TestCoordinator, TestEngine, TestSupport } from "../src/index.ts"
import * as RawClient from "./support/RawClient.ts"

const script = fileURLToPath(new URL("./support/exitsOnItsOwn.ts", import.meta.url))

describe("Lifecycle", () => {
  it.effect("closing the scope leaves nothing running: a process using the testkit exits by itself", () =>
    // A bound, not a speed check: a process that never exits is killed and fails here.
    TestSupport.runProgram(script).pipe(Effect.map(({ code, stdout: out }) => {
      expect(out).toContain("scope closed")
      expect(code).toBe(0)
    })))

  it.effect("the coordinator's address is free again once its scope closes (tcp and ipc)", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "testkit-"))
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
      for (const requested of ["tcp://127.0.0.1:0", `ipc://${join(dir, "coordinator.sock")}`]) {
        const address = yield* Effect.gen(function*() {
          const cluster = yield* TestCluster.make({ engines: 1, coordinator: { address: requested } })
          const client = yield* RawClient.make(cluster.address)
          yield* client.connect
          yield* client.submit(0, "the cat", { params: { num_tokens_to_generate: 1 } })
          yield* client.nextReply()
          return cluster.address
        }).pipe(Effect.scoped)
        const again = yield* TestCoordinator.make({ address }).pipe(Effect.map((c) => c.address), Effect.scoped)
        expect(again).toBe(address)
      }
    }).pipe(Effect.scoped))

  it.effect("layers: a coordinator and an engine as services, released with the layer", () =>
    Effect.gen(function*() {
      const coordinatorLayer = TestCoordinator.layer({ policy: "load_balanced" })
      const engineLayer = Layer.unwrap(
        Effect.gen(function*() {
          const coordinator = yield* TestCoordinator.TestCoordinator
          return TestEngine.layer({ coordinatorAddress: coordinator.address, rank: 3 })
        })
      )
      const address = yield* Effect.gen(function*() {
        const coordinator = yield* TestCoordinator.TestCoordinator
        const engine = yield* TestEngine.TestEngine
        const snapshot = yield* coordinator.awaitEngines(1)
        expect(snapshot.engines[0]!.identity).toBe(engine.identity)
        const client = yield* RawClient.make(coordinator.address)
        yield* client.connect
        yield* client.submit(0, "the cat", { params: { num_tokens_to_generate: 1 } })
        expect((yield* client.nextReply()).requestId).toBe(0)
        return coordinator.address
      }).pipe(Effect.scoped, Effect.provide(Layer.provideMerge(engineLayer, coordinatorLayer)))
      // Released: the address can be bound again.
      expect(yield* TestCoordinator.make({ address }).pipe(Effect.map((c) => c.address), Effect.scoped)).toBe(address)
      const cluster = yield* TestCluster.TestCluster.pipe(Effect.provide(TestCluster.layer({ engines: 2 })))
      expect(cluster.engines.map((e) => e.identity)).toEqual(["mp-coord-0", "mp-coord-1"])
    }))
})
