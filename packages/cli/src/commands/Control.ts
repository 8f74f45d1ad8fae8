/**
 * `mcore control <signal> --address ADDR`: sends one control signal to a coordinator, which
 * broadcasts it to its engines (SHUTDOWN stops the coordinator itself). One subcommand per
 * signal, each a thin call of the client's own operation. Several addresses (a fleet): the
 * signal goes to every coordinator, with one line each.
 *
 * @since 0.1.0
 */
import { type ClientError, Fleet, InferenceClient } from "@mcore-effect/client"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { Argument, Command } from "effect/cli"
import { clientLayer, fleetLayer } from "../ClientLayer.ts"
import { oneLine } from "../Failure.ts"
import * as Flags from "../Flags.ts"
import * as Output from "../Output.ts"
import * as Table from "../Table.ts"
import { integerArgument } from "../Values.ts"

/**
 * A signal some coordinators of a fleet did not take (each one's line is on standard output),
 * reported as one line with exit code 1 (see `Failure`).
 *
 * @since 0.2.0
 */
export class ControlFailed extends Data.TaggedError("ControlFailed")<{
  readonly header: string
  readonly failed: number
  readonly total: number
}> {
  override get message(): string {
    return `${this.header} failed at ${this.failed} of ${this.total} coordinators (their lines above)`
  }
}

/** What a client's method of the same name sends (what `Fleet.control` sends to each coordinator). */
const sendThrough = (client: InferenceClient.Service, signal: Fleet.ControlSignal): Effect.Effect<void, ClientError.ClientError> =>
  typeof signal === "string" ? client[signal]() : client.setGenerationEpoch(signal.generationEpoch)

/** One coordinator's result as one line: `ok`, or its typed error's message (a defect's report, folded). */
const outcome = (exit: Exit.Exit<void, ClientError.ClientError>): string => {
  if (Exit.isSuccess(exit)) return "ok"
  const error = Exit.findErrorOption(exit)
  return oneLine(Option.isSome(error) ? error.value.message : Cause.pretty(exit.cause))
}

/**
 * Sends through a connected client, then says what is known: that it was sent, not that it took
 * effect. The protocol acknowledges no signal, and a coordinator ignores one its state does not
 * allow (UNPAUSE while running), so the line says so rather than implying success. Closing the
 * client (the layer's scope, right after) is what delivers it, as the client flushes what it has
 * queued before closing its socket.
 *
 * Over several coordinators (a fleet), the signal goes to every one (`Fleet.control`) and each
 * gets a line: its address and `ok` (sent) or why it was not; one that was not makes the
 * command fail (exit code 1) once the others' signals are delivered, so a script sees a partial
 * failure however many took it.
 */
const deliver = (
  connection: Flags.Connection,
  header: string,
  when: string | undefined,
  signal: Fleet.ControlSignal
) => {
  if (connection.address.length === 1) {
    return Effect.gen(function*() {
      const client = yield* InferenceClient.InferenceClient
      yield* sendThrough(client, signal)
      const ignored = when === undefined ? "" : ` (it acts on ${header} only ${when})`
      yield* Output.line(`${header} sent to ${connection.address.join(", ")}; the coordinator does not confirm${ignored}`)
    }).pipe(Effect.provide(clientLayer(connection)))
  }
  return Effect.gen(function*() {
    const fleet = yield* Fleet.Fleet
    const results = yield* fleet.control(signal)
    const rows = results.map((result) => [result.address, outcome(result.exit)])
    for (const row of Table.render(["coordinator", header], rows)) yield* Output.line(row)
    const ignored = when === undefined ? "" : ` (each acts on ${header} only ${when})`
    yield* Output.line(`ok: sent; the coordinators do not confirm${ignored}`)
    return results.filter((result) => Exit.isFailure(result.exit)).length
  }).pipe(
    Effect.provide(fleetLayer(connection)),
    // Failed once the layer is closed, so that the coordinators that took it have it delivered.
    Effect.flatMap((failed) =>
      failed === 0 ? Effect.void : Effect.fail(new ControlFailed({ header, failed, total: connection.address.length }))
    )
  )
}

const signal = (
  name: string,
  header: string,
  description: string,
  when: string | undefined,
  control: Fleet.ControlSignal
) =>
  Command.make(
    name,
    Flags.connection,
    Effect.fn(`mcore.control.${name}`)(function*(connection) {
      yield* deliver(connection, header, when, control)
    })
  ).pipe(Command.withDescription(`${description}; the coordinator does not confirm it`))

const epoch = Command.make(
  "epoch",
  {
    ...Flags.connection,
    // Epochs count policy versions from 0 (the engines stamp them into each reply's policy_epoch
    // as [token index, epoch] pairs): a negative one is refused before anything is sent.
    epoch: integerArgument("epoch", 0).pipe(Argument.withDescription("The generation epoch: a non-negative integer"))
  },
  Effect.fn("mcore.control.epoch")(function*({ epoch, ...connection }) {
    yield* deliver(connection, `SET_GENERATION_EPOCH ${epoch}`, undefined, { generationEpoch: epoch })
  })
).pipe(
  Command.withDescription("SET_GENERATION_EPOCH: stamp every in-flight request with this epoch; the coordinator does not confirm it")
)

const profiler = Command.make("profiler").pipe(
  Command.withDescription("Start or stop the CUDA profiler on every engine"),
  Command.withSubcommands([
    signal("start", "START_CUDA_PROFILER", "START_CUDA_PROFILER to every engine", undefined, "startCudaProfiler"),
    signal("stop", "STOP_CUDA_PROFILER", "STOP_CUDA_PROFILER to every engine", undefined, "stopCudaProfiler")
  ])
)

/**
 * The command.
 *
 * @example
 * ```sh
 * mcore control pause --address tcp://127.0.0.1:5555
 * mcore control epoch 7 --address tcp://127.0.0.1:5555
 * mcore control profiler start --address tcp://127.0.0.1:5555
 * mcore control pause --address tcp://127.0.0.1:5555 --address tcp://127.0.0.1:5556
 * ```
 *
 * @since 0.1.0
 */
export const command = Command.make("control").pipe(
  Command.withDescription("Send a control signal to a coordinator (broadcast to its engines)"),
  Command.withSubcommands([
    signal("pause", "PAUSE", "PAUSE every engine (from RUNNING)", "when RUNNING", "pauseEngines"),
    signal("unpause", "UNPAUSE", "UNPAUSE every engine (from PAUSED)", "when PAUSED", "unpauseEngines"),
    signal("suspend", "SUSPEND", "SUSPEND every engine (from PAUSED)", "when PAUSED", "suspendEngines"),
    signal("resume", "RESUME", "RESUME every engine (from SUSPENDED, back to PAUSED)", "when SUSPENDED", "resumeEngines"),
    signal("stop", "STOP", "STOP every engine (from PAUSED or SUSPENDED)", "when PAUSED or SUSPENDED", "stopEngines"),
    epoch,
    profiler,
    signal("shutdown", "SHUTDOWN", "SHUTDOWN the coordinator (its engines keep running)", undefined, "shutdownCoordinator")
  ]),
  Command.withExamples([
    { command: "mcore control pause --address tcp://127.0.0.1:5555", description: "Pause every engine" },
    { command: "mcore control epoch 7 --address tcp://127.0.0.1:5555", description: "Set the generation epoch" },
    {
      command: "mcore control pause -a tcp://127.0.0.1:5555,tcp://127.0.0.1:5556",
      description: "Pause every engine of two coordinators: one line each, exit code 1 if one did not take it"
    }
  ])
)
