/**
 * The coordinator's control-signal state machine, as a table (Megatron's
 * `data_parallel_inference_coordinator/state.py` `CONTROL_TRANSITIONS`). A signal allowed in the
 * current state moves the coordinator and is broadcast to every engine; a redundant one (PAUSE
 * while already paused) is dropped silently; anything else is dropped with a warning.
 *
 * @since 0.1.0
 */
import { Headers } from "@mcore-effect/protocol"
import * as Schema from "effect/Schema"

/**
 * The coordinator's control state.
 *
 * @category schemas
 * @since 0.1.0
 */
export const State = Schema.Literals(["RUNNING", "PAUSED", "SUSPENDED"])

/**
 * @category models
 * @since 0.1.0
 */
export type State = typeof State.Type

/**
 * The signals the state machine governs (profiler signals are not among them: they are
 * broadcast in any state).
 *
 * @category schemas
 * @since 0.1.0
 */
export const Signal = Schema.Literals(["PAUSE", "UNPAUSE", "SUSPEND", "RESUME", "STOP", "SET_GENERATION_EPOCH"])

/**
 * @category models
 * @since 0.1.0
 */
export type Signal = typeof Signal.Type

/**
 * One row of the table.
 *
 * @category models
 * @since 0.1.0
 */
export interface Transition {
  /** States the signal may be applied from. */
  readonly allowedFrom: ReadonlyArray<State>
  /** The state after the signal is applied (and broadcast); `null` leaves it unchanged. */
  readonly next: State | null
  /** States in which the signal is a silent no-op rather than a warned rejection. */
  readonly idempotentIn: ReadonlyArray<State>
}

const ALL: ReadonlyArray<State> = State.literals

/**
 * The table. STOP moves Megatron's coordinator to a transient STOPPING and back to RUNNING once
 * broadcast (so engines started later find it running); here that is one step to RUNNING.
 *
 * @category constants
 * @since 0.1.0
 */
export const transitions: { readonly [S in Signal]: Transition } = {
  PAUSE: { allowedFrom: ["RUNNING"], next: "PAUSED", idempotentIn: ["PAUSED", "SUSPENDED"] },
  UNPAUSE: { allowedFrom: ["PAUSED"], next: "RUNNING", idempotentIn: [] },
  SUSPEND: { allowedFrom: ["PAUSED"], next: "SUSPENDED", idempotentIn: [] },
  RESUME: { allowedFrom: ["SUSPENDED"], next: "PAUSED", idempotentIn: [] },
  STOP: { allowedFrom: ["PAUSED", "SUSPENDED"], next: "RUNNING", idempotentIn: [] },
  SET_GENERATION_EPOCH: { allowedFrom: ALL, next: null, idempotentIn: [] }
}

/**
 * What applying a signal does.
 *
 * - `Applied`: broadcast it, and move to `next`.
 * - `Idempotent`: drop it silently (the state already says what the signal asks).
 * - `Rejected`: drop it with a warning (not allowed in this state).
 *
 * @category models
 * @since 0.1.0
 */
export type Outcome =
  | { readonly _tag: "Applied"; readonly next: State }
  | { readonly _tag: "Idempotent" }
  | { readonly _tag: "Rejected" }

/**
 * Applies a signal to a state, by the table.
 *
 * @example
 * ```ts
 * import { ControlState } from "@mcore-effect/coordinator"
 *
 * ControlState.apply("RUNNING", "PAUSE") // { _tag: "Applied", next: "PAUSED" }
 * ControlState.apply("PAUSED", "PAUSE") // { _tag: "Idempotent" }
 * ControlState.apply("RUNNING", "SUSPEND") // { _tag: "Rejected" }
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const apply = (state: State, signal: Signal): Outcome => {
  const row = transitions[signal]
  if (row.allowedFrom.includes(state)) return { _tag: "Applied", next: row.next ?? state }
  return row.idempotentIn.includes(state) ? { _tag: "Idempotent" } : { _tag: "Rejected" }
}

const byHeader: ReadonlyMap<number, Signal> = new Map(Signal.literals.map((s) => [Headers.values[s], s]))

/**
 * The signal a header carries, if the state machine governs it.
 *
 * @category utils
 * @since 0.1.0
 */
export const signalOf = (header: number): Signal | undefined => byHeader.get(header)
