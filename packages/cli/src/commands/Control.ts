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
import { integerArgument } from "../Values.ts"

/**
 * Sends through a connected client, then says what is known: that it was sent, not that it took
 * effect. The protocol acknowledges no signal, and a coordinator ignores one its state does not
 * allow (UNPAUSE while running), so the line says so rather than implying success. Closing the
 * client (the layer's scope, right after) is what delivers it, as the client flushes what it has
 * queued before closing its socket.
 */
const deliver = (
  connection: Flags.Connection,
  header: string,
  when: string | undefined,
  send: (client: InferenceClient.Service) => Effect.Effect<void, ClientError.ClientError>
) =>
  Effect.gen(function*() {
    const client = yield* InferenceClient.InferenceClient
    yield* send(client)
    const ignored = when === undefined ? "" : ` (it acts on ${header} only ${when})`
    yield* Output.line(`${header} sent to ${connection.address.join(", ")}; the coordinator does not confirm${ignored}`)
  }).pipe(Effect.provide(clientLayer(connection)))

const signal = (
  name: string,
  header: string,
  description: string,
  when: string | undefined,
  send: (client: InferenceClient.Service) => Effect.Effect<void, ClientError.ClientError>
) =>
  Command.make(
    name,
    Flags.connection,
    Effect.fn(`mcore.control.${name}`)(function*(connection) {
      yield* deliver(connection, header, when, send)
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
    yield* deliver(connection, `SET_GENERATION_EPOCH ${epoch}`, undefined, (client) => client.setGenerationEpoch(epoch))
  })
).pipe(
  Command.withDescription("SET_GENERATION_EPOCH: stamp every in-flight request with this epoch; the coordinator does not confirm it")
)

const profiler = Command.make("profiler").pipe(
  Command.withDescription("Start or stop the CUDA profiler on every engine"),
  Command.withSubcommands([
    signal("start", "START_CUDA_PROFILER", "START_CUDA_PROFILER to every engine", undefined, (c) => c.startCudaProfiler()),
    signal("stop", "STOP_CUDA_PROFILER", "STOP_CUDA_PROFILER to every engine", undefined, (c) => c.stopCudaProfiler())
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
    signal("pause", "PAUSE", "PAUSE every engine (from RUNNING)", "when RUNNING", (c) => c.pauseEngines()),
    signal("unpause", "UNPAUSE", "UNPAUSE every engine (from PAUSED)", "when PAUSED", (c) => c.unpauseEngines()),
    signal("suspend", "SUSPEND", "SUSPEND every engine (from PAUSED)", "when PAUSED", (c) => c.suspendEngines()),
    signal("resume", "RESUME", "RESUME every engine (from SUSPENDED, back to PAUSED)", "when SUSPENDED", (c) => c.resumeEngines()),
    signal("stop", "STOP", "STOP every engine (from PAUSED or SUSPENDED)", "when PAUSED or SUSPENDED", (c) => c.stopEngines()),
    epoch,
    profiler,
    signal("shutdown", "SHUTDOWN", "SHUTDOWN the coordinator (its engines keep running)", undefined, (c) => c.shutdownCoordinator())
  ]),
  Command.withExamples([
    { command: "mcore control pause --address tcp://127.0.0.1:5555", description: "Pause every engine" },
    { command: "mcore control epoch 7 --address tcp://127.0.0.1:5555", description: "Set the generation epoch" }
  ])
)
