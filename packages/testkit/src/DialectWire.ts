/**
 * What the test coordinator and engines need to know of a protocol dialect, read once from its
 * declaration (`Dialects` in the protocol package): its codecs, its header values by name and
 * back, and how an engine step's replies travel and are fanned out, as Megatron-LM's coordinator
 * and engines of that ref do it (`packages/protocol/DIALECTS.md`):
 *
 * | dialect | engine → coordinator | coordinator → client | `generated_text` |
 * |---|---|---|---|
 * | `reference`, `pr-6497` | `[21, [[crid, needs_detokenize], ...]]` + one frame per reply | `[21, rid]` + the reply | when `needs_detokenize` |
 * | `main` | `[21, [reply, ...]]`, `[22, [partial, ...]]`, one frame | `[21, rid, reply]`, `[22, rid, partial]` | always |
 * | `core_v0.19` | `[21, [reply, ...]]` | `[21, rid, reply]` | always |
 * | `core_v0.18`, `core_v0.17` | `[4, [reply, ...]]` | `[4, rid, reply]` | always, and `prompt` from token ids |
 *
 * Everything here is on the message path: headers are compared as numbers, replies are located
 * in their batch by scanning bytes, never decoded whole.
 *
 * @since 0.2.0
 * @internal
 */
import { type Dialect, Dialects, type Frames, Headers, type MessageSpec, Msgpack, MsgpackScan } from "@mcore-effect/protocol"
import * as GeneratedText from "./GeneratedText.ts"

/** The wire value of a header the dialect has, or `undefined`. */
const valueIn = (dialect: Dialect.Dialect, name: Headers.HeaderName): number | undefined => dialect.headers.values[name]

/**
 * One dialect's wire, as the test coordinator and engines use it.
 *
 * @internal
 */
export interface DialectWire {
  readonly dialect: Dialect.Dialect
  /** The reference dialect: its own byte-level paths (its header values are the reference table's). */
  readonly isReference: boolean
  /** One msgpack frame per message (main, the releases). */
  readonly single: boolean
  /** What clients send; the coordinator forwards the same layouts to engines. */
  readonly client: Frames.Codec<ReadonlyArray<MessageSpec.Any>>
  readonly engine: Frames.Codec<ReadonlyArray<MessageSpec.Any>>
  /** Wire values of the headers the coordinator and engines write. */
  readonly CONNECT_ACK: number
  readonly ENGINE_REPLY: number
  /** `undefined` where the dialect has no partials. */
  readonly ENGINE_REPLY_PARTIAL: number | undefined
  /** `undefined` where the dialect has no abort. */
  readonly ABORT_REQUEST: number | undefined
  readonly DISCONNECT: number
  /**
   * The coordinator fills `generated_text` in every reply (`always`: main and the releases, whose
   * coordinator detokenizes every finished request) or only where the engine's batch says
   * `needs_detokenize` (`asked`: the reference, PR 6497).
   */
  readonly detokenizes: "always" | "asked"
  /** core_v0.17/18: a reply whose `prompt` is nil gets the text of its `prompt_tokens`. */
  readonly fillsPrompt: boolean
}

const cache = new Map<Dialect.Name, DialectWire>()

/**
 * The wire of a dialect (made once per dialect).
 *
 * @internal
 */
export const of = (name: Dialect.Name): DialectWire => {
  const hit = cache.get(name)
  if (hit !== undefined) return hit
  const dialect = Dialects.get(name)
  const required = (header: Headers.HeaderName): number => {
    const value = valueIn(dialect, header)
    if (value === undefined) throw new Error(`${name} has no ${header}`)
    return value
  }
  const wire: DialectWire = {
    dialect,
    isReference: name === "reference",
    single: dialect.framing === "single",
    client: dialect.client,
    engine: dialect.engine,
    CONNECT_ACK: required("CONNECT_ACK"),
    ENGINE_REPLY: required("ENGINE_REPLY"),
    ENGINE_REPLY_PARTIAL: valueIn(dialect, "ENGINE_REPLY_PARTIAL"),
    ABORT_REQUEST: valueIn(dialect, "ABORT_REQUEST"),
    DISCONNECT: required("DISCONNECT"),
    detokenizes: dialect.framing === "single" ? "always" : "asked",
    fillsPrompt: name === "core_v0.17" || name === "core_v0.18"
  }
  cache.set(name, wire)
  return wire
}

/**
 * Why a header read off a dialect's wire has no reference value there.
 *
 * @internal
 */
export type OffTable = { readonly _tag: "lacks"; readonly name: Headers.HeaderName } | { readonly _tag: "unknown" }

/**
 * The reference table's value for a header read off a dialect's wire (what the coordinator's and
 * engines' logic compares with), or why there is none: `lacks` for a header of the reference
 * protocol this dialect does not have (ABORT_REQUEST on core_v0.19), `unknown` for one of no
 * table. The reference dialect's values are the reference table's: it never calls this.
 *
 * @internal
 */
export const toReference = (wire: DialectWire, value: number): Headers.Header | OffTable => {
  const name = wire.dialect.headers.names.get(value)
  if (name !== undefined) return Headers.values[name]
  const known = Headers.reference.names.get(value)
  return known !== undefined ? { _tag: "lacks", name: known } : { _tag: "unknown" }
}

/** The header's name in a dialect's table, by wire value. @internal */
export const nameOf = (wire: DialectWire, value: number | undefined): Headers.HeaderName | undefined =>
  value === undefined ? undefined : wire.dialect.headers.names.get(value)

/** Writes the small one-frame messages below; each use starts with `reset` and ends with `finish`. */
const writer = new Msgpack.Writer()

/**
 * A final reply or a partial as the coordinator sends it to a client: `[h, rid]` and the body as
 * its own frame (multipart), or `[h, rid, body]` in one frame, the body's bytes copied as they are.
 *
 * @internal
 */
export const toClient = (wire: DialectWire, header: number, clientRequestId: number, body: Uint8Array): Array<Uint8Array> =>
  wire.single
    ? [writer.reset().arrayHeader(3).number(header).number(clientRequestId).raw(body).finish()]
    : [writer.reset().arrayHeader(2).number(header).number(clientRequestId).finish(), body]

/**
 * An engine step's finished requests as its engine sends them: `[21, [[id, needs_detokenize],
 * ...]]` and one frame per reply (the reference, PR 6497), or `[21, [reply, ...]]` in one frame,
 * each reply the already-encoded map.
 *
 * @internal
 */
export const replyBatch = (
  wire: DialectWire,
  entries: ReadonlyArray<readonly [number, boolean]>,
  bodies: ReadonlyArray<Uint8Array>
): Array<Uint8Array> => {
  if (!wire.single) return [Msgpack.encode([wire.ENGINE_REPLY, entries]), ...bodies]
  const w = writer.reset().arrayHeader(2).number(wire.ENGINE_REPLY).arrayHeader(bodies.length)
  for (const body of bodies) w.raw(body)
  return [w.finish()]
}

/**
 * An engine step's partials (`{request_id, new_tokens, ...}`): `[22, [id, ...]]` and one frame
 * per partial, or `[22, [partial, ...]]` in one frame. Only where the dialect has partials.
 *
 * @internal
 */
export const partialBatch = (wire: DialectWire, partials: ReadonlyArray<Record<string, unknown>>): Array<Uint8Array> => {
  const header = wire.ENGINE_REPLY_PARTIAL!
  return wire.single
    ? [Msgpack.encode([header, partials])]
    : [Msgpack.encode([header, partials.map((p) => p.request_id)]), ...partials.map((p) => Msgpack.encode(p))]
}

/**
 * A one-frame dialect's reply as its coordinator passes it on: `generated_text` filled (these
 * coordinators detokenize every finished request), and on core_v0.17/18 a token prompt's text.
 *
 * @internal
 */
export const finishReply = (wire: DialectWire, reply: Uint8Array): Uint8Array => {
  const filled = GeneratedText.fill(reply)
  return wire.fillsPrompt ? GeneratedText.fillPrompt(filled) : filled
}

/**
 * The elements of a one-frame batch's array body (views of their bytes), or why it is not an
 * array of maps.
 *
 * @internal
 */
export const batchElements = (body: Uint8Array): Array<Uint8Array> | string => {
  const array = MsgpackScan.arrayHeader(body, 0)
  if (array === undefined) return "the batch is not an array"
  const out: Array<Uint8Array> = new Array(array.count)
  let p = array.start
  try {
    for (let i = 0; i < array.count; i++) {
      const end = MsgpackScan.skip(body, p)
      if (MsgpackScan.mapHeader(body, p) === undefined) return `element ${i} of the batch is not a map`
      out[i] = body.subarray(p, end)
      p = end
    }
  } catch (error) {
    return `the batch does not scan: ${String(error)}`
  }
  return p === body.length ? out : "bytes after the batch's array"
}

const KEY_REQUEST_ID = Msgpack.encode("request_id")

/**
 * The `request_id` of a reply or partial map (the coordinator's id), read from its bytes, or
 * `undefined` when it has no non-negative integer one.
 *
 * @internal
 */
export const requestIdOf = (map: Uint8Array): number | undefined => {
  let found
  try {
    found = MsgpackScan.findInMap(map, 0, [KEY_REQUEST_ID])
  } catch {
    return undefined
  }
  const at = found?.values[0]
  if (at === undefined) return undefined
  const t = map[at[0]]!
  // Integers only: a float 5.0 is not an id (decoding would make it one).
  const isInteger = t <= 0x7f || (t >= 0xcc && t <= 0xcf) || (t >= 0xd0 && t <= 0xd3)
  if (!isInteger) return undefined
  const id = Msgpack.decode(map.subarray(at[0], at[1]))
  return typeof id === "number" && Number.isSafeInteger(id) && id >= 0 ? id : undefined
}
