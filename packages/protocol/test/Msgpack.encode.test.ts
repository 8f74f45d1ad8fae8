/**
 * `Msgpack.encode`'s performance paths against its plain one. It writes into shared 64 KiB
 * buffers and hands out views of them: every value handed out must stay what it was when it was
 * returned, whatever is encoded afterwards (values that cross a buffer's end, values larger than
 * a buffer, values that fail half-way, and an encode called from inside another one). Arrays of
 * small non-negative integers and short ASCII strings have loops of their own: their bytes must be
 * what the general path writes.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Msgpack } from "../src/index.ts"

const copy = (bytes: Uint8Array): Buffer => Buffer.from(bytes)

/** What a fresh writer writes for the value: the reference the pool must match. */
const alone = (value: unknown): Buffer => copy(new Msgpack.Writer().value(value).finish())

describe("Msgpack.encode's buffer pool", () => {
  it("values handed out never change, across buffer ends and past a buffer's size", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.array(fc.integer({ min: 0, max: 2 ** 32 }), { maxLength: 3000 }),
            fc.string({ maxLength: 2000 }),
            fc.constant(null),
            // Over the 64 KiB buffer on its own.
            fc.nat({ max: 3 }).map((k) => new Uint8Array(70_000 + k).fill(k + 1))
          ),
          { minLength: 1, maxLength: 60 }
        ),
        (values) => {
          const out = values.map((value) => Msgpack.encode(value))
          for (let i = 0; i < values.length; i++) expect(copy(out[i]!).equals(alone(values[i]))).toBe(true)
          for (let i = 0; i < values.length; i++) {
            const value = values[i]
            // msgpackr decodes bin as a Buffer: compare bytes as bytes.
            const expected = value instanceof Uint8Array ? Buffer.from(value) : value
            expect(Msgpack.decode(out[i]!)).toEqual(expected)
          }
        }
      ),
      { numRuns: 60 }
    )
  })

  it("a value that fails half-way leaves nothing behind", () => {
    const before = Msgpack.encode([1, 2, 3])
    const kept = copy(before)
    expect(() => Msgpack.encode([new Array(5000).fill(7), () => 1])).toThrow(Msgpack.NotEncodableException)
    const after = Msgpack.encode("next")
    expect(copy(before).equals(kept)).toBe(true)
    expect(Msgpack.decode(after)).toBe("next")
  })

  it("an encode from inside another (a getter) gets its own buffer", () => {
    let inner: Uint8Array | undefined
    const value = {
      a: 1,
      get b() {
        inner = Msgpack.encode({ nested: [1, 2] })
        return "b"
      }
    }
    const outer = Msgpack.encode(value)
    expect(Msgpack.decode(outer)).toEqual({ a: 1, b: "b" })
    expect(Msgpack.decode(inner!)).toEqual({ nested: [1, 2] })
  })
})

describe("Msgpack.encode's fast paths", () => {
  /** An array's bytes built from its elements encoded one by one (no fast path applies to one number). */
  const elementWise = (values: ArrayLike<unknown>): Buffer => {
    const w = new Msgpack.Writer().arrayHeader(values.length)
    for (let i = 0; i < values.length; i++) w.raw(Msgpack.encode(values[i]))
    return copy(w.finish())
  }

  const boundaries = [0, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 2 ** 32 - 1, 2 ** 32, 2 ** 53, -0, -1, -33, 1.5, NaN]

  it("arrays of integers are written as each integer alone is, whatever follows them", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.integer({ min: 0, max: 2 ** 32 - 1 }),
            fc.constantFrom(...boundaries),
            fc.double(),
            fc.constantFrom("x", null, true)
          ),
          { maxLength: 200 }
        ),
        (values) => {
          expect(copy(Msgpack.encode(values)).equals(elementWise(values))).toBe(true)
        }
      )
    )
  })

  it("integer typed arrays take the same path", () => {
    const ints = Int32Array.from([1, 0x80, 0x10000, -5, 7, 2 ** 31 - 1])
    const uints = Uint32Array.from([0, 0xff, 0x100, 2 ** 32 - 1])
    const floats = Float64Array.from([1, -0, 0.5, 3])
    for (const a of [ints, uints, floats]) expect(copy(Msgpack.encode(a)).equals(elementWise(Array.from(a)))).toBe(true)
  })

  it("short strings, ASCII or not, are written as Python writes them", () => {
    const samples = ["", "a", "x".repeat(31), "x".repeat(32), "x".repeat(63), "x".repeat(64), "é", "ab€cd", "y".repeat(30) + "é", "z".repeat(62) + "ü"]
    for (const text of samples) {
      const bytes = Buffer.from(text, "utf8")
      const n = bytes.length
      const header = n < 32 ? Buffer.of(0xa0 | n) : n < 256 ? Buffer.of(0xd9, n) : Buffer.of(0xda, n >> 8, n & 0xff)
      expect(copy(Msgpack.encode(text)).toString("hex")).toBe(Buffer.concat([header, bytes]).toString("hex"))
    }
  })
})
