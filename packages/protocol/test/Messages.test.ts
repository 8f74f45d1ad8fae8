import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import * as Messages from "../src/Messages.ts"
import * as Msgpack from "../src/Msgpack.ts"

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
