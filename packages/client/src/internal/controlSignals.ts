/**
 * The engine control signals a client sends (PAUSE, UNPAUSE, SUSPEND, RESUME, STOP), each encoded
 * once in the client's dialect; a signal the dialect lacks fails every call, before anything is
 * sent.
 *
 * Megatron-LM core_v0.16 has no control state machine, and two traps this module steps around:
 *
 * - Its own client's `suspend_engines()` sends PAUSE then SUSPEND and `resume_engines()` RESUME
 *   then UNPAUSE; its engines treat SUSPEND and RESUME as flags beside PAUSE. So do we there:
 *   `suspendEngines` pauses first (unless this client's PAUSE is still standing), and
 *   `resumeEngines` unpauses after.
 * - Every engine acks each PAUSE, and its coordinator asserts that an engine acks once per
 *   UNPAUSE: a second PAUSE before an UNPAUSE kills it. A client cannot know other clients'
 *   signals, but it knows its own: a second `pauseEngines()` from this client before its
 *   `unpauseEngines()` (or `resumeEngines()`) fails with `InvalidRequest` (`UnsupportedByDialect`,
 *   naming the dialect) and sends nothing. Two clients pausing one 0.16 deployment can still kill
 *   it; that is the deployment's to order.
 *
 * @since 0.2.0
 * @internal
 */
import { Dialect } from "@mcore-effect/protocol"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { type ClientError, clientError, InvalidRequest } from "../ClientError.ts"
import type * as Connection from "./connection.ts"

/**
 * The control signals of one client.
 *
 * @internal
 */
export interface ControlSignals {
  readonly pauseEngines: () => Effect.Effect<void, ClientError>
  readonly unpauseEngines: () => Effect.Effect<void, ClientError>
  readonly suspendEngines: () => Effect.Effect<void, ClientError>
  readonly resumeEngines: () => Effect.Effect<void, ClientError>
  readonly stopEngines: () => Effect.Effect<void, ClientError>
}

type Tag = "Pause" | "Unpause" | "Suspend" | "Resume" | "Stop"

/** What each call sends, in order, in a dialect with (`paired`) or without 0.16's pairing. */
const sequences = (paired: boolean): Readonly<Record<Tag, ReadonlyArray<Tag>>> => ({
  Pause: ["Pause"],
  Unpause: ["Unpause"],
  Suspend: paired ? ["Pause", "Suspend"] : ["Suspend"],
  Resume: paired ? ["Resume", "Unpause"] : ["Resume"],
  Stop: ["Stop"]
})

/**
 * The control signals over a connection.
 *
 * @internal
 */
export const make = (connection: Connection.Connection): ControlSignals => {
  const dialect = connection.config.dialect
  // core_v0.16: PAUSE is acked through the coordinator, and a second one kills it.
  const acked = dialect.headers.values.PAUSE_ACK !== undefined
  const plan = sequences(acked)
  const encoded = new Map<Tag, Result.Result<ReadonlyArray<Uint8Array>, ClientError>>()
  for (const tag of ["Pause", "Unpause", "Suspend", "Resume", "Stop"] as const) encoded.set(tag, connection.encode({ _tag: tag }))
  /** This client's PAUSE is standing (sent, no UNPAUSE since): only tracked where a second one kills. */
  let pauseStanding = false

  const signal = (name: string, tag: Tag) =>
    Effect.fn(name)(function*() {
      let tags = plan[tag]
      if (acked && pauseStanding) {
        if (tag === "Pause") return yield* Effect.fail(secondPause(dialect))
        // Already paused by this client: SUSPEND alone (its PAUSE would be the second).
        if (tag === "Suspend") tags = ["Suspend"]
      }
      const frames: Array<ReadonlyArray<Uint8Array>> = []
      for (const t of tags) {
        const f = encoded.get(t)!
        if (Result.isFailure(f)) return yield* Effect.fail(f.failure)
        frames.push(f.success)
      }
      const error = connection.available()
      if (error !== undefined) return yield* Effect.fail(error)
      for (const f of frames) connection.send(f)
      if (tags.includes("Unpause")) pauseStanding = false
      else if (tags.includes("Pause")) pauseStanding = true
    })

  return {
    pauseEngines: signal("InferenceClient.pauseEngines", "Pause"),
    unpauseEngines: signal("InferenceClient.unpauseEngines", "Unpause"),
    suspendEngines: signal("InferenceClient.suspendEngines", "Suspend"),
    resumeEngines: signal("InferenceClient.resumeEngines", "Resume"),
    stopEngines: signal("InferenceClient.stopEngines", "Stop")
  }
}

const secondPause = (dialect: Dialect.Dialect): ClientError =>
  clientError(
    new InvalidRequest({
      error: Dialect.unsupported(
        dialect,
        "a second PAUSE before UNPAUSE",
        `Megatron-LM ${dialect.megatron}'s coordinator dies when an engine acks a second PAUSE before an UNPAUSE; ` +
          "this client's PAUSE is still standing (unpauseEngines or resumeEngines first); nothing was sent"
      )
    })
  )
