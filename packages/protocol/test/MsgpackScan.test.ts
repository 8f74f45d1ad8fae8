import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Msgpack, MsgpackScan } from "../src/index.ts"

const value = fc.letrec((tie) => ({
  any: fc.oneof(
    { depthSize: "small" },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.maxSafeInteger(),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
    fc.double({ noNaN: true }),
    fc.string(),
    fc.string({ minLength: 40, maxLength: 70_000, unit: "binary" }).filter((s) => s.length > 0),
    fc.uint8Array({ maxLength: 300 }),
    fc.array(tie("any"), { maxLength: 20 }),
    fc.dictionary(fc.string(), tie("any"), { maxKeys: 20 })
  )
})).any

describe("MsgpackScan", () => {
  it("skip finds the end of any value the encoder writes, inside any layout", () => {
    fc.assert(
      fc.property(value, value, (a, b) => {
        const first = Msgpack.encode(a)
        const both = new Uint8Array([...first, ...Msgpack.encode(b)])
        expect(MsgpackScan.skip(both, 0)).toBe(first.length)
        expect(MsgpackScan.skip(both, first.length)).toBe(both.length)
      }),
      { numRuns: 200 }
    )
  })

  it("findInMap locates each key's value bytes", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), value, { maxKeys: 30 }), (map) => {
        const bytes = Msgpack.encode(map)
        const keys = Object.keys(map)
        const found = MsgpackScan.findInMap(bytes, 0, keys.map((k) => Msgpack.encode(k)))!
        expect(found.end).toBe(bytes.length)
        keys.forEach((k, i) => {
          const [start, end] = found.values[i]!
          expect(Msgpack.decode(bytes.subarray(start, end))).toEqual(Msgpack.decode(Msgpack.encode(map[k])))
        })
      }),
      { numRuns: 200 }
    )
  })

  it("findKeys finds what findInMap finds, and reads nothing past the last key found", () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), value, { maxKeys: 30 }), fc.string(), (map, absent) => {
        const bytes = Msgpack.encode(map)
        const keys = [...Object.keys(map).filter((_, i) => i % 2 === 0), absent]
        const encoded = keys.map((k) => Msgpack.encode(k))
        expect(MsgpackScan.findKeys(bytes, 0, encoded)).toEqual(MsgpackScan.findInMap(bytes, 0, encoded)!.values)
      }),
      { numRuns: 200 }
    )
    // The map says it has three entries; the bytes after its first are not msgpack at all.
    const head = Msgpack.encode({ request_id: 7 })
    const truncated = Uint8Array.from([0x83, ...head.subarray(1), 0xc1, 0xc1])
    expect(MsgpackScan.findKeys(truncated, 0, [Msgpack.encode("request_id")])).toEqual([[12, 13]])
    expect(() => MsgpackScan.findInMap(truncated, 0, [Msgpack.encode("request_id")])).toThrow()
    expect(MsgpackScan.findKeys(Msgpack.encode([1, 2]), 0, [Msgpack.encode("a")])).toBeUndefined()
  })

  it("throws ScanError on truncated or invalid bytes instead of reading past the end", () => {
    const bytes = Msgpack.encode({ a: [1, 2, "three"], b: new Uint8Array(10) })
    for (let cut = 0; cut < bytes.length; cut++) {
      expect(() => MsgpackScan.skip(bytes.subarray(0, cut), 0)).toThrow(MsgpackScan.ScanError)
    }
    expect(() => MsgpackScan.skip(Uint8Array.of(0xc1), 0)).toThrow(MsgpackScan.ScanError)
  })
  it("decodedSize estimates without decoding, stops past its limit, and takes any depth", () => {
    expect(MsgpackScan.decodedSize(Msgpack.encode([1, 2, 3]), 0)).toBe(16 + 64 + 3 * 16)
    expect(MsgpackScan.decodedSize(Msgpack.encode({ a: "xy" }), 0)).toBe(16 + 64 + 2 * 16 + 2 * 2 + 2 * 3)
    // Billions of elements declared, five bytes present: over the limit at once.
    expect(MsgpackScan.decodedSize(Uint8Array.of(0xdd, 0xff, 0xff, 0xff, 0xff), 0, 1 << 20)).toBeGreaterThan(1 << 20)
    // Nested far deeper than any call stack.
    const deep = new Uint8Array(1_000_001).fill(0x91)
    deep[deep.length - 1] = 0x01
    expect(MsgpackScan.decodedSize(deep, 0)).toBe(1_000_000 * (16 + 64) + 16)
    // An array of empty maps decodes to far more than its bytes.
    const maps = Msgpack.encode(new Array(1000).fill({}))
    expect(MsgpackScan.decodedSize(maps, 0)).toBeGreaterThan(50 * maps.length)
    expect(MsgpackScan.decodedSize(maps, 0)).toBeLessThanOrEqual(16 + MsgpackScan.maxDecodedBytesPerByte * maps.length)
    expect(() => MsgpackScan.decodedSize(Uint8Array.of(0x92, 0x01), 0)).toThrow(MsgpackScan.ScanError)
    expect(() => MsgpackScan.decodedSize(Uint8Array.of(0xc1), 0)).toThrow(MsgpackScan.ScanError)
  })
})
