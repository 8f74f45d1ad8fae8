/**
 * `mcore control <signal> --address ADDR`: sends one control signal to a coordinator, which
 * broadcasts it to its engines (SHUTDOWN stops the coordinator itself). One subcommand per
 * signal, each a thin call of the client's own operation.
 *
 * @since 0.1.0
 */
import { type ClientError, InferenceClient } from "@mcore-effect/client"
import * as Effect from "effect/Effect"
import { Argument, Command } from "effect/cli"
import { clientLayer } from "../ClientLayer.ts"
import * as Flags from "../Flags.ts"
import * as Output from "../Output.ts"

/**
 * Sends through a connected client, then says so. A signal has no reply to wait for: closing the
 * client (the layer's scope, right after) is what delivers it, as the client flushes what it has
 * queued before closing its socket.
 */
const deliver = (
  connection: Flags.Connection,
  header: string,
  send: (client: InferenceClient.Service) => Effect.Effect<void, ClientError.ClientError>
) =>
  Effect.gen(function*() {
    const client = yield* InferenceClient.InferenceClient
    yield* send(client)
    yield* Output.line(`${header} sent to ${connection.address}`)
  }).pipe(Effect.provide(clientLayer(connection)))

const signal = (
  name: string,
  header: string,
  description: string,
  send: (client: InferenceClient.Service) => Effect.Effect<void, ClientError.ClientError>
) =>
  Command.make(
    name,
    Flags.connection,
    Effect.fn(`mcore.control.${name}`)(function*(connection) {
      yield* deliver(connection, header, send)
    })
  ).pipe(Command.withDescription(description))

const epoch = Command.make(
  "epoch",
  { ...Flags.connection, epoch: Argument.Int("epoch").pipe(Argument.withDescription("The generation epoch")) },
  Effect.fn("mcore.control.epoch")(function*({ epoch, ...connection }) {
    yield* deliver(connection, `SET_GENERATION_EPOCH ${epoch}`, (client) => client.setGenerationEpoch(epoch))
  })
).pipe(Command.withDescription("SET_GENERATION_EPOCH: stamp every in-flight request with this epoch"))

const profiler = Command.make("profiler").pipe(
  Command.withDescription("Start or stop the CUDA profiler on every engine"),
  Command.withSubcommands([
    signal("start", "START_CUDA_PROFILER", "START_CUDA_PROFILER to every engine", (c) => c.startCudaProfiler()),
    signal("stop", "STOP_CUDA_PROFILER", "STOP_CUDA_PROFILER to every engine", (c) => c.stopCudaProfiler())
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
 * ```
 *
 * @since 0.1.0
 */
export const command = Command.make("control").pipe(
  Command.withDescription("Send a control signal to a coordinator (broadcast to its engines)"),
  Command.withSubcommands([
    signal("pause", "PAUSE", "PAUSE every engine (from RUNNING)", (c) => c.pauseEngines()),
    signal("unpause", "UNPAUSE", "UNPAUSE every engine (from PAUSED)", (c) => c.unpauseEngines()),
    signal("suspend", "SUSPEND", "SUSPEND every engine (from PAUSED)", (c) => c.suspendEngines()),
    signal("resume", "RESUME", "RESUME every engine (from SUSPENDED, back to PAUSED)", (c) => c.resumeEngines()),
    signal("stop", "STOP", "STOP every engine (from PAUSED or SUSPENDED)", (c) => c.stopEngines()),
    epoch,
    profiler,
    signal("shutdown", "SHUTDOWN", "SHUTDOWN the coordinator (its engines keep running)", (c) => c.shutdownCoordinator())
  ]),
  Command.withExamples([
    { command: "mcore control pause --address tcp://127.0.0.1:5555", description: "Pause every engine" },
    { command: "mcore control epoch 7 --address tcp://127.0.0.1:5555", description: "Set the generation epoch" }
  ])
)
