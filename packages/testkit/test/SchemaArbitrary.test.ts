import { describe, expect, it } from "@effect/vitest"
import { Schema, SchemaTransformation } from "effect"
import * as fc from "fast-check"
import * as SchemaArbitrary from "../src/arbitraries/SchemaArbitrary.ts"

/** Every generated value satisfies the schema it was derived from. */
const conforms = <S extends Schema.Top>(schema: S, options?: SchemaArbitrary.Options, numRuns = 200) => {
  const is = Schema.is(schema as unknown as Schema.Codec<unknown, unknown>)
  fc.assert(fc.property(SchemaArbitrary.make(schema, options), (value) => is(value)), { numRuns })
}

const samples = <A>(arb: fc.Arbitrary<A>, n = 300): Array<A> => fc.sample(arb, { numRuns: n, seed: 42 })

describe("SchemaArbitrary", () => {
  it("primitives and literals", () => {
    for (const schema of [Schema.String, Schema.Number, Schema.Boolean, Schema.Null, Schema.Undefined, Schema.BigInt, Schema.Literal("x"), Schema.Literals(["a", 1, true]), Schema.Symbol]) {
      conforms(schema)
    }
  })

  it("number checks are met by construction, not by filtering a wide range", () => {
    const between = Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))
    const values = samples(SchemaArbitrary.make(between))
    expect(values.every((v) => v >= 0 && v <= 1 && Number.isFinite(v))).toBe(true)
    // A tight integer range: a filter over all safe integers would never hit it.
    const tight = Schema.Int.check(Schema.isGreaterThan(1_000_000), Schema.isLessThanOrEqualTo(1_000_003))
    const ints = samples(SchemaArbitrary.make(tight))
    expect(new Set(ints)).toEqual(new Set([1_000_001, 1_000_002, 1_000_003]))
    conforms(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)))
    conforms(Schema.Number.check(Schema.isGreaterThan(0), Schema.isLessThan(1e-300)))
  })

  it("unbounded integers are mostly small but reach beyond 2^32", () => {
    const ints = samples(SchemaArbitrary.make(Schema.Int), 1000)
    expect(ints.every(Number.isSafeInteger)).toBe(true)
    expect(ints.some((n) => Math.abs(n) > 2 ** 32)).toBe(true)
    expect(ints.filter((n) => Math.abs(n) <= 2 ** 31).length).toBeGreaterThan(500)
  })

  it("finite excludes NaN and infinities; plain numbers may include them", () => {
    expect(samples(SchemaArbitrary.make(Schema.Finite), 1000).every(Number.isFinite)).toBe(true)
    conforms(Schema.Number)
  })

  it("bigint bounds", () => {
    const max = (1n << 63n) - 1n
    const schema = Schema.BigInt.check(Schema.isBetweenBigInt({ minimum: 1n, maximum: max }))
    conforms(schema)
    const values = samples(SchemaArbitrary.make(schema))
    expect(values.every((v) => v >= 1n && v <= max)).toBe(true)
    expect(samples(SchemaArbitrary.make(Schema.BigInt.check(Schema.isBetweenBigInt({ minimum: 7n, maximum: 7n }))), 20)).toEqual(Array(20).fill(7n))
  })

  it("string lengths and patterns", () => {
    conforms(Schema.String.check(Schema.isMinLength(3), Schema.isMaxLength(5)))
    conforms(Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/), Schema.isBetweenLength(64, 64)))
    const ident = Schema.String.check(Schema.isPattern(/^[A-Za-z][A-Za-z0-9_]*$/))
    conforms(ident)
  })

  it("unions, arrays and tuples", () => {
    conforms(Schema.Union([Schema.String, Schema.Int, Schema.Null]))
    conforms(Schema.Array(Schema.Int).check(Schema.isMinLength(2), Schema.isMaxLength(3)))
    conforms(Schema.Tuple([Schema.String, Schema.optionalKey(Schema.Number)]))
    conforms(Schema.TupleWithRest(Schema.Tuple([Schema.Literal("a")]), [Schema.Boolean, Schema.Null]))
    const lengths = samples(SchemaArbitrary.make(Schema.Array(Schema.Int), { maxLength: 3 })).map((a) => a.length)
    expect(Math.max(...lengths)).toBe(3)
    const optionalPresence = samples(SchemaArbitrary.make(Schema.Tuple([Schema.String, Schema.optionalKey(Schema.Number)]))).map((t) => t.length)
    expect(new Set(optionalPresence)).toEqual(new Set([1, 2]))
  })

  it("structs: optional keys are sometimes absent, never present as undefined unless allowed", () => {
    const schema = Schema.Struct({
      a: Schema.Int,
      b: Schema.optionalKey(Schema.String),
      c: Schema.optional(Schema.Boolean),
      d: Schema.NullOr(Schema.Array(Schema.String))
    })
    conforms(schema)
    const values = samples(SchemaArbitrary.make(schema))
    expect(values.some((v) => !("b" in v))).toBe(true)
    expect(values.some((v) => "b" in v)).toBe(true)
    expect(values.every((v) => !("b" in v) || typeof v.b === "string")).toBe(true)
    expect(values.some((v) => "c" in v && v.c === undefined)).toBe(true)
    expect(values.every((v) => Object.keys(v).slice(0, 1)[0] === "a")).toBe(true)
  })

  it("records and StructWithRest: extra keys match the key schema and never shadow known keys", () => {
    conforms(Schema.Record(Schema.String, Schema.Int))
    const key = /^[A-Za-z][A-Za-z0-9_]*$/
    const schema = Schema.StructWithRest(Schema.Struct({ temperature: Schema.Finite, top_k: Schema.Int }), [
      Schema.Record(Schema.String.check(Schema.isPattern(key)), Schema.Unknown)
    ])
    conforms(schema)
    const values = samples(SchemaArbitrary.make(schema))
    expect(values.some((v) => Object.keys(v).length > 2)).toBe(true)
    expect(values.every((v) => typeof v.temperature === "number" && Number.isSafeInteger(v.top_k))).toBe(true)
  })

  it("unknown values are small msgpack-friendly JSON-like data", () => {
    const check = (v: unknown, depth: number): boolean => {
      if (v === null || typeof v === "boolean" || typeof v === "string") return true
      if (typeof v === "number") return Number.isSafeInteger(v)
      if (depth > 4) return false
      if (Array.isArray(v)) return v.every((x) => check(x, depth + 1))
      return typeof v === "object" && Object.getPrototypeOf(v) === Object.prototype &&
        Object.values(v as object).every((x) => check(x, depth + 1))
    }
    const values = samples(SchemaArbitrary.make(Schema.Unknown), 1000)
    expect(values.every((v) => check(v, 0))).toBe(true)
    expect(values.some(Array.isArray)).toBe(true)
    expect(values.some((v) => typeof v === "object" && v !== null && !Array.isArray(v))).toBe(true)
  })

  it("transformations generate the decoded side", () => {
    conforms(Schema.NumberFromString)
    expect(samples(SchemaArbitrary.make(Schema.NumberFromString)).every((v) => typeof v === "number")).toBe(true)
    const Upper = Schema.String.pipe(Schema.decodeTo(Schema.String.check(Schema.isMaxLength(3)), SchemaTransformation.transform({
      decode: (s) => s.slice(0, 3),
      encode: (s) => s
    })))
    conforms(Upper)
  })

  it("an opaque decoded side is reached through its encoding", () => {
    const Hashes = Schema.Array(Schema.BigInt.check(Schema.isBetweenBigInt({ minimum: 1n, maximum: 5n }))).pipe(
      Schema.decodeTo(
        Schema.declare((u): u is Set<bigint> => u instanceof Set),
        SchemaTransformation.transform({ decode: (xs) => new Set(xs), encode: (s) => [...s] })
      )
    )
    const values = samples(SchemaArbitrary.make(Hashes))
    expect(values.every((s) => s instanceof Set && [...s].every((x) => x >= 1n && x <= 5n))).toBe(true)
  })

  it("declarations: Uint8Array, typed arrays by probing, classes through their codec", () => {
    conforms(Schema.Uint8Array)
    const Tokens = Schema.declare((u): u is Int32Array | Uint16Array => u instanceof Int32Array || u instanceof Uint16Array)
    const kinds = new Set(samples(SchemaArbitrary.make(Tokens)).map((t) => t.constructor.name))
    expect(kinds).toEqual(new Set(["Int32Array", "Uint16Array"]))
    conforms(Schema.instanceOf(BigUint64Array))
    class Point extends Schema.Class<Point>("Point")({ x: Schema.Int, label: Schema.optionalKey(Schema.String) }) {
      get norm() {
        return Math.abs(this.x)
      }
    }
    conforms(Point)
    expect(samples(SchemaArbitrary.make(Point)).every((p) => p instanceof Point && typeof p.norm === "number")).toBe(true)
    conforms(Schema.ReadonlyMap(Schema.String, Schema.Int))
  })

  it("the arbitrary annotation makes an opaque declaration derivable", () => {
    class Handle {
      constructor(readonly fd: number) {}
    }
    const HandleSchema = Schema.instanceOf(Handle).pipe(
      SchemaArbitrary.annotate(() => fc.nat({ max: 1023 }).map((fd) => new Handle(fd)))
    )
    const Open = Schema.Struct({ handles: Schema.Array(HandleSchema) })
    conforms(Open)
    // Attached before a check: the check still applies.
    const Even = Schema.Number.pipe(SchemaArbitrary.annotate(() => fc.integer({ min: 0, max: 100 }))).check(
      Schema.makeFilter((n: number) => n % 2 === 0)
    )
    expect(samples(SchemaArbitrary.make(Even)).every((n) => n % 2 === 0 && n <= 100)).toBe(true)
    // Attached after: it stands for the whole node. The factory sees the constraint.
    const seen: Array<SchemaArbitrary.Constraint> = []
    const Small = Schema.Int.check(Schema.isBetween({ minimum: 3, maximum: 9 })).pipe(
      SchemaArbitrary.annotate((ctx) => {
        seen.push(ctx.constraint)
        return fc.constant(5)
      })
    )
    expect(samples(SchemaArbitrary.make(Small), 10)).toEqual(Array(10).fill(5))
    expect(seen[0]).toMatchObject({ minimum: 3, maximum: 9, number: "integer" })
  })

  it("overrides replace derivation for a schema wherever it occurs", () => {
    const Opaque = Schema.declare((u): u is Date => u instanceof Date)
    const schema = Schema.Struct({ at: Opaque, also: Schema.Array(Opaque) })
    expect(() => SchemaArbitrary.make(Schema.Struct({ x: Schema.declare((u): u is WeakMap<object, unknown> => u instanceof WeakMap) }))).toThrow(
      SchemaArbitrary.UnsupportedSchema
    )
    conforms(schema, { overrides: [[Opaque, fc.date({ noInvalidDate: true })]] })
  })

  it("recursive schemas terminate", () => {
    type Tree = null | ReadonlyArray<Tree>
    const Tree: Schema.Codec<Tree> = Schema.Union([Schema.Null, Schema.Array(Schema.suspend(() => Tree))])
    conforms(Tree, { maxDepth: 3 })
  })

  it("checks it cannot build by construction are applied as filters", () => {
    const schema = Schema.Struct({ a: Schema.Boolean, b: Schema.Boolean }).check(Schema.makeFilter((s) => s.a === s.b))
    conforms(schema)
  })

  it("unsupported nodes throw a clear error naming the node and its path", () => {
    const build = () => SchemaArbitrary.make(Schema.Struct({ items: Schema.Array(Schema.TemplateLiteral(["id-", Schema.Number])) }))
    expect(build).toThrow(SchemaArbitrary.UnsupportedSchema)
    expect(build).toThrow(/<TemplateLiteral> at \["items"\]\[0\]/)
    expect(() => SchemaArbitrary.make(Schema.Never)).toThrow(/<Never> at the root/)
    expect(() => SchemaArbitrary.make(Schema.Int.check(Schema.isBetween({ minimum: 0.2, maximum: 0.8 })))).toThrow(/no integer/)
  })
})
