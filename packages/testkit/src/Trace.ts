/**
 * Wire traces: a recorded conversation with a coordinator, message by message, as a versioned
 * JSON Lines file (`*.trace.jsonl`) that later versions of this package can still read.
 *
 * ```text
 * {"format":"mcore-effect-trace","version":1,"created":"2025-01-01T00:00:00.000Z","meta":{}}
 * {"dir":"client->coordinator","peer":"client-0","t":0,"frames":["kQA="]}
 * {"dir":"coordinator->client","peer":"client-0","t":412,"frames":["kQE="]}
 * ```
 *
 * - Line 1 is the header: `format` is always `"mcore-effect-trace"`, `version` the format's
 *   major version (an integer, {@link version} at most here), `created` an ISO-8601 time, `meta`
 *   a free JSON object (who recorded it, with which settings), and `protocol`: the dialect the
 *   frames are in (from version 2; `reference` may be named in version 1 too). A trace without
 *   it is read in the reference protocol, but its dialect was not recorded.
 * - Every further line is one ZeroMQ multipart message, in the order the recorder saw them:
 *   `dir` (which way it travelled, see {@link Direction}), `peer` (a stable name of the
 *   connection it travelled on: `client-0`, `client-1`, ... in order of first message, engines
 *   `engine-0`, ...), `t` (integer microseconds since the recording started, from a monotonic
 *   clock, never decreasing down the file) and `frames` (every frame, base64; identity frames
 *   are not part of a message and are not recorded).
 * - Compatibility: readers ignore fields they do not know and skip message lines whose `dir` they
 *   do not know, so adding either keeps the version. Any change an older reader could misread
 *   bumps `version`, and a reader refuses a newer version with `UnsupportedVersion`. Blank lines
 *   are ignored.
 *
 * The format is described in full in `packages/testkit/TRACES.md`.
 *
 * @since 0.1.0
 */
import * as Fs from "node:fs/promises"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { InvalidTrace, TraceError, traceError, TraceIoFailed, UnsupportedVersion } from "./TraceError.ts"

import { Direction, Entry, format, Header, type Trace, version } from "./internal/traceData.ts"
export {
  Direction,
  Entry,
  format,
  Header,
  type HeaderOptions,
  make,
  makeHeader,
  protocolOf,
  type Trace,
  version,
  versionFor
} from "./internal/traceData.ts"

const HeaderLine = Schema.fromJsonString(Header)
const EntryLine = Schema.fromJsonString(Entry)
const encodeHeader = Schema.encodeSync(HeaderLine)
const encodeEntry = Schema.encodeSync(EntryLine)
const decodeHeader = Schema.decodeUnknownResult(Header)
const decodeEntry = Schema.decodeUnknownResult(Entry)
const knownDirections: ReadonlySet<unknown> = new Set(Direction.literals)

/**
 * The header as one JSON line (no newline).
 *
 * @category utils
 * @since 0.1.0
 */
export const headerLine = (header: Header): string => encodeHeader(header)

/**
 * A message as one JSON line (no newline).
 *
 * @category utils
 * @since 0.1.0
 */
export const entryLine = (entry: Entry): string => encodeEntry(entry)

/**
 * A trace as JSON Lines text, newline-terminated.
 *
 * @category utils
 * @since 0.1.0
 */
export const stringify = (trace: Trace): string => {
  const lines = [headerLine(trace.header)]
  for (const entry of trace.entries) lines.push(entryLine(entry))
  return lines.join("\n") + "\n"
}

const invalid = (line: number, why: string) => Result.fail(traceError(new InvalidTrace({ line, why })))

const parseJson = (text: string): Result.Result<unknown, string> => {
  try {
    return Result.succeed(JSON.parse(text))
  } catch (cause) {
    return Result.fail(cause instanceof Error ? cause.message : String(cause))
  }
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * Reads a trace from its text: any version up to {@link version}, unknown fields ignored,
 * message lines with an unknown `dir` skipped.
 *
 * @example
 * ```ts
 * import { Trace } from "@mcore-effect/testkit"
 * import { Result } from "effect"
 *
 * const text = '{"format":"mcore-effect-trace","version":1,"created":"2025-01-01T00:00:00.000Z","meta":{}}\n' +
 *   '{"dir":"client->coordinator","peer":"client-0","t":0,"frames":["kQA="],"note":"ignored"}\n'
 * const trace = Result.getOrThrow(Trace.parse(text))
 * trace.entries.length // 1
 * ```
 *
 * @category codecs
 * @since 0.1.0
 */
export const parse = (text: string): Result.Result<Trace, TraceError> => {
  const lines = text.split("\n")
  let header: Header | undefined
  const entries: Array<Entry> = []
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.endsWith("\r") ? lines[i]!.slice(0, -1) : lines[i]!
    if (line.trim() === "") continue
    const number = i + 1
    const json = parseJson(line)
    if (Result.isFailure(json)) return invalid(number, `not JSON: ${json.failure}`)
    const value = json.success
    if (!isObject(value)) return invalid(number, "a line must be a JSON object")
    if (header === undefined) {
      if (value.format !== format) return invalid(number, `the first line must be the header, with format "${format}"`)
      // The version is checked before the rest: a newer header may look different.
      if (typeof value.version !== "number" || !Number.isSafeInteger(value.version) || value.version < 1) {
        return invalid(number, "version must be an integer >= 1")
      }
      if (value.version > version) {
        return Result.fail(traceError(new UnsupportedVersion({ version: value.version, supported: version })))
      }
      const decoded = decodeHeader(value)
      if (Result.isFailure(decoded)) return invalid(number, decoded.failure.message)
      header = decoded.success
      continue
    }
    if (typeof value.dir === "string" && !knownDirections.has(value.dir)) continue
    const decoded = decodeEntry(value)
    if (Result.isFailure(decoded)) return invalid(number, decoded.failure.message)
    entries.push(decoded.success)
  }
  if (header === undefined) return invalid(1, "empty: no header line")
  return Result.succeed({ header, entries })
}

/**
 * Reads a trace file.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Trace } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const trace = yield* Trace.read("test/fixtures/session.trace.jsonl")
 *   return trace.entries.filter((e) => e.dir === "client->coordinator").length
 * })
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const read: (path: string) => Effect.Effect<Trace, TraceError> = Effect.fn("Trace.read")(function*(path: string) {
  const text = yield* Effect.tryPromise({
    try: () => Fs.readFile(path, "utf8"),
    catch: (cause) => traceError(new TraceIoFailed({ path, operation: "read", cause }))
  })
  return yield* Effect.fromResult(parse(text))
})

/**
 * Writes a whole trace file (replacing it).
 *
 * @example
 * ```ts
 * import { Trace } from "@mcore-effect/testkit"
 *
 * Trace.write("/tmp/empty.trace.jsonl", Trace.make([]))
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const write: (path: string, trace: Trace) => Effect.Effect<void, TraceError> = Effect.fn("Trace.write")(
  function*(path: string, trace: Trace) {
    yield* Effect.tryPromise({
      try: () => Fs.writeFile(path, stringify(trace), "utf8"),
      catch: (cause) => traceError(new TraceIoFailed({ path, operation: "write", cause }))
    })
  }
)

/**
 * A trace file being written message by message.
 *
 * @category models
 * @since 0.1.0
 */
export interface Writer {
  readonly path: string
  /** Queues a message; it reaches the file in order, soon, without blocking the caller. */
  readonly append: (entry: Entry) => void
  /** Waits until everything appended so far is in the file; fails if a write failed. */
  readonly flush: Effect.Effect<void, TraceError>
}

/**
 * Opens a trace file for writing (replacing it) and writes its header. Appended messages are
 * written in batches in the background; closing the scope writes what is left and closes the
 * file.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Trace } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const writer = yield* Trace.writer("/tmp/s.trace.jsonl", Trace.makeHeader({ meta: { by: "me" } }))
 *   writer.append({ dir: "client->coordinator", peer: "client-0", t: 0, frames: [Uint8Array.of(0x91, 0x00)] })
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const writer: (path: string, header: Header) => Effect.Effect<Writer, TraceError, Scope.Scope> = Effect.fn(
  "Trace.writer"
)(function*(path: string, header: Header) {
  const ioFailed = (cause: unknown) => traceError(new TraceIoFailed({ path, operation: "write", cause }))
  const file = yield* Effect.acquireRelease(
    Effect.tryPromise({ try: () => Fs.open(path, "w"), catch: ioFailed }),
    (file) => Effect.promise(() => file.close().catch(() => undefined))
  )
  let pending: Array<string> = [headerLine(header)]
  let failure: unknown = undefined
  let failed = false
  // One write at a time, chained: lines reach the file in the order they were appended.
  let chain: Promise<void> = Promise.resolve()
  let scheduled = false
  const drain = () => {
    scheduled = false
    if (pending.length === 0 || failed) return
    const text = pending.join("\n") + "\n"
    pending = []
    chain = chain.then(() =>
      file.write(text).then(
        () => undefined,
        (cause: unknown) => {
          failed = true
          failure = cause
        }
      )
    )
  }
  const schedule = () => {
    if (scheduled) return
    scheduled = true
    // Batch what arrives within one event-loop turn into one write.
    setImmediate(drain)
  }
  schedule()
  const flush = Effect.suspend(() => {
    drain()
    return Effect.promise(() => chain)
  }).pipe(Effect.flatMap(() => (failed ? Effect.fail(ioFailed(failure)) : Effect.void)))
  // Registered after the file's release, so it runs first: write the rest, then close.
  yield* Effect.addFinalizer(() => Effect.ignore(flush))
  return {
    path,
    append: (entry) => {
      pending.push(entryLine(entry))
      schedule()
    },
    flush
  } satisfies Writer
})
