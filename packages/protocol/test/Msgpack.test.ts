/**
 * The reusable `Msgpack.Writer`: what each method writes is what `Msgpack.encode` writes for that
 * value (floats aside: always float64), and one writer serves many values.
 */
import { describe, expect, it } from "@effect/vitest"
import { Msgpack } from "../src/index.ts"

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex")

describe("Msgpack.Writer", () => {
  it("writes each value as encode does", () => {
    const values: ReadonlyArray<unknown> = [
      0, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER,
      -1, -32, -33, -128, -129, -32768, -32769, -(2 ** 31), -(2 ** 31) - 1, Number.MIN_SAFE_INTEGER,
      0.5, -0, 2 ** 60, NaN, "", "x", "é".repeat(40), "a".repeat(70_000), true, false, null, undefined,
      [1, [2, "three"]], { a: 1, b: [null] }, new Uint8Array(300), new Int32Array([-1, 7]), 2n ** 63n
    ]
    const w = new Msgpack.Writer({ initialSize: 8 })
    for (const v of values) {
      expect(hex(w.value(v).finish())).toBe(hex(Msgpack.encode(v)))
    }
    expect(hex(w.number(300).string("k").bool(true).nil().bin(Uint8Array.of(1)).finish())).toBe(
      hex(Buffer.concat([Msgpack.encode(300), Msgpack.encode("k"), Msgpack.encode(true), Msgpack.encode(null), Msgpack.encode(Uint8Array.of(1))]))
    )
    expect(hex(w.numbers([1, -1, 70_000]).finish())).toBe(hex(Msgpack.encode([1, -1, 70_000])))
  })

  it("writes floats as float64, whole or not", () => {
    const w = new Msgpack.Writer()
    expect(hex(w.float(1).finish())).toBe("cb3ff0000000000000")
    expect(hex(w.floats([1, 0.5]).finish())).toBe("92cb3ff0000000000000cb3fe0000000000000")
  })

  it("writes pre-encoded keys verbatim into maps and arrays of any size", () => {
    const key = Msgpack.encode("id")
    const w = new Msgpack.Writer()
    w.mapHeader(2).raw(key).number(7).raw(Msgpack.encode("xs")).arrayHeader(20)
    for (let i = 0; i < 20; i++) w.number(i)
    expect(Msgpack.decode(w.finish())).toEqual({ id: 7, xs: Array.from({ length: 20 }, (_, i) => i) })
    const big = new Msgpack.Writer().mapHeader(70_000)
    for (let i = 0; i < 70_000; i++) big.string(`k${i}`).nil()
    expect(Object.keys(Msgpack.decode(big.written()) as object)).toHaveLength(70_000)
  })

  it("finish copies and empties the writer; reset drops a value that failed half-way", () => {
    const w = new Msgpack.Writer()
    const first = w.number(1).finish()
    const second = w.number(2).finish()
    expect([hex(first), hex(second)]).toEqual(["01", "02"])
    w.arrayHeader(2).number(1)
    expect(() => w.value({ f: () => 1 })).toThrow(Msgpack.NotEncodableException)
    expect(hex(w.reset().value([3]).finish())).toBe("9103")
  })

  it("sorts keys when asked, as encode does", () => {
    const v = { b: 1, a: new Map([["d", 1], ["c", 2]]) }
    expect(hex(new Msgpack.Writer({ sortKeys: true }).value(v).finish())).toBe(hex(Msgpack.encode(v, { sortKeys: true })))
  })
})
