/**
 * `mcore trace record --upstream ADDR --out FILE`: a transparent recording proxy between clients
 * (or engines) and a coordinator, real or test. Peers connect to the printed address instead of
 * the coordinator's; each keeps its own connection upstream, and every message both ways is
 * written to the trace file as it passes. Runs until SIGINT or SIGTERM, then writes the rest and
 * closes.
 *
 * @since 0.1.0
 */
import { type Trace, type TraceError, TraceRecorder } from "@mcore-effect/testkit"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { Command, Flag } from "effect/cli"
import * as Flags from "../Flags.ts"
import * as Output from "../Output.ts"
import { version } from "../Version.ts"

const flags = {
  listen: Flag.String("listen").pipe(
    Flag.withAlias("l"),
    Flag.withMetavar("address"),
    Flag.withDefault("tcp://127.0.0.1:0"),
    Flag.withDescription("Where peers connect, loopback only (default tcp://127.0.0.1:0: any free port)"),
    Flags.loopback
  ),
  upstream: Flag.String("upstream").pipe(
    Flag.withAlias("u"),
    Flag.withMetavar("address"),
    Flag.withDescription("The coordinator to forward to"),
    Flags.connectable
  ),
  out: Flag.String("out").pipe(
    Flag.withAlias("o"),
    Flag.withMetavar("file"),
    Flag.withDescription("The trace file to write (*.trace.jsonl; replaced)")
  ),
  // Recorded in the trace's header: `show` and `replay` then read the frames in it. The proxy
  // forwards every message unchanged whatever the dialect, so it is only a label here.
  protocol: Flags.optionalProtocol(
    "Only labels the trace: the dialect the peers speak, written in its header for show and replay (the proxy forwards bytes unchanged in any dialect); without it the trace names none, and replay must then be given --protocol"
  )
} as const

/** Prints each peer the first time it sends or is sent something. */
const announcePeers = (recorder: TraceRecorder.Handle): Effect.Effect<never> =>
  Effect.gen(function*() {
    const seen = new Set<string>()
    let read = 0
    for (;;) {
      const from = read
      const entries: ReadonlyArray<Trace.Entry> = yield* recorder.waitFor(
        "a new message",
        (all) => all.length > from,
        { timeoutMillis: 2 ** 31 - 1 }
      ).pipe(Effect.catchTag("TraceError", () => Effect.succeed([])))
      for (let i = from; i < entries.length; i++) {
        const { peer } = entries[i]!
        if (seen.has(peer)) continue
        seen.add(peer)
        yield* Output.line(`peer ${peer}`)
      }
      read = Math.max(read, entries.length)
    }
  })

/**
 * The command.
 *
 * @example
 * ```sh
 * mcore trace record --upstream tcp://127.0.0.1:5555 --out session.trace.jsonl
 * # point clients at the address printed on the first line, then Ctrl-C
 * ```
 *
 * @since 0.1.0
 */
export const command = Command.make(
  "record",
  flags,
  Effect.fn("mcore.trace.record")(function*({ listen, upstream, out, protocol }) {
    let recorded: Effect.Effect<Trace.Trace> | undefined
    // Registered before the recorder, so it runs once the file has been written and closed.
    yield* Effect.addFinalizer(() =>
      recorded === undefined
        ? Effect.void
        : Effect.flatMap(recorded, (trace) => Output.line(`wrote ${trace.entries.length} message(s) to ${out}`))
    )
    const recorder = yield* TraceRecorder.make({
      upstream,
      address: listen,
      path: out,
      meta: { recordedBy: `mcore ${version} trace record`, upstream },
      protocol: Option.getOrUndefined(protocol)
    })
    recorded = recorder.trace
    yield* Output.line(recorder.address)
    yield* Output.line(`recording to ${out}: connect peers to the address above instead of ${upstream}; stop with Ctrl-C`)
    return yield* announcePeers(recorder)
  }, Effect.scoped)
).pipe(
  Command.withDescription("Record every message between peers and a coordinator, as a transparent proxy, until Ctrl-C"),
  Command.withExamples([
    {
      command: "mcore trace record --upstream tcp://127.0.0.1:5555 --out session.trace.jsonl",
      description: "Record the clients that connect to the printed address"
    }
  ])
)
