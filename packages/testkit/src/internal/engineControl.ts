/**
 * A test engine's control signals, as Megatron's engine obeys them: PAUSE / UNPAUSE / SUSPEND /
 * RESUME / STOP move its state (PAUSE outside RUNNING is ignored, any other signal not valid in
 * the state is counted and dropped, where Megatron asserts); STOP ends the engine, which tells
 * the coordinator with DISCONNECT. core_v0.16's engine has no states to check.
 *
 * @since 0.2.0
 * @internal
 */
import { Headers } from "@mcore-effect/protocol"
import type { EngineState } from "./engineConfig.ts"
import type { EngineShared } from "./engineShared.ts"
import { packHeader } from "@mcore-effect/coordinator/internal"

const H = Headers.values

/** The state `header` moves `s` to, or `undefined` when the signal is not valid there. */
const next = (s: EngineState, header: number): EngineState | undefined =>
  header === H.PAUSE
    ? (s === "RUNNING" ? "PAUSED" : s) // any other state ignores PAUSE
    : header === H.UNPAUSE
    ? (s === "PAUSED" ? "RUNNING" : undefined)
    : header === H.SUSPEND
    ? (s === "PAUSED" ? "SUSPENDED" : undefined)
    : header === H.RESUME
    ? (s === "SUSPENDED" ? "PAUSED" : undefined)
    : (s === "PAUSED" || s === "SUSPENDED" ? "STOPPED" : undefined)

/** A control signal (PAUSE, UNPAUSE, SUSPEND, RESUME or STOP). */
export const control = (e: EngineShared, header: number): void => {
  if (!e.config.wire.controlStates) return obey(e, header)
  const to = next(e.state, header)
  if (to === undefined) {
    e.counters.invalidSignal++
    e.config.log("Warn", `engine ${e.config.identity}: ${Headers.nameOf(header as Headers.Header)} in state ${e.state}; ignored`)
    return
  }
  e.state = to
  if (to === "STOPPED") {
    // Megatron's engine leaves its loop and tells the coordinator it is gone.
    e.writer.send([packHeader(e.config.wire.DISCONNECT!)])
  }
  e.wake()
}

/**
 * core_v0.16's engine: no states to check, flags (`running`, `suspend_signal`) set by each
 * signal; PAUSE and STOP acknowledged to the coordinator every time (`[6]`, `[11]`), as its
 * `schedule_requests` does, even a second PAUSE (which kills that coordinator).
 */
const obey = (e: EngineShared, header: number): void => {
  const wire = e.config.wire
  const s = e.state
  if (header === H.PAUSE) {
    if (s === "RUNNING") e.state = "PAUSED"
    e.writer.send([packHeader(wire.PAUSE_ACK!)])
  } else if (header === H.UNPAUSE) {
    if (s === "PAUSED" || s === "SUSPENDED") e.state = "RUNNING"
  } else if (header === H.SUSPEND) {
    if (s === "PAUSED") e.state = "SUSPENDED"
  } else if (header === H.RESUME) {
    if (s === "SUSPENDED") e.state = "PAUSED"
  } else {
    e.state = "STOPPED"
    e.writer.send([packHeader(wire.STOP_ACK!)])
  }
  e.wake()
}
