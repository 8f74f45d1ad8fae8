/**
 * `Msgpack.encode` writes into shared 64 KiB buffers and hands out views of them: every value
 * handed out must stay what it was when it was returned, whatever is encoded afterwards (values
 * that cross a buffer's end, values larger than a buffer, values that fail half-way, and an
 * encode called from inside another one).
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
