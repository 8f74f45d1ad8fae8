/**
 * `Msgpack.decode` reads what Python writes with a reader of its own and leaves the rest to
 * msgpackr: its results must be msgpackr's, value for value, on well-formed bytes, and it must
 * refuse exactly what msgpackr refuses.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Unpackr } from "msgpackr"
import { Msgpack } from "../src/index.ts"

/** msgpackr as `Msgpack` configured it before it had a reader of its own. */
const msgpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "auto" as "bigint" })

type Outcome = { readonly ok: true; readonly value: unknown } | { readonly ok: false }

const ours = (bytes: Uint8Array): Outcome => {
  try {
    return { ok: true, value: Msgpack.decode(bytes) }
  } catch (cause) {
    expect(cause).toBeInstanceOf(Msgpack.NotDecodableException)
    return { ok: false }
  }
}

const theirs = (bytes: Uint8Array): Outcome => {
  try {
    return { ok: true, value: msgpackr.unpack(bytes) }
  } catch {
    return { ok: false }
  }
}

/** Values as Python sends them: what the reader handles itself. */
const pythonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.nat({ max: 2 ** 32 - 1 }),
    fc.constantFrom(0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1, -32, -33, -128, -129, -(2 ** 31), -(2 ** 53)),
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 64n - 1n }),
    fc.constantFrom(2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n), -(2n ** 53n) - 1n),
    fc.double({ noNaN: true }),
    fc.string({ unit: "grapheme", maxLength: 40 }),
    fc.string({ maxLength: 300 }),
    fc.constantFrom("__proto__", "constructor", "COMPLETED", "generated_tokens"),
    fc.uint8Array({ maxLength: 40 }),
    fc.array(tie("value"), { maxLength: 6 }),
    fc.array(fc.nat({ max: 200_000 }), { maxLength: 300 }),
    fc.dictionary(fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom("__proto__", "a", "generated_length")), tie("value"), {
      maxKeys: 6
    })
  )
})).value

describe("Msgpack.decode", () => {
  it("decodes what Python sends exactly as msgpackr does", () => {
    fc.assert(
      fc.property(pythonValue, (value) => {
        const bytes = Buffer.from(Msgpack.encode(value))
        const a = ours(bytes)
        const b = theirs(bytes)
        expect(a).toEqual(b)
        expect(a.ok).toBe(true)
      }),
      { numRuns: 2000 }
    )
  })

  it("refuses what msgpackr refuses, and agrees on the rest: random bytes and damaged frames", () => {
    const damaged = pythonValue.chain((value) => {
      const bytes = Buffer.from(Msgpack.encode(value))
      return fc.oneof(
        fc.nat({ max: bytes.length - 1 }).map((n) => bytes.subarray(0, n)),
        fc.tuple(fc.nat({ max: bytes.length - 1 }), fc.nat({ max: 255 })).map(([i, x]) => {
          const copy = Buffer.from(bytes)
          copy[i] = x
          return copy
        }),
        fc.uint8Array({ minLength: 1, maxLength: 4 }).map((tail) => Buffer.concat([bytes, tail]))
      )
    })
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.from(b)), damaged), (bytes) => {
        if (bytes.length === 0) return
        const a = ours(bytes)
        const b = theirs(bytes)
        expect(a.ok).toBe(b.ok)
        // Invalid UTF-8 is the one place the two may read differently (each its own replacement).
        if (a.ok && b.ok && JSON.stringify(a.value, replacer) !== JSON.stringify(b.value, replacer)) {
          expect(hasReplacementChar(a.value) || hasReplacementChar(b.value)).toBe(true)
        }
      }),
      { numRuns: 5000 }
    )
  })

  it("gives 64-bit integers as numbers up to 2^53 and as bigints past it", () => {
    expect(Msgpack.decode(Msgpack.encode(2n ** 53n))).toBe(2 ** 53)
    expect(Msgpack.decode(Msgpack.encode(2n ** 53n + 1n))).toBe(2n ** 53n + 1n)
    expect(Msgpack.decode(Msgpack.encode(-(2n ** 53n)))).toBe(-(2 ** 53))
    expect(Msgpack.decode(Msgpack.encode(-(2n ** 53n) - 1n))).toBe(-(2n ** 53n) - 1n)
    expect(Msgpack.decode(Msgpack.encode(2n ** 64n - 1n))).toBe(2n ** 64n - 1n)
  })

  it("never lets a key set an object's prototype", () => {
    const decoded = Msgpack.decode(Msgpack.encode({ ["__proto__"]: { polluted: true } } as Record<string, unknown>))
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })
})

const replacer = (_: string, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)

const hasReplacementChar = (v: unknown): boolean => JSON.stringify(v, replacer)?.includes("\uFFFD") ?? false
