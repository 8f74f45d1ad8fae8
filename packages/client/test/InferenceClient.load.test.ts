/**
 * Many requests at once: every one finishes exactly once, with its own reply, and nothing is left
 * behind. Against a coordinator stand-in in its own process that answers at once (the testkit's
 * full coordinator and engines would spend most of the time generating).
 */
import { describe, expect, it } from "@effect/vitest"
import { TestSupport } from "@mcore-effect/testkit"
import { Effect, Metric } from "effect"
import { ClientMetrics, InferenceClient } from "../src/index.ts"
import * as ChildCoordinator from "./support/ChildCoordinator.ts"

const COUNT = 100_000

describe("InferenceClient under load", () => {
  it.live(`${COUNT.toLocaleString("en")} concurrent submissions all complete exactly once, each with its own reply`, () =>
    Effect.gen(function*() {
      const coordinator = yield* ChildCoordinator.make()
      const client = yield* InferenceClient.make({ address: coordinator.address, protocol: coordinator.protocol })
      const promptOf = (i: number) => [i % 1000, Math.floor(i / 1000)]
      const completions = new Uint8Array(COUNT)
      let mismatched = 0
      yield* Effect.forEach(
        Array.from({ length: COUNT }, (_, i) => i),
        (i) =>
          Effect.map(client.submit(promptOf(i)), (reply) => {
            completions[i]!++
            // The stand-in echoes the prompt frame: distinct prompts show a reply handed to the wrong request.
            const echo = (reply as InferenceClient.RawReply).echo as ReadonlyArray<number>
            if (echo[0] !== promptOf(i)[0] || echo[1] !== promptOf(i)[1]) mismatched++
          }),
        { concurrency: "unbounded", discard: true }
      )
      expect(completions.every((n) => n === 1)).toBe(true)
      expect(mismatched).toBe(0)
      expect(yield* client.pendingCount).toBe(0)
      expect((yield* Metric.value(ClientMetrics.submitted)).count).toBe(COUNT)
      expect((yield* Metric.value(ClientMetrics.completed)).count).toBe(COUNT)
      expect((yield* Metric.value(ClientMetrics.inFlight)).value).toBe(0)
      for (const reason of ["malformed", "unknown_request"]) {
        expect((yield* Metric.value(Metric.withAttributes(ClientMetrics.messagesDropped, { reason }))).count).toBe(0)
      }
    }).pipe(TestSupport.withRegistry), { timeout: 120_000 })
})
