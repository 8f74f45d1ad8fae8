/**
 * Hostile coordinator-to-client messages for the fuzz test: random frames, valid headers with
 * wrong bodies, wrong arities, huge declared lengths, deep nesting, unknown headers, valid
 * replies for ids the client never issued, and look-alikes of real replies: float ids and float
 * headers (float32 and float64) around well-formed bodies, bodies with map keys that are not
 * strings or that repeat. Every one of them must be dropped and counted by the client, and none
 * may complete a real request: ids below `issued` (the real requests') appear only where the
 * message cannot be read as a reply or partial for them, except in a reply whose body is
 * malformed ({@link malformedReplyIds}), which fails the request it names if that one is pending.
 */
import { Headers, Messages, Msgpack, MsgpackScan } from "@mcore-effect/protocol"
import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
import { Result } from "effect"
import * as fc from "fast-check"

const H = Headers.values

type Message = ReadonlyArray<Uint8Array>

/** Length prefixes (type byte, byte count) of every msgpack form that declares a length. */
const declaring: ReadonlyArray<readonly [number, 1 | 2 | 4]> = [
  [0xc4, 1], [0xc5, 2], [0xc6, 4], // bin
  [0xd9, 1], [0xda, 2], [0xdb, 4], // str
  [0xdc, 2], [0xdd, 4], // array
  [0xde, 2], [0xdf, 4], // map
  [0xc7, 1], [0xc8, 2], [0xc9, 4] // ext
]

/** A value that declares far more bytes or elements than follow it. */
const hugeDeclared: fc.Arbitrary<Uint8Array> = fc.tuple(
  fc.constantFrom(...declaring),
  fc.uint8Array({ maxLength: 8 })
).map(([[type, width], tail]) => Uint8Array.from([type, ...new Array<number>(width).fill(0xff), ...tail]))

/** Arrays (or maps) nested `depth` deep. */
// dprint-ignore
const deeplyNested: fc.Arbitrary<Uint8Array> = fc.tuple(fc.oneof(
  { arbitrary: fc.integer({ min: 16, max: 512 }), weight: 1_000 },
  // Deeper than the decoder's stack: rare, as each costs milliseconds to refuse.
  { arbitrary: fc.integer({ min: 10_000, max: 20_000 }), weight: 1 }
), fc.boolean()).map(
  ([depth, maps]) => {
    const bytes = new Uint8Array(maps ? depth * 2 + 1 : depth + 1)
    if (maps) for (let i = 0; i < depth; i++) bytes.set([0x81, 0x00], i * 2)
    else bytes.fill(0x91, 0, depth)
    bytes[bytes.length - 1] = 0x01
    return bytes
  }
)

/** A small plain value (fast-check's `jsonValue` costs ~100 µs a sample; 100,000 are drawn here). */
const smallValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 8 }),
  fc.constantFrom(null, true, false),
  fc.array(fc.integer(), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 3 })
)

/** Anything msgpack can say that is not a map. */
const notAMap: fc.Arbitrary<Uint8Array> = fc.oneof(
  smallValue.filter((v) => v === null || typeof v !== "object" || Array.isArray(v)).map((v) => Msgpack.encode(v)),
  fc.uint8Array({ maxLength: 32 }).map((b) => Uint8Array.from([0xc1, ...b])), // 0xc1: never valid
  hugeDeclared,
  deeplyNested
)

/** A number as msgpack float32 (`ca`) or float64 (`cb`), whole or not. */
const float = (value: number, width: 4 | 8): Uint8Array => {
  const out = Buffer.alloc(1 + width)
  out[0] = width === 4 ? 0xca : 0xcb
  if (width === 4) out.writeFloatBE(value, 1)
  else out.writeDoubleBE(value, 1)
  return out
}

/** Frame 0 `[header, id]` with the header or the id (or both) written as a float. */
const floatMetadata = (header: number, id: number, which: "header" | "id" | "both", width: 4 | 8): Uint8Array =>
  Buffer.concat([
    Uint8Array.of(0x92),
    which === "id" ? Msgpack.encode(header) : float(header, width),
    which === "header" ? Msgpack.encode(id) : float(id, width)
  ])

/** Map keys Python's `unpackb` refuses (`strict_map_key`): anything but a str. */
const notStringKey: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.integer({ min: -1_000, max: 1_000 }).map((k) => Msgpack.encode(k)),
  fc.constantFrom(Uint8Array.of(0xc0), Uint8Array.of(0xc2), Uint8Array.of(0xc3), Uint8Array.of(0x90), Uint8Array.of(0x91, 0x01), Uint8Array.of(0x80)),
  fc.tuple(fc.double(), fc.constantFrom(4 as const, 8 as const)).map(([k, width]) => float(k, width)),
  fc.uint8Array({ maxLength: 4 }).map((k) => Msgpack.encode(k))
)

/**
 * `body` (a msgpack map) with one more entry put first: a key that is not a string, or one of
 * the map's own keys again (which a JavaScript object would merge into one).
 */
const withBadKey = (body: Uint8Array): fc.Arbitrary<Uint8Array> => {
  const header = MsgpackScan.mapHeader(body, 0)!
  const entries = body.subarray(header.start)
  const ownKeys: Array<Uint8Array> = []
  for (let p = header.start, i = 0; i < header.count; i++) {
    const keyEnd = MsgpackScan.skip(body, p)
    ownKeys.push(body.subarray(p, keyEnd))
    p = MsgpackScan.skip(body, keyEnd)
  }
  const key = ownKeys.length === 0 ? notStringKey : fc.oneof(notStringKey, fc.constantFrom(...ownKeys))
  return fc.tuple(key, smallValue).map(([k, value]) =>
    Buffer.concat([Uint8Array.of(0xde, (header.count + 1) >> 8, (header.count + 1) & 0xff), k, Msgpack.encode(value), entries])
  )
}

/**
 * The real requests' ids that `messages` name in a readable reply header: each of those
 * replies has a malformed body, so it fails the request it names when that one is pending.
 */
export const malformedReplyIds = (messages: ReadonlyArray<Message>, issued: number): ReadonlySet<number> => {
  const ids = new Set<number>()
  for (const frames of messages) {
    const envelope = Messages.Coordinator.decodeEnvelope(frames)
    if (Result.isFailure(envelope) || envelope.success.spec.tag !== "EngineReply") continue
    const id = envelope.success.metadata.requestId as number
    if (id < issued) ids.add(id)
  }
  return ids
}

/** True when the client could read `frames` as a message at all (any header, any id). */
const readable = (frames: Message): boolean => Result.isSuccess(Messages.Coordinator.decodeEnvelope(frames))

/**
 * The arbitrary: each message is one of the hostile kinds, weighted so every kind is frequent.
 * `issued` is the number of ids the client hands out during the test (its ids are 0, 1, ...).
 */
export const message = (issued: number): fc.Arbitrary<Message> => {
  const realId = fc.integer({ min: 0, max: issued - 1 })
  const neverIssued = fc.oneof(
    fc.integer({ min: issued + 1_000_000, max: 2 ** 31 }),
    fc.constant(Number.MAX_SAFE_INTEGER)
  )
  const anyId = fc.oneof(realId, neverIssued)
  const meta = (header: number, id: fc.Arbitrary<number>) => id.map((i) => Msgpack.encode([header, i]))
  // Schema-derived replies cost ~0.5 ms each: a pool of them, re-addressed.
  const arbitraries = Arbitraries.coordinatorMessages()
  const replies = fc.sample(fc.oneof(arbitraries.EngineReply, arbitraries.EngineReplyPartial), { numRuns: 200, seed: 1 })
  return fc.oneof(
    // random frames (never one the client could read)
    fc.array(fc.uint8Array({ maxLength: 48 }), { minLength: 1, maxLength: 6 }).filter((frames) => !readable(frames)),
    // a reply header with a body that is not a reply, for an id never issued
    fc.tuple(meta(H.ENGINE_REPLY, neverIssued), notAMap),
    // a partial header with a body that is not a partial, for any id (a real one's is malformed)
    fc.tuple(meta(H.ENGINE_REPLY_PARTIAL, anyId), notAMap),
    // wrong arities, real ids included
    fc.tuple(fc.constantFrom(H.ENGINE_REPLY, H.ENGINE_REPLY_PARTIAL), anyId, fc.constantFrom(0, 2, 3, 5)).map(
      ([header, id, bodies]): Message => [Msgpack.encode([header, id]), ...new Array(bodies).fill(Msgpack.encode({}))]
    ),
    fc.integer({ min: 1, max: 4 }).map((extra): Message => [Msgpack.encode([H.CONNECT_ACK]), ...new Array(extra).fill(Msgpack.encode(null))]),
    // metadata of the wrong shape around a known header
    fc.tuple(fc.constantFrom(H.CONNECT_ACK, H.ENGINE_REPLY, H.ENGINE_REPLY_PARTIAL), smallValue, smallValue).map(
      ([header, a, b]): Message => [Msgpack.encode([header, a, b]), Msgpack.encode({})]
    ),
    fc.tuple(fc.constantFrom(H.ENGINE_REPLY, H.ENGINE_REPLY_PARTIAL), fc.oneof(fc.string(), fc.double().filter((d) => !Number.isInteger(d)), fc.constant(-1))).map(
      ([header, id]): Message => [Msgpack.encode([header, id]), Msgpack.encode({})]
    ),
    // huge declared lengths and deep nesting, in frame 0 and in a body
    fc.tuple(fc.oneof(hugeDeclared, deeplyNested), fc.array(fc.uint8Array({ maxLength: 8 }), { maxLength: 2 })).map(
      ([head, rest]): Message => [head, ...rest]
    ),
    // unknown headers (numbers of every kind, other messages' headers, not numbers at all)
    fc.tuple(
      fc.oneof(
        fc.integer({ min: -1_000, max: 1_000_000 }).filter((h) => h !== H.CONNECT_ACK && h !== H.ENGINE_REPLY && h !== H.ENGINE_REPLY_PARTIAL),
        fc.constantFrom(H.SUBMIT_REQUEST, H.ABORT_REQUEST, H.CONNECT, H.SHUTDOWN, H.PAUSE),
        fc.string(),
        fc.double()
      ),
      fc.array(smallValue, { maxLength: 3 }),
      fc.array(fc.uint8Array({ maxLength: 16 }), { maxLength: 3 })
    ).map(([header, metadata, bodies]): Message => [Msgpack.encode([header, ...metadata]), ...bodies]),
    // well-formed replies and partials for ids the client never issued
    fc.tuple(fc.constantFrom(...replies), neverIssued).map(([m, id]) =>
      Result.getOrThrow(Messages.Coordinator.encode({ ...m, requestId: id }))
    ),
    // well-formed replies and partials (with the wrong content) for any id, real ones mostly,
    // under a float id or a float header: 5.0 is not 5 on the wire
    fc.tuple(
      fc.constantFrom(...replies),
      anyId,
      fc.constantFrom("header" as const, "id" as const, "both" as const),
      fc.constantFrom(4 as const, 8 as const)
    ).map(([m, id, which, width]): Message => {
      const [, ...bodies] = Result.getOrThrow(Messages.Coordinator.encode({ ...m, requestId: id }))
      const header = m._tag === "EngineReply" ? H.ENGINE_REPLY : H.ENGINE_REPLY_PARTIAL
      return [floatMetadata(header, id, which, width), ...bodies]
    }),
    // replies and partials whose body has a key that is not a string, or a key twice: partials
    // for any id; replies (which fail a real request they name) for real ids one time in ten
    fc.tuple(
      fc.constantFrom(...replies),
      fc.oneof({ arbitrary: realId, weight: 1 }, { arbitrary: neverIssued, weight: 9 }),
      anyId
    ).chain(([m, replyId, partialId]) => {
      const id = m._tag === "EngineReply" ? replyId : partialId
      const [head, body] = Result.getOrThrow(Messages.Coordinator.encode({ ...m, requestId: id }))
      return withBadKey(body!).map((bad): Message => [head!, bad])
    })
  )
}

/** `count` hostile messages, reproducibly from `seed`. */
export const sample = (count: number, issued: number, seed: number): Array<Message> =>
  fc.sample(message(issued), { numRuns: count, seed })
