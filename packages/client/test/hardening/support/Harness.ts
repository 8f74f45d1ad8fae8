/**
 * What the hardening tests share: a metrics registry of their own, logs kept quiet (the client
 * warns once per dropped message; the fuzz drops 100,000), reading the client's counters, and a
 * bound on waiting that turns a hang into a failure.
 */
import { TestSupport } from "@mcore-effect/testkit"
import { Effect, Metric } from "effect"
import { ClientMetrics } from "../../../src/index.ts"

/** A fresh metrics registry and warnings off (the testkit's). */
export const isolated = TestSupport.isolated

/** The testkit's hang guard. */
export const bounded = TestSupport.bounded

const dropped = (reason: "malformed" | "unknown_request") =>
  Metric.value(Metric.withAttributes(ClientMetrics.messagesDropped, { reason })).pipe(Effect.map((s) => s.count))

/** The client's counters, as numbers. */
export const counters = Effect.all({
  submitted: Metric.value(ClientMetrics.submitted).pipe(Effect.map((s) => s.count)),
  completed: Metric.value(ClientMetrics.completed).pipe(Effect.map((s) => s.count)),
  aborted: Metric.value(ClientMetrics.aborted).pipe(Effect.map((s) => s.count)),
  failed: Metric.value(ClientMetrics.failed).pipe(Effect.map((s) => s.count)),
  inFlight: Metric.value(ClientMetrics.inFlight).pipe(Effect.map((s) => s.value)),
  malformed: dropped("malformed"),
  unknownRequest: dropped("unknown_request")
})

/** A seeded generator of floats in [0, 1) (mulberry32), so a failing run can be replayed. */
export const random = (seed: number): () => number => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A seed from the environment variable `name`, else a fresh one. */
export const seedFrom = (name: string): number => Number(process.env[name] ?? (Date.now() >>> 0))
