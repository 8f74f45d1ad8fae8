import { describe, expect, it } from "@effect/vitest"
import { Headers } from "@mcore-effect/protocol"
import { Effect } from "effect"
import { ControlState, TestCoordinator } from "../src/index.ts"
import * as RawClient from "./support/RawClient.ts"
import * as RawEngine from "./support/RawEngine.ts"

const H = Headers.values

/** Signals that bring a fresh coordinator (RUNNING) into a state. */
const pathTo: Record<ControlState.State, ReadonlyArray<ControlState.Signal>> = {
  RUNNING: [],
  PAUSED: ["PAUSE"],
  SUSPENDED: ["PAUSE", "SUSPEND"]
}

/** Every signal in every state: what the table says must happen (Megatron's state.py). */
const rows: ReadonlyArray<readonly [ControlState.State, ControlState.Signal, ControlState.Outcome["_tag"], ControlState.State]> = [
  ["RUNNING", "PAUSE", "Applied", "PAUSED"],
  ["PAUSED", "PAUSE", "Idempotent", "PAUSED"],
  ["SUSPENDED", "PAUSE", "Idempotent", "SUSPENDED"],
  ["RUNNING", "UNPAUSE", "Rejected", "RUNNING"],
  ["PAUSED", "UNPAUSE", "Applied", "RUNNING"],
  ["SUSPENDED", "UNPAUSE", "Rejected", "SUSPENDED"],
  ["RUNNING", "SUSPEND", "Rejected", "RUNNING"],
  ["PAUSED", "SUSPEND", "Applied", "SUSPENDED"],
  ["SUSPENDED", "SUSPEND", "Rejected", "SUSPENDED"],
  ["RUNNING", "RESUME", "Rejected", "RUNNING"],
  ["PAUSED", "RESUME", "Rejected", "PAUSED"],
  ["SUSPENDED", "RESUME", "Applied", "PAUSED"],
  ["RUNNING", "STOP", "Rejected", "RUNNING"],
  ["PAUSED", "STOP", "Applied", "RUNNING"],
  ["SUSPENDED", "STOP", "Applied", "RUNNING"],
  ["RUNNING", "SET_GENERATION_EPOCH", "Applied", "RUNNING"],
  ["PAUSED", "SET_GENERATION_EPOCH", "Applied", "PAUSED"],
  ["SUSPENDED", "SET_GENERATION_EPOCH", "Applied", "SUSPENDED"]
]

const frameOf = (signal: ControlState.Signal): ReadonlyArray<number> =>
  signal === "SET_GENERATION_EPOCH" ? [H.SET_GENERATION_EPOCH, 3] : [H[signal]]

describe("ControlState", () => {
  it("the table covers every signal in every state", () => {
    expect(rows.length).toBe(ControlState.State.literals.length * ControlState.Signal.literals.length)
    for (const [state, signal, outcome, next] of rows) {
      const result = ControlState.apply(state, signal)
      expect([state, signal, result._tag]).toEqual([state, signal, outcome])
      if (result._tag === "Applied") expect(result.next).toBe(next)
    }
  })

  describe("over the wire, row by row: the coordinator's state, and what every engine receives", () => {
    for (const [state, signal, outcome, next] of rows) {
      it.effect(`${signal} in ${state}: ${outcome}${outcome === "Applied" ? ` -> ${next}` : ""}`, () =>
        Effect.gen(function*() {
          const coordinator = yield* TestCoordinator.make()
          const engines = [
            yield* RawEngine.make(coordinator.address, "mp-coord-0"),
            yield* RawEngine.make(coordinator.address, "mp-coord-1")
          ]
          yield* coordinator.awaitEngines(2)
          const client = yield* RawClient.make(coordinator.address)
          yield* client.connect
          for (const step of pathTo[state]) yield* client.signal(...(frameOf(step) as [number]))
          yield* client.signal(...(frameOf(signal) as [number, ...Array<number>]))
          // A profiler signal is broadcast in any state: once it arrives, everything before it was handled.
          yield* client.signal(H.START_CUDA_PROFILER)
          const expected = [
            ...pathTo[state].map(frameOf),
            ...(outcome === "Applied" ? [frameOf(signal)] : []),
            [H.START_CUDA_PROFILER]
          ]
          for (const engine of engines) {
            const seen: Array<ReadonlyArray<unknown>> = []
            for (let i = 0; i < expected.length; i++) seen.push(yield* engine.nextMetadata())
            expect(seen).toEqual(expected)
          }
          const snapshot = yield* coordinator.snapshot
          expect(snapshot.state).toBe(next)
          expect(snapshot.counters.controlRejected).toBe(outcome === "Rejected" ? 1 : 0)
          expect(snapshot.counters.controlIdempotent).toBe(outcome === "Idempotent" ? 1 : 0)
        }).pipe(Effect.scoped))
    }
  })
})
