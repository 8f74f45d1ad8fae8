/**
 * `Msgpack.decode` reads what Python writes with a reader of its own and leaves the rest to
 * msgpackr: its results must be msgpackr's, value for value, on well-formed bytes, and it must
 * refuse exactly what msgpackr refuses.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { Unpackr } from "msgpackr"
import { Msgpack, MsgpackScan } from "../src/index.ts"

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
        // A Python dict may hold both `__proto__` and `__proto_`: msgpackr reads the first as the
        // second and keeps one value; we refuse rather than merge (found by this property).
        if (breaksPythonRules(bytes)) return expect(a.ok).toBe(false)
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
        // msgpackr takes any key, and merges repeated ones, and reads 0xc1 as a value: those are
        // refused here only (as Python's unpackb refuses them).
        expect(a.ok).toBe(b.ok && !breaksPythonRules(bytes))
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

  describe("map keys are strings, each once per map (Python's strict_map_key)", () => {
    // Bytes from Python's msgpack 1.0.3, `packb(value, use_bin_type=True)`; `unpackb` refuses the
    // first three ("int is not allowed for map key when strict_map_key=True").
    it.each([
      ["{1: 2, 3: [4]}", "820102039104", "a map key must be a string, got an integer"],
      ["{'1': 2, 1: 3}", "82a131020103", "a map key must be a string, got an integer"],
      ["{None: 1}", "81c001", "a map key must be a string, got nil"],
      ["{1.5: 1}", "81cb3ff800000000000001", "a map key must be a string, got a float"],
      ["{b'k': 1}", "81c4016b01", "a map key must be a string, got bytes"],
      ["{(1,): 1}", "81910101", "a map key must be a string, got an array"],
      ["{'a': {2: 3}}", "81a161810203", "a map key must be a string, got an integer"],
      ["[{'a': 1}, {True: 1}]", "9281a1610181c301", "a map key must be a string, got a boolean"]
    ])("refuses %s", (_, hex, why) => {
      expect(() => Msgpack.decode(Buffer.from(hex, "hex"))).toThrow(new Msgpack.NotDecodableException(why))
    })

    it.each([
      ["the same key twice", "82a16101a16102", "a"],
      ["__proto__ beside __proto_ (read as the same key)", "82a95f5f70726f746f5f5f01a85f5f70726f746f5f02", "__proto_"],
      ["a repeated key in a nested map", "81a17882a16201a16202", "b"]
    ])("refuses %s, never merging the two", (_, hex, key) => {
      expect(() => Msgpack.decode(Buffer.from(hex, "hex"))).toThrow(new Msgpack.NotDecodableException(`a map holds the key "${key}" twice`))
    })

    it("holds on the path left to msgpackr too (an extension value, deep nesting)", () => {
      // {"a": <fixext>, 1: 2}: the extension sends the whole frame to msgpackr.
      expect(() => Msgpack.decode(Buffer.from("82a161d4000001 02".replace(/ /g, ""), "hex"))).toThrow("got an integer")
      expect(() => Msgpack.decode(Buffer.from("83a161d40000a16201a16202", "hex"))).toThrow('the key "b" twice')
      const deep = (inner: ReadonlyArray<number>) => Uint8Array.from([...new Array<number>(600).fill(0x91), ...inner])
      expect(() => Msgpack.decode(deep([0x81, 0x01, 0x02]))).toThrow("got an integer")
      expect(() => Msgpack.decode(deep([0x82, 0xa1, 0x61, 0x01, 0xa1, 0x61, 0x02]))).toThrow('the key "a" twice')
      expect(Msgpack.decode(deep([0x82, 0xa1, 0x61, 0x01, 0xa1, 0x62, 0x02]))).toBeDefined()
      expect(Msgpack.decode(Buffer.from("82a161d40000a16201", "hex"))).toEqual({ a: undefined, b: 1 })
    })

    it("tells a repeat within a map from the same key in a nested or a sibling map", () => {
      type Node = { readonly keys: ReadonlyArray<string>; readonly children: ReadonlyArray<Node> }
      // Few distinct keys, so repeats are common; some long (past the string cache) or empty.
      const key = fc.constantFrom("a", "b", "request_id", "__proto__", "__proto_", "", "k".repeat(30), "é")
      const node: fc.Arbitrary<Node> = fc.letrec<{ node: Node }>((tie) => ({
        node: fc.record({
          keys: fc.array(key, { maxLength: 5 }),
          children: fc.oneof({ maxDepth: 3, depthIdentifier: "maps" }, fc.constant([]), fc.array(tie("node"), { maxLength: 3 }))
        })
      })).node
      /** A map of `keys`, each key's value one of the children (nested maps) or a number. */
      const write = (w: Msgpack.Writer, n: Node): void => {
        w.mapHeader(n.keys.length)
        n.keys.forEach((k, i) => {
          w.string(k)
          const child = n.children[i]
          if (child === undefined) w.value(i)
          else write(w, child)
        })
      }
      const repeats = (n: Node): boolean => {
        const names = n.keys.map((k) => (k === "__proto__" ? "__proto_" : k))
        return new Set(names).size < names.length || n.children.some((c, i) => i < n.keys.length && repeats(c))
      }
      fc.assert(
        fc.property(fc.array(node, { minLength: 1, maxLength: 3 }), (nodes) => {
          const w = new Msgpack.Writer()
          w.arrayHeader(nodes.length)
          for (const n of nodes) write(w, n)
          const bytes = w.finish()
          if (nodes.some(repeats)) expect(() => Msgpack.decode(bytes)).toThrow("twice")
          else expect(Msgpack.decode(bytes)).toBeDefined()
        }),
        { numRuns: 3000 }
      )
    })

    it("and encode writes none: a Map key that is not a string is NotEncodable, before any byte goes out", () => {
      for (const key of [1, null, true, 1n, new Uint8Array([1]), ["a"]]) {
        expect(() => Msgpack.encode({ meta: new Map<unknown, unknown>([["a", 1], [key, 2]]) })).toThrow(
          new Msgpack.NotEncodableException("meta", `a map key must be a string, got ${key === null ? "null" : typeof key}`)
        )
      }
      expect(Msgpack.decode(Msgpack.encode(new Map<string, unknown>([["a", 1], ["b", new Map([["c", 2]])]])))).toEqual({ a: 1, b: { c: 2 } })
    })

    it("keeps every str key, inherited names included", () => {
      const map = { constructor: 1, toString: 2, hasOwnProperty: 3, valueOf: null, "": 4 }
      expect(Msgpack.decode(Msgpack.encode(map))).toEqual(map)
    })
  })

  it("refuses the never-used byte 0xc1, as Python does (msgpackr reads it as a value)", () => {
    expect(() => Msgpack.decode(Uint8Array.of(0xc1))).toThrow(Msgpack.NotDecodableException)
    expect(() => Msgpack.decode(Uint8Array.of(0x92, 0xc1, 0x01))).toThrow(Msgpack.NotDecodableException)
  })

  it("never lets a key set an object's prototype", () => {
    const decoded = Msgpack.decode(Msgpack.encode({ ["__proto__"]: { polluted: true } } as Record<string, unknown>))
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })
})

const replacer = (_: string, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)

const hasReplacementChar = (v: unknown): boolean => JSON.stringify(v, replacer)?.includes("\uFFFD") ?? false

const breaksPythonRules = (bytes: Uint8Array): boolean => {
  try {
    return breaksKeyRules(bytes, 0).broken
  } catch (cause) {
    // Bytes msgpackr took: the one thing the scan refuses in them is the never-used 0xc1.
    expect(String(cause)).toContain("invalid byte 0xc1")
    return true
  }
}

/**
 * An oracle of the key rules, apart from the reader: whether the value at `p` holds a map with a
 * key that is not a str, or a key twice (keys compared as msgpackr reads them, `__proto__` as
 * `__proto_`). For bytes msgpackr accepts.
 */
const breaksKeyRules = (b: Uint8Array, p: number): { readonly broken: boolean; readonly end: number } => {
  const map = MsgpackScan.mapHeader(b, p)
  const array = MsgpackScan.arrayHeader(b, p)
  if (map === undefined && array === undefined) return { broken: false, end: MsgpackScan.skip(b, p) }
  let q = (map ?? array)!.start
  let broken = false
  const seen = new Set<string>()
  for (let i = 0; i < (map ?? array)!.count; i++) {
    if (map !== undefined) {
      const t = b[q]!
      const end = MsgpackScan.skip(b, q)
      if (!((t >= 0xa0 && t <= 0xbf) || (t >= 0xd9 && t <= 0xdb))) {
        broken = true
      } else {
        const key = msgpackr.unpack(b.subarray(q, end)) as string
        const name = key === "__proto__" ? "__proto_" : key
        if (seen.has(name)) broken = true
        seen.add(name)
      }
      q = end
    }
    const value = breaksKeyRules(b, q)
    broken ||= value.broken
    q = value.end
  }
  return { broken, end: q }
}
