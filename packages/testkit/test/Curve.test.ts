import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Zmq from "zeromq"
import { TestCluster, TestCoordinator, TestEngine } from "../src/index.ts"

describe("CurveZMQ", () => {
  it.effect("a coordinator with a key pair: engines holding its public key register and answer", () =>
    Effect.gen(function*() {
      const keys = Zmq.curveKeyPair()
      const cluster = yield* TestCluster.make({ engines: 2, coordinator: { curve: keys } })
      expect(cluster.coordinator.curvePublicKey).toBe(keys.publicKey)
      expect((yield* cluster.coordinator.snapshot).engines).toHaveLength(2)
    }).pipe(Effect.scoped))

  it.live("an engine holding another server key is never admitted", () =>
    Effect.gen(function*() {
      const coordinator = yield* TestCoordinator.make({ curve: Zmq.curveKeyPair() })
      const wrong = yield* TestEngine.make({
        coordinatorAddress: coordinator.address,
        curve: { serverKey: Zmq.curveKeyPair().publicKey, ...Zmq.curveKeyPair() }
      })
      const plain = yield* TestEngine.make({ coordinatorAddress: coordinator.address })
      const right = yield* TestEngine.make({
        coordinatorAddress: coordinator.address,
        curve: { serverKey: coordinator.curvePublicKey!, ...Zmq.curveKeyPair() }
      })
      yield* coordinator.awaitEngines(1)
      // Proving an absence needs a quiet window; the right engine registers well within it.
      yield* Effect.sleep("300 millis")
      expect((yield* coordinator.snapshot).engines.map((e) => e.identity)).toEqual([right.identity])
      expect((yield* wrong.snapshot).registrations).toBe(0)
      expect((yield* plain.snapshot).registrations).toBe(0)
    }).pipe(Effect.scoped))

  it.effect("refuses keys that are not Z85", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(TestCoordinator.make({ curve: { publicKey: "short", secretKey: "x" } }))
      expect(error.reason._tag).toBe("InvalidOption")
    }).pipe(Effect.scoped))
})
