/**
 * `mcore trace replay FILE`: plays a recorded conversation back, from either side. With
 * `--address`, as the recorded clients against a coordinator under test, checking every answer
 * against the recording; with `--as-coordinator`, as the recorded coordinator for a client under
 * test, which connects to the printed address. Either way the replay succeeds only if the
 * conversation went exactly as recorded (timings and other volatile reply fields aside; the ids
 * the coordinator assigns are matched as ids, so a coordinator that has served requests before,
 * or a second replay against the same one, passes).
 *
 * @since 0.1.0
 */
import type { Dialect } from "@mcore-effect/protocol"
import { Trace, type TraceError, TraceReplay } from "@mcore-effect/testkit"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Argument, CliError, Command, Flag } from "effect/cli"
import * as Flags from "../Flags.ts"
import * as Output from "../Output.ts"

const flags = {
  file: Argument.String("file").pipe(Argument.withDescription("A trace file (*.trace.jsonl)")),
  address: Flag.String("address").pipe(
    Flag.withAlias("a"),
    Flag.withMetavar("address"),
    Flag.withDescription("Replay the recorded clients against the coordinator at this address"),
    Flags.connectable,
    Flag.optional
  ),
  asCoordinator: Flag.Boolean("as-coordinator").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Replay the recorded coordinator instead, for a client that connects to the printed address")
  ),
  listen: Flag.String("listen").pipe(
    Flag.withAlias("l"),
    Flag.withMetavar("address"),
    Flag.withDefault("tcp://127.0.0.1:0"),
    Flag.withDescription("With --as-coordinator: where to bind, loopback only (default: any free port)"),
    Flags.loopback
  ),
  ordering: Flag.Literals("ordering", ["causal", "eager"]).pipe(
    Flag.withDefault("causal" as const),
    Flag.withDescription(
      "Clients: send each message once the answers recorded before it arrived (causal, default) or at once (eager)"
    )
  ),
  protocol: Flags.optionalProtocol(
    "The dialect of a trace whose header names none (version 1, or recorded without --protocol), which is refused without it; a trace that names one is replayed in it"
  ),
  timeout: Flags.duration("timeout").pipe(
    Flag.withDefault(Duration.seconds(5)),
    Flag.withDescription("The longest wait for any one message (default 5s)")
  )
} as const

/**
 * The trace, its dialect named: the one its header names, or else the one `--protocol` gives.
 * Replayed frames are sent as recorded, so a trace read in the wrong dialect would put a message
 * before a coordinator that it may die of: without a recorded dialect or `--protocol` the replay
 * is refused, before any socket is opened, as is a `--protocol` that contradicts the header.
 */
const inDialect = (
  trace: Trace.Trace,
  file: string,
  protocol: Option.Option<Dialect.Name>
): Effect.Effect<Trace.Trace, CliError.ValidationError> => {
  const recorded = trace.header.protocol
  if (recorded !== undefined) {
    return Option.isSome(protocol) && protocol.value !== recorded
      ? Effect.fail(new CliError.ValidationError({ message: `${file} was recorded in ${recorded}, not ${protocol.value}` }))
      : Effect.succeed(trace)
  }
  return Option.match(protocol, {
    onNone: () =>
      Effect.fail(
        new CliError.ValidationError({
          message: `${file} names no dialect (version 1, or recorded without --protocol): ${Flags.missingProtocol}`
        })
      ),
    onSome: (name) => Effect.succeed({ ...trace, header: { ...trace.header, protocol: name } })
  })
}

/**
 * The command.
 *
 * @example
 * ```sh
 * mcore trace replay session.trace.jsonl --address tcp://127.0.0.1:5555
 * mcore trace replay session.trace.jsonl --as-coordinator --listen tcp://127.0.0.1:6000
 * ```
 *
 * @since 0.1.0
 */
export const command = Command.make(
  "replay",
  flags,
  Effect.fn("mcore.trace.replay")(function*({ file, address, asCoordinator, listen, ordering, protocol, timeout }) {
    if (!asCoordinator && Option.isNone(address)) {
      return yield* new CliError.ValidationError({
        message: "give --address ADDR (a coordinator to replay the clients against) or --as-coordinator"
      })
    }
    const trace = yield* inDialect(yield* Trace.read(file), file, protocol)
    const timeoutMillis = Duration.toMillis(timeout)
    if (asCoordinator || Option.isNone(address)) {
      const scripted = yield* TraceReplay.asCoordinator(trace, { address: listen, timeoutMillis })
      yield* Output.line(scripted.address)
      yield* Output.line(`playing the coordinator of ${file}: connect the client under test to the address above`)
      const report = yield* scripted.done
      return yield* Output.line(`replayed ${file}: sent ${report.sent} message(s), matched ${report.matched}`)
    }
    const report = yield* TraceReplay.asClients(trace, { address: address.value, ordering, timeoutMillis })
    yield* Output.line(
      `replayed ${file} against ${address.value}: sent ${report.sent} message(s), matched ${report.matched} answer(s)`
    )
  }, Effect.scoped)
).pipe(
  Command.withDescription("Replay a trace: as its clients against a coordinator, or as its coordinator for a client"),
  Command.withExamples([
    {
      command: "mcore trace replay session.trace.jsonl --address tcp://127.0.0.1:5555",
      description: "Check a coordinator answers as the recorded one did"
    },
    {
      command: "mcore trace replay session.trace.jsonl --as-coordinator",
      description: "Check a client asks what the recorded one asked"
    }
  ])
)
