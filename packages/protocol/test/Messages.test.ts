import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import * as DialectCatalog from "../src/DialectCatalog.ts"
import * as Messages from "../src/Messages.ts"
import * as Msgpack from "../src/Msgpack.ts"
import * as MsgpackScan from "../src/MsgpackScan.ts"

const body = Msgpack.encode({ request_id: 1 })

/** What the decoder says of a message: the reply's request id, or `undefined` for anything else. */
const decoded = (frames: ReadonlyArray<Uint8Array>): number | undefined => {
  const envelope = Messages.Coordinator.decodeEnvelope(frames)
  if (Result.isFailure(envelope) || envelope.success.spec.tag !== "EngineReply") return undefined
  return envelope.success.metadata.requestId as number
}

describe("Messages.engineReplyId", () => {
  it("reads the id of every ENGINE_REPLY whose id is below 2^32, in each msgpack width", () => {
    for (const id of [0, 1, 127, 128, 255, 256, 65_535, 65_536, 2 ** 31, 2 ** 32 - 1]) {
      const frames = [Msgpack.encode([21, id]), body]
      expect(Messages.engineReplyId(frames)).toBe(id)
      expect(decoded(frames)).toBe(id)
    }
    fc.assert(
      fc.property(fc.nat({ max: 2 ** 32 - 1 }), (id) => {
        expect(Messages.engineReplyId([Msgpack.encode([21, id]), body])).toBe(id)
      })
    )
  })

  it("leaves everything else to the decoder: other messages, other arities, wider ids, trailing bytes", () => {
    const cases: Array<ReadonlyArray<Uint8Array>> = [
      [Msgpack.encode([22, 5]), body],
      [Msgpack.encode([21, 5])],
      [Msgpack.encode([21, 5]), body, body],
      [Msgpack.encode([21, 2 ** 32]), body],
      [Msgpack.encode([21, 5.5]), body],
      [Uint8Array.of(0x92, 0x15, 0x05, 0x00), body],
      [Uint8Array.of(0x92, 0x15, 0xcd, 0x01), body],
      [Uint8Array.of(0xdc, 0x00, 0x02, 0x15, 0x05), body],
      [Uint8Array.of(0x92, 0x15, 0xd0, 0x05), body],
      [Msgpack.encode([1]), body],
      []
    ]
    for (const frames of cases) expect(Messages.engineReplyId(frames)).toBeUndefined()
  })

  // The fast path may only ever say what the decoder says.
  it("never disagrees with the decoder, on any bytes", () => {
    const frame0 = fc.oneof(
      fc.uint8Array({ maxLength: 9 }),
      fc.nat().map((id) => Msgpack.encode([21, id])),
      fc.tuple(fc.nat({ max: 2 ** 32 - 1 }), fc.nat(8), fc.nat(255)).map(([id, at, byte]) => {
        const bytes = Uint8Array.from(Msgpack.encode([21, id]))
        bytes[at % bytes.length] = byte
        return bytes
      })
    )
    fc.assert(
      fc.property(frame0, fc.integer({ min: 1, max: 3 }), (head, count) => {
        const frames = [head, ...new Array<Uint8Array>(count - 1).fill(body)]
        const fast = Messages.engineReplyId(frames)
        if (fast !== undefined) expect(decoded(frames)).toBe(fast)
      }),
      { numRuns: 2_000 }
    )
  })
})

describe("Messages.singleEngineReplyId (one-frame dialects)", () => {
  const main = DialectCatalog.get("main")
  const v017 = DialectCatalog.get("core_v0.17")
  /** What main's codec says of a frame: the reply's id and where its body is, or `undefined`. */
  const viaCodec = (frame: Uint8Array, dialect = main): readonly [number, string] | undefined => {
    const envelope = dialect.coordinator.decodeEnvelope([frame])
    if (Result.isFailure(envelope) || envelope.success.spec.tag !== "EngineReply") return undefined
    return [envelope.success.metadata.requestId as number, Buffer.from(envelope.success.frames[1]!).toString("hex")]
  }
  const viaFastPath = (frame: Uint8Array, header = 21): readonly [number, string] | undefined => {
    const id = Messages.singleEngineReplyId([frame], header)
    return id === undefined ? undefined : [id, Buffer.from(frame.subarray(Messages.singleReplyBodyStart(frame))).toString("hex")]
  }

  it("reads the id and locates the reply as the codec does, in each id width and both header tables", () => {
    for (const id of [0, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1]) {
      const frame = Msgpack.encode([21, id, { request_id: 1, generated_tokens: [1, 2] }])
      expect(viaFastPath(frame)).toEqual(viaCodec(frame))
      expect(viaFastPath(frame)?.[0]).toBe(id)
      const old = Msgpack.encode([4, id, { request_id: 1 }])
      expect(viaFastPath(old, v017.headers.values.ENGINE_REPLY!)).toEqual(viaCodec(old, v017))
    }
  })

  // The fast path may only ever say what the codec says, except where the rest of the frame is not
  // one msgpack value: the codec refuses the frame, and the body's decoding (which the fast path
  // leaves it to) refuses the body, failing that request.
  it("never disagrees with the codec, on any bytes", () => {
    const frame = fc.oneof(
      fc.uint8Array({ maxLength: 12 }),
      fc.tuple(fc.nat({ max: 2 ** 32 - 1 }), fc.dictionary(fc.string(), fc.integer())).map(([id, reply]) => Msgpack.encode([21, id, reply])),
      fc.tuple(fc.nat({ max: 2 ** 32 - 1 }), fc.nat(12), fc.nat(255)).map(([id, at, byte]) => {
        const bytes = Uint8Array.from(Msgpack.encode([21, id, { a: 1 }]))
        bytes[at % bytes.length] = byte
        return bytes
      })
    )
    fc.assert(
      fc.property(frame, (f) => {
        const fast = viaFastPath(f)
        if (fast === undefined) return
        const start = Messages.singleReplyBodyStart(f)
        let oneValue: boolean
        try {
          oneValue = MsgpackScan.skip(f, start) === f.length
        } catch {
          oneValue = false
        }
        if (oneValue) {
          expect(viaCodec(f)).toEqual(fast)
        } else {
          // The codec refuses the frame; the fast path's reader refuses the body.
          expect(viaCodec(f)).toBeUndefined()
          expect(() => Msgpack.decode(f.subarray(start))).toThrow()
        }
      }),
      { numRuns: 2_000 }
    )
  })
})
