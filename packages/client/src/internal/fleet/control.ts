/**
 * A fleet's control signals: each goes to every member's coordinator and returns one result per
 * coordinator; the fleet remembers the state they asked for (paused or suspended, the generation
 * epoch) and applies it to a coordinator that joins later (a restarted one starts running, at no
 * epoch), before that coordinator takes a request.
 *
 * A member that is not joined when a signal is sent (down, or still dialing) fails with
 * `CoordinatorLost`, and gets the state when it joins; STOP, the profiler signals and SHUTDOWN
 * are not applied again (a restarted coordinator is a new deployment as far as those go).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { type ClientError, clientError, CoordinatorLost } from "../../ClientError.ts"
import type { Service } from "../../ClientService.ts"
import type { FleetMember } from "./member.ts"

/**
 * A control signal a fleet sends to every coordinator: what `InferenceClient`'s methods of the
 * same names send.
 *
 * @internal
 */
export type Signal =
  | "pauseEngines"
  | "unpauseEngines"
  | "suspendEngines"
  | "resumeEngines"
  | "stopEngines"
  | "startCudaProfiler"
  | "stopCudaProfiler"
  | "shutdownCoordinator"
  | { readonly generationEpoch: number }

/**
 * One coordinator's result of a control signal.
 *
 * @internal
 */
export interface ControlResult {
  readonly index: number
  readonly address: string
  readonly exit: Exit.Exit<void, ClientError>
}

/** Where the fleet asked its engines to be. */
type Engines = "running" | "paused" | "suspended"

/** The fleet's control state and its fan-out. */
export class Control {
  private engines: Engines = "running"
  private epoch: number | undefined = undefined

  constructor(private readonly members: ReadonlyArray<FleetMember>, private readonly resumeUnpauses: boolean) {}

  /**
   * Sends `signal` to every member at once (those leaving the fleet aside); one result per
   * member, in member order.
   */
  send(signal: Signal): Effect.Effect<ReadonlyArray<ControlResult>> {
    const run = (client: Service): Effect.Effect<void, ClientError> =>
      typeof signal === "string" ? client[signal]() : client.setGenerationEpoch(signal.generationEpoch)
    return Effect.map(
      Effect.forEach(this.members.filter((member) => !member.retiring), (member) => {
        const client = member.client
        const exit = client === undefined
          ? Effect.succeed(Exit.fail(clientError(new CoordinatorLost({ address: member.address }))))
          : Effect.exit(run(client))
        return Effect.map(exit, (exit): ControlResult => ({ index: member.index, address: member.address, exit }))
      }, { concurrency: "unbounded" }),
      (results) => {
        // Remembered unless a coordinator's client refused the signal itself (a bad epoch, a
        // signal the dialect lacks: every one would, one dialect for all): then there is no
        // state to apply to a later one either.
        if (!results.some((r) => isRefusal(r.exit))) this.remember(signal)
        return results
      }
    )
  }

  private remember(signal: Signal): void {
    if (typeof signal !== "string") this.epoch = signal.generationEpoch
    else if (signal === "pauseEngines") this.engines = "paused"
    else if (signal === "unpauseEngines") this.engines = "running"
    else if (signal === "suspendEngines") this.engines = "suspended"
    else if (signal === "resumeEngines") this.engines = this.resumeUnpauses ? "running" : "paused"
  }

  /** Applies the remembered state to a coordinator that just joined. */
  apply(client: Service): Effect.Effect<void, ClientError> {
    const engines = this.engines
    const epoch = this.epoch
    return Effect.gen(function*() {
      if (engines !== "running") yield* client.pauseEngines()
      if (engines === "suspended") yield* client.suspendEngines()
      if (epoch !== undefined) yield* client.setGenerationEpoch(epoch)
    })
  }
}

/** A failure of the signal itself (a bad epoch, a signal the dialect lacks), not of a coordinator. */
const isRefusal = (exit: Exit.Exit<void, ClientError>): boolean => {
  const error = Exit.findErrorOption(exit)
  return Option.isSome(error) && (error.value.reason._tag === "InvalidArgument" || error.value.reason._tag === "InvalidRequest")
}

/**
 * The first failure among `results`, as one `ClientError` (what the fleet's `InferenceClient`
 * methods fail with), or void when every coordinator took the signal.
 *
 * @internal
 */
export const firstFailure = (results: ReadonlyArray<ControlResult>): Effect.Effect<void, ClientError> => {
  for (const result of results) if (Exit.isFailure(result.exit)) return result.exit
  return Effect.void
}
