/**
 * What the coordinator and engines need to know of a protocol dialect, read once from its
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
 * | `core_v0.16` | `[4, [record, ...]]`, a record `{"requests": [reply], "latency": nil}` | `[4, rid, record]` | in every request of the record, and `prompt` from token ids |
 *
 * core_v0.16 also acknowledges: an engine answers PAUSE with `[6]` and STOP with `[11]`; once
 * every engine has, the coordinator sends `[6, identity]` / `[11, identity]` to every client it
 * knows and `[6]` / `[11]` to every engine (after the STOP_ACKs it exits). Its coordinator has no
 * control state machine: every signal is forwarded.
 *
 * Everything here is on the message path: headers are compared as numbers, replies are located
 * in their batch by scanning bytes, never decoded whole.
 *
 * @since 0.2.0
 * @internal
 */
import { type Dialect, Dialects, type Frames, Headers, type MessageSpec, Msgpack, MsgpackScan } from "@mcore-effect/protocol"
import type { CoordinatorTokenizer } from "../CoordinatorTokenizer.ts"
import * as GeneratedText from "./generatedText.ts"

/** The wire value of a header the dialect has, or `undefined`. */
const valueIn = (dialect: Dialect.Dialect, name: Headers.HeaderName): number | undefined => dialect.headers.values[name]

/**
 * One dialect's wire, as the coordinator and the test engines use it.
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
  /** `undefined` on core_v0.16, whose engines stop without a word (after STOP_ACK). */
  readonly DISCONNECT: number | undefined
  /** core_v0.16's acknowledgements, `undefined` elsewhere. */
  readonly PAUSE_ACK: number | undefined
  readonly STOP_ACK: number | undefined
  /** core_v0.16: a reply is a record `{"requests": [request, ...], "latency": ...}`. */
  readonly records: boolean
  /**
   * The coordinator and engines keep Megatron's control states (0.17 on: a signal in the wrong
   * state is logged and not forwarded); core_v0.16 forwards and obeys every signal.
   */
  readonly controlStates: boolean
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
    DISCONNECT: valueIn(dialect, "DISCONNECT"),
    PAUSE_ACK: valueIn(dialect, "PAUSE_ACK"),
    STOP_ACK: valueIn(dialect, "STOP_ACK"),
    records: name === "core_v0.16",
    controlStates: name !== "core_v0.16",
    detokenizes: dialect.framing === "single" ? "always" : "asked",
    fillsPrompt: name === "core_v0.17" || name === "core_v0.18" || name === "core_v0.16"
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
 * A final reply or a partial as the coordinator sends it to a client, its identity first: `[h,
 * rid]` and the body as its own frame (multipart), or `[h, rid, body]` in one frame, the body's
 * bytes copied as they are.
 *
 * @internal
 */
export const toClient = (
  wire: DialectWire,
  client: Uint8Array,
  header: number,
  clientRequestId: number,
  body: Uint8Array
): Array<Uint8Array> =>
  wire.single
    ? [client, writer.reset().arrayHeader(3).number(header).number(clientRequestId).raw(body).finish()]
    : [client, writer.reset().arrayHeader(2).number(header).number(clientRequestId).finish(), body]

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
export const finishReply = (wire: DialectWire, reply: Uint8Array, tokenizer: CoordinatorTokenizer | undefined): Uint8Array => {
  if (tokenizer === undefined) return reply
  if (wire.records) return finishRecord(reply, tokenizer)
  const filled = GeneratedText.fill(reply, tokenizer)
  return wire.fillsPrompt ? GeneratedText.fillPrompt(filled, tokenizer) : filled
}

const KEY_REQUESTS = Msgpack.encode("requests")
const KEY_LATENCY = Msgpack.encode("latency")

/** Where a record's `requests` array lies, or `undefined` when the map has none. */
const requestsOf = (record: Uint8Array): { readonly at: readonly [number, number]; readonly elements: Array<Uint8Array> } | undefined => {
  try {
    const at = MsgpackScan.findKeys(record, 0, [KEY_REQUESTS])?.[0]
    if (at === undefined) return undefined
    const array = MsgpackScan.arrayHeader(record, at[0])
    if (array === undefined) return undefined
    const elements: Array<Uint8Array> = []
    let p = array.start
    for (let i = 0; i < array.count; i++) {
      const end = MsgpackScan.skip(record, p)
      elements.push(record.subarray(p, end))
      p = end
    }
    return { at: [at[0], at[1]], elements }
  } catch {
    return undefined
  }
}

/**
 * core_v0.16's coordinator detokenizes every request of a record (`detokenize`, `:333`): each
 * gets `generated_text`, and a token prompt its text; the rest of the record as it came.
 */
const finishRecord = (record: Uint8Array, tokenizer: CoordinatorTokenizer): Uint8Array => {
  const found = requestsOf(record)
  if (found === undefined) return record
  const w = new Msgpack.Writer().arrayHeader(found.elements.length)
  for (const request of found.elements) w.raw(GeneratedText.fillPrompt(GeneratedText.fill(request, tokenizer), tokenizer))
  const array = w.finish()
  const out = new Uint8Array(record.length - (found.at[1] - found.at[0]) + array.length)
  out.set(record.subarray(0, found.at[0]), 0)
  out.set(array, found.at[0])
  out.set(record.subarray(found.at[1]), found.at[0] + array.length)
  return out
}

/**
 * A finished request as core_v0.16's engine sends it: in a record of its own,
 * `{"requests": [request], "latency": nil}`.
 *
 * @internal
 */
export const asRecord = (request: Uint8Array): Uint8Array =>
  writer.reset().mapHeader(2).raw(KEY_REQUESTS).arrayHeader(1).raw(request).raw(KEY_LATENCY).nil().finish()

/**
 * The coordinator's id of a reply (of a record: its first request's, which the 0.16 coordinator
 * routes by), or `undefined` when it has no non-negative integer one.
 *
 * @internal
 */
export const replyIdOf = (wire: DialectWire, reply: Uint8Array): number | undefined => {
  if (!wire.records) return requestIdOf(reply)
  const first = requestsOf(reply)?.elements[0]
  return first === undefined ? undefined : requestIdOf(first)
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
      const t = body[p]
      if (t !== undefined && !((t >= 0x80 && t <= 0x8f) || t === 0xde || t === 0xdf)) return `element ${i} of the batch is not a map`
      const end = MsgpackScan.skip(body, p)
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
  // Megatron's layout: a fixmap whose first key is `request_id` and its value a positive fixint
  // or uint 8/16/32, read where it lies (what every partial and reply of a stream goes through).
  const k = KEY_REQUEST_ID.length
  if (map[0]! >= 0x80 && map[0]! <= 0x8f && map.length > k + 5 && MsgpackScan.bytesEqual(map, 1, 1 + k, KEY_REQUEST_ID)) {
    const p = 1 + k
    const t = map[p]!
    if (t <= 0x7f) return t
    if (t === 0xcc) return map[p + 1]!
    if (t === 0xcd) return (map[p + 1]! << 8) | map[p + 2]!
    if (t === 0xce) return ((map[p + 1]! << 24) >>> 0) + ((map[p + 2]! << 16) | (map[p + 3]! << 8) | map[p + 4]!)
  }
  let found
  try {
    // Its first key in Megatron's replies: the other 35 are not read.
    found = MsgpackScan.findKeys(map, 0, [KEY_REQUEST_ID])
  } catch {
    return undefined
  }
  const at = found?.[0]
  if (at === undefined) return undefined
  const t = map[at[0]]!
  // Integers only: a float 5.0 is not an id (decoding would make it one).
  const isInteger = t <= 0x7f || (t >= 0xcc && t <= 0xcf) || (t >= 0xd0 && t <= 0xd3)
  if (!isInteger) return undefined
  const id = Msgpack.decode(map.subarray(at[0], at[1]))
  return typeof id === "number" && Number.isSafeInteger(id) && id >= 0 ? id : undefined
}
