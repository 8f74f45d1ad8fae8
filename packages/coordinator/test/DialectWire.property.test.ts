/**
 * The way back's byte readers, held against decoding: a partial's or reply's `request_id` read
 * where it lies, and a one-frame batch split into its elements without decoding them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Msgpack } from "@mcore-effect/protocol"
import * as fc from "fast-check"
import { batchElements, requestIdOf } from "../src/internal/dialectWire.ts"

/** What decoding says a map's id is: a non-negative safe integer, written as an integer. */
const decodedId = (id: unknown): number | undefined =>
  typeof id === "number" && Number.isSafeInteger(id) && id >= 0 ? id : undefined

const rest = fc.dictionary(
  // `__proto__` aside: the decoder renames it (`__proto_`, msgpackr's guard against prototype pollution).
  fc.string({ maxLength: 12 }).filter((key) => key !== "request_id" && key !== "__proto__"),
  fc.oneof(fc.integer(), fc.string(), fc.array(fc.nat(300_000), { maxLength: 80 }), fc.constant(null)),
  { maxKeys: 20 }
)
const anyId = fc.oneof(
  fc.nat(),
  fc.integer({ min: -70_000, max: 70_000 }),
  fc.constantFrom(0, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER),
  fc.double({ noNaN: true }).filter((x) => !Object.is(x, -0)),
  fc.string({ maxLength: 3 }),
  fc.constant(null)
)

describe("DialectWire", () => {
  it("reads request_id as decoding does, first key or not, whatever its form", () => {
    fc.assert(
      fc.property(anyId, rest, fc.boolean(), (id, others, first) => {
        const map = first ? { request_id: id, ...others } : { ...others, request_id: id }
        expect(requestIdOf(Msgpack.encode(map))).toBe(decodedId(id))
      }),
      { numRuns: 400 }
    )
  })

  it("gives no id for a map without one, a map cut short, or what is not a map", () => {
    expect(requestIdOf(Msgpack.encode({ other: 1 }))).toBeUndefined()
    expect(requestIdOf(Msgpack.encode([1, 2]))).toBeUndefined()
    const whole = Msgpack.encode({ request_id: 70_000, new_tokens: [1, 2, 3] })
    for (let end = 0; end < 16; end++) expect(requestIdOf(whole.subarray(0, end))).toBeUndefined()
  })

  it("splits a batch into its elements' bytes, and says why a batch is not one", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), rest), { maxLength: 20 }), (entries) => {
        const elements = entries.map(([id, others]) => ({ request_id: id, ...others }))
        const split = batchElements(Msgpack.encode(elements))
        if (typeof split === "string") throw new Error(split)
        expect(split.map((bytes) => Msgpack.decode(bytes))).toEqual(elements)
      }),
      { numRuns: 200 }
    )
    expect(batchElements(Msgpack.encode({ a: 1 }))).toBe("the batch is not an array")
    expect(batchElements(Msgpack.encode([{ a: 1 }, 2]))).toBe("element 1 of the batch is not a map")
    const two = Msgpack.encode([{ a: [1, 2, 3] }, { b: 1 }])
    expect(batchElements(two.subarray(0, two.length - 1))).toMatch(/^the batch does not scan: .*truncated/)
    expect(batchElements(Uint8Array.of(...two, 0xc0))).toBe("bytes after the batch's array")
  })
})
