/**
 * Hostile coordinator-to-client messages for the fuzz test: random frames, valid headers with
 * wrong bodies, wrong arities, huge declared lengths, deep nesting, unknown headers, and valid
 * replies for ids the client never issued. Every one of them must be dropped and counted by the
 * client, and none may finish a real request: ids below `issued` (the real requests') appear
 * only where the message cannot be read as a reply or partial for them.
 */
import { Headers, Messages, Msgpack } from "@mcore-effect/protocol"
import { Arbitraries } from "@mcore-effect/testkit"
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
    )
  )
}

/** `count` hostile messages, reproducibly from `seed`. */
export const sample = (count: number, issued: number, seed: number): Array<Message> =>
  fc.sample(message(issued), { numRuns: count, seed })
