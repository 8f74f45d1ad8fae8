/**
 * `mcore trace show FILE`: prints a wire trace readably: its header, then every message with its
 * time, peer, direction, header by name and decoded fields.
 *
 * @since 0.1.0
 */
import { Trace, type TraceError } from "@mcore-effect/testkit"
import * as Effect from "effect/Effect"
import { Argument, Command } from "effect/cli"
import * as Json from "../Json.ts"
import * as Output from "../Output.ts"
import * as Table from "../Table.ts"
import * as TraceText from "../TraceText.ts"

/**
 * The command.
 *
 * @example
 * ```sh
 * mcore trace show session.trace.jsonl
 * mcore trace show session.trace.jsonl | grep SUBMIT_REQUEST
 * ```
 *
 * @since 0.1.0
 */
export const command = Command.make(
  "show",
  { file: Argument.String("file").pipe(Argument.withDescription("A trace file (*.trace.jsonl)")) },
  Effect.fn("mcore.trace.show")(function*({ file }): Effect.fn.Return<void, TraceError.TraceError> {
    const trace = yield* Trace.read(file)
    const { header, entries } = trace
    const protocol = header.protocol ?? `${Trace.protocolOf(trace)} (none recorded)`
    yield* Output.line(`${header.format} version ${header.version}, created ${header.created}, protocol ${protocol}`)
    yield* Output.line(`meta ${Json.stringify(header.meta)}`)
    yield* Output.line(`${entries.length} message(s)`)
    yield* Output.line()
    const lines = Table.render(["ms", "peer", "direction", "header", "fields"], TraceText.rows(trace), ["right"])
    for (const line of lines) yield* Output.line(line)
  })
).pipe(Command.withDescription("Print a wire trace: headers by name, frames decoded"))
