/**
 * `mcore trace`: wire traces in the testkit's format: record a session through a proxy, show a
 * trace readably, replay it from either side.
 *
 * @since 0.1.0
 */
// Named by the command's inferred error type.
import type { TraceError } from "@mcore-effect/testkit"
import { Command } from "effect/cli"
import * as TraceRecord from "./TraceRecord.ts"
import * as TraceReplay from "./TraceReplay.ts"
import * as TraceShow from "./TraceShow.ts"

/**
 * The command.
 *
 * @example
 * ```sh
 * mcore trace record --upstream tcp://127.0.0.1:5555 --out session.trace.jsonl
 * mcore trace show session.trace.jsonl
 * mcore trace replay session.trace.jsonl --address tcp://127.0.0.1:5555
 * ```
 *
 * @since 0.1.0
 */
export const command = Command.make("trace").pipe(
  Command.withDescription("Record, show and replay wire traces (the testkit's *.trace.jsonl format)"),
  Command.withSubcommands([TraceRecord.command, TraceShow.command, TraceReplay.command])
)
