/**
 * A wire trace as text people read: one row per message with its time, peer, direction, header
 * by name and decoded fields. Decoding is the testkit's (`TraceMatch.decode`, the codec of the
 * message's direction, in the dialect the trace was recorded in); sampling params are shown as
 * what differs from the Python defaults.
 *
 * @since 0.1.0
 * @internal
 */
import { type Dialect, Dialects, Messages, Msgpack, SamplingParams } from "@mcore-effect/protocol"
import { Trace, TraceMatch } from "@mcore-effect/testkit"
import * as Json from "./Json.ts"

/**
 * The header name of a message, read from its metadata frame with the dialect's table (`REGISTER`
 * for an engine's registration, which has none).
 *
 * @since 0.1.0
 */
export const headerName = (frames: ReadonlyArray<Uint8Array>, protocol: Dialect.Name = "reference"): string => {
  if (Messages.isEngineRegistration(frames)) return "REGISTER"
  const first = frames[0]
  if (first === undefined) return "?"
  let metadata: unknown
  try {
    metadata = Msgpack.decode(first)
  } catch {
    return "?"
  }
  const header = Array.isArray(metadata) ? metadata[0] : undefined
  return (typeof header === "number" ? Dialects.get(protocol).headers.names.get(header) : undefined) ?? "?"
}

/** Sampling params without the fields left at their defaults: what the caller actually asked. */
const changedParams = (params: Record<string, unknown>): Record<string, unknown> => {
  const defaults = SamplingParams.defaults as unknown as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(params)) {
    if (!(key in defaults) || Json.stringify(defaults[key]) !== Json.stringify(value)) out[key] = value
  }
  return out
}

/**
 * A message's decoded fields as one line of JSON (its tag left out: the header says it).
 *
 * @since 0.1.0
 */
export const fields = (entry: Trace.Entry, protocol: Dialect.Name = "reference"): string => {
  const decoded = TraceMatch.decode(entry.dir, entry.frames, { ignoreReplyKeys: [], protocol })
  if (decoded._tag === "Undecodable") return `undecodable (${decoded.why}): ${decoded.frames.join(" ")}`
  const { _tag, ...rest } = decoded.message
  const shown: Record<string, unknown> = { ...rest }
  if (typeof shown.samplingParams === "object" && shown.samplingParams !== null) {
    shown.samplingParams = changedParams(shown.samplingParams as Record<string, unknown>)
  }
  return Object.keys(shown).length === 0 ? "" : Json.stringify(shown)
}

/**
 * One row per message: milliseconds since the recording started, peer, direction, header name,
 * fields.
 *
 * @example
 * ```ts
 * import { Trace } from "@mcore-effect/testkit"
 * import { rows } from "./TraceText.ts"
 *
 * rows(Trace.make([{ dir: "client->coordinator", peer: "client-0", t: 1500, frames: [Uint8Array.of(0x91, 0x00)] }]))
 * // [["1.500", "client-0", "client->coordinator", "CONNECT", ""]]
 * ```
 *
 * @since 0.1.0
 */
export const rows = (trace: Trace.Trace): Array<Array<string>> => {
  const protocol = Trace.protocolOf(trace)
  return trace.entries.map((entry) => [
    (entry.t / 1000).toFixed(3),
    entry.peer,
    entry.dir,
    headerName(entry.frames, protocol),
    fields(entry, protocol)
  ])
}
