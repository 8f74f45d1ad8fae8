/**
 * The connection's life: a coordinator that stops answering (heartbeats tell), one that is
 * killed, one that comes back; and a client that leaves nothing running when it is closed.
 * The coordinator runs as a process of its own, so it can be stopped and killed for real.
 */
import { describe, expect, it } from "@effect/vitest"
import { TestSupport } from "@mcore-effect/testkit"
import { fileURLToPath } from "node:url"
import { Effect, Fiber, Metric, Schedule } from "effect"
import { ClientMetrics, InferenceClient } from "../src/index.ts"
import * as ChildCoordinator from "./support/ChildCoordinator.ts"
import { withRegistry } from "./support/Cluster.ts"

/** A bound on waiting, far above the heartbeat timeout: exceeding it means the client hung. */
const bounded = TestSupport.bounded("the client", "10 seconds")

const heartbeats = { heartbeatInterval: 100, heartbeatTimeout: 600 } as const

describe("liveness", () => {
  it.live("a coordinator that stops answering (SIGSTOP) fails pending requests with CoordinatorLost", () =>
    Effect.gen(function*() {
      const coordinator = yield* ChildCoordinator.make()
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: coordinator.protocol, ...heartbeats })
      yield* client.submit([1])
      expect(yield* client.connected).toBe(true)
      yield* coordinator.signal("SIGSTOP")
      const pending = yield* Effect.forkChild(
        Effect.forEach([1, 2, 3], (n) => client.submit([n]), { concurrency: "unbounded" })
      )
      const error = yield* bounded(Effect.flip(Fiber.join(pending)))
      expect(error.reason._tag).toBe("CoordinatorLost")
      expect(yield* client.pendingCount).toBe(0)
      expect((yield* Effect.flip(client.submit([4]))).reason._tag).toBe("CoordinatorLost")
      expect((yield* Effect.flip(client.pauseEngines())).reason._tag).toBe("CoordinatorLost")
      expect((yield* Metric.value(ClientMetrics.failed)).count).toBe(3)
      expect(yield* client.connected).toBe(false)
      yield* coordinator.signal("SIGCONT")
    }).pipe(withRegistry), { timeout: 30_000 })

  it.live("a coordinator killed mid-flight fails pending requests with CoordinatorLost; a new one takes over", () =>
    Effect.gen(function*() {
      const coordinator = yield* ChildCoordinator.make()
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: coordinator.protocol, ...heartbeats })
      yield* coordinator.signal("SIGSTOP")
      const pending = yield* Effect.forkChild(
        Effect.forEach([1, 2, 3], (n) => client.submit([n]), { concurrency: "unbounded" })
      )
      yield* coordinator.signal("SIGKILL")
      yield* coordinator.exited
      expect((yield* bounded(Effect.flip(Fiber.join(pending)))).reason._tag).toBe("CoordinatorLost")

      const successor = yield* ChildCoordinator.make(coordinator.address)
      expect(successor.address).toBe(coordinator.address)
      const reply = yield* bounded(
        client.submit([9, 9]).pipe(
          Effect.retry({ while: (e) => e.reason._tag === "CoordinatorLost", schedule: Schedule.spaced("20 millis") })
        )
      )
      expect((reply as InferenceClient.RawReply).echo).toEqual([9, 9])
      expect(yield* client.connected).toBe(true)
    }).pipe(withRegistry), { timeout: 30_000 })

  it.live("a program that closes its client exits by itself; what was pending failed with ClientClosed", () =>
    Effect.gen(function*() {
      const coordinator = yield* ChildCoordinator.make()
      const program = fileURLToPath(new URL("./support/clientLifetime.ts", import.meta.url))
      const { code, messages } = yield* TestSupport.runProgram(program, [coordinator.address, coordinator.protocol], "10 seconds")
      expect(code).toBe(0)
      expect(messages).toEqual([{ latency: "number", pending: "ClientClosed" }])
    }), { timeout: 30_000 })
})
