/**
 * Properties of the wire codecs over arbitraries derived from the message Schemas
 * (`@mcore-effect/testkit`'s `Arbitraries`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
import { Result } from "effect"
import * as fc from "fast-check"
import { type Frames, Headers, Messages, type MessageSpec, Msgpack, ProtocolError } from "../src/index.ts"

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyCodec = Frames.Codec<ReadonlyArray<any>>

const codecs: ReadonlyArray<readonly [string, AnyCodec]> = [
  ["Client", Messages.Client],
  ["Coordinator", Messages.Coordinator],
  ["Engine", Messages.Engine]
]

/**
 * What a message means on the wire, whatever form it was held in: typed arrays as arrays, bytes as
 * plain bytes, a pre-encoded body (`Msgpack.Raw`) as the value it decodes to, -0 as 0 (a whole
 * number goes out as an integer).
 */
const normalise = (value: unknown): unknown => {
  if (value instanceof Msgpack.Raw) return normalise(Msgpack.decode(value.bytes))
  if (value instanceof Uint8Array) return { bytes: Array.from(value) }
  if (ArrayBuffer.isView(value)) return Array.from(value as unknown as ArrayLike<unknown>, normalise)
  if (typeof value === "number") return Object.is(value, -0) ? 0 : value
  if (Array.isArray(value)) return value.map(normalise)
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value)) out[key] = normalise((value as Record<string, unknown>)[key])
    return out
  }
  return value
}

const encode = (codec: AnyCodec, message: unknown): Array<Uint8Array> => {
  const frames = codec.encode(message as never)
  if (Result.isFailure(frames)) throw new Error(`encode failed: ${frames.failure.message}`)
  return frames.success
}

describe("decode(encode(m)) equals m", () => {
  const byDirection: ReadonlyArray<readonly [string, AnyCodec, Record<string, fc.Arbitrary<unknown>>]> = [
    ["Client", Messages.Client, Arbitraries.clientMessages()],
    ["Coordinator", Messages.Coordinator, Arbitraries.coordinatorMessages()],
    ["Engine", Messages.Engine, Arbitraries.engineMessages()]
  ]
  for (const [direction, codec, arbitraries] of byDirection) {
    for (const spec of codec.specs as ReadonlyArray<MessageSpec.Any>) {
      const arbitrary = arbitraries[spec.tag]!
      const simple = spec.bodyKeys.length === 0 && spec.metadataKeys.length === 0
      it(`${direction} ${spec.tag}`, () => {
        fc.assert(
          fc.property(arbitrary, (message) => {
            const frames = encode(codec, message)
            const decoded = codec.decode(frames)
            if (Result.isFailure(decoded)) throw new Error(`decode failed: ${decoded.failure.message}`)
            expect(normalise(decoded.success)).toEqual(normalise(message))
          }),
          { numRuns: simple ? 5 : spec.tag === "SubmitRequest" ? 150 : 80 }
        )
      })
    }
  }

  it("every message arbitrary of a direction is covered by its union arbitrary", () => {
    const seen = new Set(fc.sample(Arbitraries.clientMessage(), { numRuns: 400, seed: 1 }).map((m) => m._tag))
    expect(seen).toEqual(new Set(Messages.Client.specs.map((s) => s.tag)))
  })
})

describe("frame 0 does not grow with the prompt", () => {
  const ids = (n: number, id: number) => {
    const out = new Array<number>(n)
    for (let i = 0; i < n; i++) out[i] = (id + i * 7919) % 262_144
    return out
  }
  const forBoth = [
    ["SubmitRequest", Arbitraries.clientMessages().SubmitRequest],
    ["SubmitRequestWithKv", Arbitraries.clientMessages().SubmitRequestWithKv]
  ] as const
  for (const [tag, arbitrary] of forBoth) {
    it(tag, () => {
      fc.assert(
        fc.property(arbitrary, fc.nat({ max: 262_143 }), fc.boolean(), (message, seed, typed) => {
          const small = ids(10, seed)
          const large = ids(100_000, seed)
          const a = encode(Messages.Client, { ...message, prompt: typed ? Int32Array.from(small) : small })
          const b = encode(Messages.Client, { ...message, prompt: typed ? Int32Array.from(large) : large })
          expect(a[0]!.length).toBe(b[0]!.length)
          expect(b[0]).toEqual(a[0])
          expect(b[1]!.length).toBeGreaterThan(100_000)
        }),
        { numRuns: 25 }
      )
    })
  }
})

describe("decoding never throws, whatever the frames", () => {
  const isProtocolError = (e: unknown) => e instanceof ProtocolError.ProtocolError

  /** Runs every decoder of every codec; each returns a message or a typed error. */
  const decodesSafely = (frames: ReadonlyArray<Uint8Array>): void => {
    for (const [, codec] of codecs) {
      const message = codec.decode(frames)
      if (Result.isFailure(message)) expect(isProtocolError(message.failure)).toBe(true)
      else expect(typeof (message.success as { _tag: unknown })._tag).toBe("string")
      const envelope = codec.decodeEnvelope(frames)
      if (Result.isFailure(envelope)) {
        expect(isProtocolError(envelope.failure)).toBe(true)
        continue
      }
      for (const body of envelope.success.spec.bodyKeys) {
        const decoded = codec.decodeBody(envelope.success, body)
        if (Result.isFailure(decoded)) expect(isProtocolError(decoded.failure)).toBe(true)
      }
    }
  }

  const headers = Object.values(Headers.table).map((h) => h.value)
  const header = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...headers) },
    { weight: 1, arbitrary: fc.oneof(fc.integer({ min: -300, max: 300 }), fc.constant(2 ** 40), fc.double(), fc.string()) }
  )
  const value = Arbitraries.tokenIds().map((x): unknown => x).chain((ids) =>
    fc.oneof(fc.constant<unknown>(ids), fc.constant(null), fc.nat(), fc.string({ maxLength: 8 }), fc.boolean(), fc.constant({ a: 1 }), fc.constant([1, [2]]))
  )
  /** A metadata frame with a real (or near) header and values of any kind. */
  const metadataFrame = fc.tuple(header, fc.array(value, { maxLength: 4 })).map(([h, rest]) => Msgpack.encode([h, ...rest]))
  const bodyFrame = fc.oneof(
    fc.uint8Array({ maxLength: 48 }),
    value.map((v) => Msgpack.encode(v)),
    fc.constantFrom(Uint8Array.of(0xc0), Uint8Array.of(0x90), Uint8Array.of(0x80))
  )
  const hostile = fc.constantFrom(
    Uint8Array.of(0xdd, 0xff, 0xff, 0xff, 0xff), // array32 of 4G elements
    Uint8Array.of(0xdf, 0xff, 0xff, 0xff, 0xff), // map32 of 4G pairs
    Uint8Array.of(0xdb, 0xff, 0xff, 0xff, 0xff, 0x61), // str32 of 4 GB
    Uint8Array.of(0xc6, 0xff, 0xff, 0xff, 0xff), // bin32 of 4 GB
    Uint8Array.of(0xc9, 0xff, 0xff, 0xff, 0xff, 0x01), // ext32
    Uint8Array.of(0x94, 0x14, 0xdd, 0xff, 0xff, 0xff, 0xff), // [20, <4G array>
    Uint8Array.of(0x92, 0x15, 0xdc, 0xff, 0xff), // [21, <64K array>
    Uint8Array.of(0xc1), // never used
    Uint8Array.of(0xd4, 0x00, 0x00), // fixext: msgpackr's undefined
    Uint8Array.of(0xd6, 0xff, 0, 0, 0, 0), // timestamp ext
    Uint8Array.of(0xc7, 0x01, 0x72, 0x00), // ext 'r' (msgpackr records)
    new Uint8Array(0),
    new Uint8Array(100_000).fill(0x91), // 100,000 nested one-element arrays, never closed
    Uint8Array.from([...new Array<number>(100_000).fill(0x91), 0x00]), // ... closed
    Uint8Array.from([...new Array<number>(50_000).fill(0x81).flatMap(() => [0x81, 0xa1, 0x61]), 0xc0]) // nested maps
  )
  const truncated = Arbitraries.clientMessage().chain((m) => {
    const frames = encode(Messages.Client, m)
    return fc.tuple(fc.nat({ max: frames.length - 1 }), fc.nat()).map(([i, cut]) => {
      const out = frames.slice()
      out[i] = out[i]!.subarray(0, cut % Math.max(1, out[i]!.length))
      return out
    })
  })
  const wrongArity = fc.oneof(Arbitraries.clientMessage(), Arbitraries.engineMessage(), Arbitraries.coordinatorMessage()).chain((m) => {
    const codec = [Messages.Client, Messages.Engine, Messages.Coordinator].find((c) =>
      (c.specs as ReadonlyArray<MessageSpec.Any>).some((s) => s.tag === m._tag)
    )!
    const frames = encode(codec, m)
    return fc.oneof(
      fc.constant(frames.slice(0, -1)),
      bodyFrame.map((extra) => [...frames, extra]),
      fc.constant(frames.slice(0, 1)),
      fc.constant([...frames].reverse())
    )
  })

  it("random bytes, 0..8 frames", () => {
    fc.assert(fc.property(fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 8 }), (frames) => decodesSafely(frames)), { numRuns: 300 })
  })

  it("valid headers with wrong metadata and bodies", () => {
    fc.assert(fc.property(metadataFrame, fc.array(bodyFrame, { maxLength: 7 }), (head, bodies) => decodesSafely([head, ...bodies])), {
      numRuns: 400
    })
  })

  it("wrong arities and truncated frames of real messages", () => {
    fc.assert(fc.property(wrongArity, (frames) => decodesSafely(frames)), { numRuns: 150 })
    fc.assert(fc.property(truncated, (frames) => decodesSafely(frames)), { numRuns: 150 })
  })

  it("deep nesting and huge declared lengths, in any frame", () => {
    fc.assert(
      fc.property(fc.oneof(metadataFrame, bodyFrame), hostile, fc.nat({ max: 5 }), fc.boolean(), (head, bad, at, first) => {
        const frames = first ? [bad, head] : [head, ...new Array<Uint8Array>(at).fill(Uint8Array.of(0xc0)), bad]
        decodesSafely(frames)
        decodesSafely([bad])
      }),
      { numRuns: 60 }
    )
  })
})

describe("block hashes above 2^53 survive exactly", () => {
  const TWO_53 = 1n << 53n
  const big = fc.oneof(
    fc.bigInt({ min: TWO_53 + 1n, max: (1n << 63n) - 1n }),
    fc.constantFrom(TWO_53, TWO_53 + 1n, TWO_53 + 2n, (1n << 63n) - 1n)
  )

  it("as uint64 (0xcf) on the wire and as the same bigint after decoding", () => {
    fc.assert(
      fc.property(Arbitraries.clientMessages().SubmitRequest, fc.array(big, { minLength: 1, maxLength: 6 }), (message, hashes) => {
        const blockHashes = BigUint64Array.from(hashes)
        const frames = encode(Messages.Client, { ...message, blockHashes })
        const frame = frames[2]!
        // An array of `cf` + 8 big-endian bytes per hash, as Python writes them; never a float (`cb`).
        const expected = new Uint8Array(1 + 9 * hashes.length)
        const view = new DataView(expected.buffer)
        expected[0] = 0x90 | hashes.length
        hashes.forEach((h, i) => {
          expected[1 + 9 * i] = 0xcf
          view.setBigUint64(2 + 9 * i, h)
        })
        expect(Array.from(frame)).toEqual(Array.from(expected))
        // Beyond 2^53 as bigints (2^53 itself is exact as a number).
        const raw = Msgpack.decode(frame) as ReadonlyArray<number | bigint>
        expect(raw.map((h) => BigInt(h))).toEqual(hashes)
        expect(raw.every((h, i) => typeof h === "bigint" || hashes[i] === TWO_53)).toBe(true)
        const decoded = Messages.Client.decode(frames)
        if (Result.isFailure(decoded)) throw new Error(decoded.failure.message)
        const got = (decoded.success as { blockHashes: BigUint64Array }).blockHashes
        expect(got).toBeInstanceOf(BigUint64Array)
        expect(Array.from(got)).toEqual(hashes)
      }),
      { numRuns: 100 }
    )
  })
})
