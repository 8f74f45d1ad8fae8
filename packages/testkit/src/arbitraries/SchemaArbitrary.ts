/**
 * fast-check arbitraries derived from Effect Schemas.
 *
 * Effect 4's own `effect/Arbitrary` is a separate generator engine; this module walks a Schema's
 * AST and builds a fast-check `Arbitrary` of the schema's decoded `Type` instead, so schemas can be
 * used with `fc.assert`, `fc.property` and the rest of fast-check.
 *
 * What is derived, node by node:
 *
 * | node | values |
 * |---|---|
 * | `String` | strings (length checks honoured; `isPattern` through `fc.stringMatching`) |
 * | `Number` | doubles, or integers under `isInt`; `isFinite`, `>=`, `>`, `<=`, `<`, `isBetween` honoured by construction |
 * | `BigInt` | bigints; `isBetweenBigInt` and the other bigint bounds honoured by construction |
 * | `Boolean`, `Null`, `Undefined`, `Void`, `Literal`, `UniqueSymbol`, `Enum`, `Symbol` | the obvious |
 * | `Union` | `fc.oneof` of the members |
 * | `Arrays` | arrays and tuples (optional elements, rest, post-rest elements, length checks) |
 * | `Objects` | structs (optional keys may be absent), records and `StructWithRest` with string keys |
 * | `Unknown`, `Any` | {@link unknownValue}: small msgpack-encodable JSON-like values |
 * | `ObjectKeyword` | {@link unknownValue} maps |
 * | `Declaration` | see below |
 * | `Suspend` | recursive schemas, depth-limited |
 *
 * Declarations (`Schema.declare`, `Schema.instanceOf`, classes) are resolved in this order:
 * 1. an arbitrary attached with {@link annotate} (the annotation key {@link ArbitraryAnnotationId});
 * 2. Effect's built-in `Uint8Array` and `Date` representations;
 * 3. the declaration's `toCodec` link (Schema classes, `ReadonlyMap`, `ReadonlySet`, ...): the link's
 *    source is generated and decoded into the declared type;
 * 4. typed arrays: a declaration that accepts an empty `Int32Array` (`Uint8Array`, `BigUint64Array`,
 *    ...) generates instances of every typed array class it accepts.
 *
 * A node carrying a transformation (`decodeTo`, `NumberFromString`, ...) generates its decoded side;
 * when that side cannot be derived (an opaque declaration), its encoded side is generated and
 * decoded through the schema instead.
 *
 * Checks: the ones Effect describes with an `arbitraryConstraint` (bounds, integer, finite, lengths,
 * patterns) shape the generator, so values are built inside the bounds; every check, recognised or
 * not, is then applied as a filter, so what comes out always satisfies the schema. A check that
 * rejects most values (a custom cross-field rule) makes generation slow: attach an arbitrary to the
 * schema with {@link annotate} or pass one in {@link Options.overrides}.
 *
 * Anything else (template literals, index signatures keyed by numbers or symbols, middleware
 * transformations with no derivable side) throws {@link UnsupportedSchema} naming the node and
 * where it is, when the arbitrary is built (not when values are drawn).
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as fc from "fast-check"
import { collectChecks, type MutableConstraint } from "../internal/schemaConstraints.ts"
import { entriesToObject, mapKey, SMALL_INT, unknownValue } from "../internal/unknownValue.ts"

export { unknownValue } from "../internal/unknownValue.ts"

/**
 * The annotation key under which a schema carries its own fast-check arbitrary factory.
 *
 * @since 0.1.0
 */
export const ArbitraryAnnotationId = "@mcore-effect/testkit/SchemaArbitrary" as const

/**
 * Bounds that the schema's checks put on a node, as read from Effect's `arbitraryConstraint`
 * annotations. Handed to {@link ArbitraryFactory} so an attached arbitrary can honour them.
 *
 * @since 0.1.0
 */
export interface Constraint {
  readonly minimum?: unknown
  readonly exclusiveMinimum?: boolean
  readonly maximum?: unknown
  readonly exclusiveMaximum?: boolean
  readonly minLength?: number
  readonly maxLength?: number
  readonly patterns?: ReadonlyArray<{ readonly source: string; readonly flags: string }>
  readonly number?: "finite" | "integer"
}

/**
 * What an attached arbitrary factory receives: the arbitraries of the declaration's type
 * parameters (e.g. the element of a custom collection), the constraint its checks describe, and the
 * options the derivation runs with.
 *
 * @since 0.1.0
 */
export interface FactoryContext {
  readonly typeParameters: ReadonlyArray<fc.Arbitrary<unknown>>
  readonly constraint: Constraint
  readonly maxLength: number
}

/**
 * An arbitrary factory attached to a schema with {@link annotate}.
 *
 * @since 0.1.0
 */
export type ArbitraryFactory<A> = (context: FactoryContext) => fc.Arbitrary<A>

/**
 * Derivation options.
 *
 * @since 0.1.0
 */
export interface Options {
  /**
   * Upper bound on the length of generated arrays, strings, typed arrays and records (entries),
   * unless a schema's own `maxLength` check is smaller. Default 10.
   */
  readonly maxLength?: number | undefined
  /** How deep recursive schemas (`Schema.suspend`) and {@link unknownValue} nest. Default 3. */
  readonly maxDepth?: number | undefined
  /**
   * Arbitraries to use instead of derivation for particular schemas, matched by identity of the
   * schema (or its AST) wherever it occurs in the tree: the way to supply values for a field whose
   * schema you cannot annotate (it belongs to another package), or to generate a narrower domain.
   * Used as given: the schema's checks are not re-applied.
   */
  readonly overrides?: ReadonlyArray<readonly [Schema.Top | SchemaAST.AST, fc.Arbitrary<unknown>]> | undefined
}

/**
 * Thrown while building an arbitrary for a schema node that cannot be derived.
 *
 * @since 0.1.0
 */
export class UnsupportedSchema extends globalThis.Error {
  override readonly name = "UnsupportedSchema"
  constructor(
    /** The AST node's tag, e.g. `"TemplateLiteral"`. */
    readonly node: string,
    /** Where the node is, from the root: property names and element indexes. */
    readonly path: ReadonlyArray<PropertyKey>,
    readonly reason: string
  ) {
    super(`SchemaArbitrary: cannot derive an arbitrary for <${node}> at ${formatPath(path)}: ${reason}`)
  }
}

const formatPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.length === 0 ? "the root" : path.map((p) => `[${typeof p === "string" ? JSON.stringify(p) : String(p)}]`).join("")

/**
 * Attaches a fast-check arbitrary factory to a schema: the way to make a `Schema.declare` or
 * `Schema.instanceOf` type derivable, or to replace derivation for any schema. The factory's values
 * are used as given (the schema's checks are not re-applied to them).
 *
 * @example
 * ```ts
 * import { SchemaArbitrary } from "@mcore-effect/testkit/arbitraries"
 * import { Schema } from "effect"
 * import * as fc from "fast-check"
 *
 * class Point { constructor(readonly x: number, readonly y: number) {} }
 * const PointSchema = Schema.instanceOf(Point).pipe(
 *   SchemaArbitrary.annotate(() => fc.tuple(fc.integer(), fc.integer()).map(([x, y]) => new Point(x, y)))
 * )
 * fc.assert(fc.property(SchemaArbitrary.make(PointSchema), (p) => p instanceof Point))
 * ```
 *
 * @since 0.1.0
 */
export const annotate =
  <S extends Schema.Top>(factory: ArbitraryFactory<S["Type"]>) => (self: S): S["Rebuild"] =>
    self.annotate({ [ArbitraryAnnotationId]: factory })

/**
 * Derives a fast-check arbitrary of a schema's decoded type.
 *
 * Throws {@link UnsupportedSchema} when some node of the schema cannot be derived.
 *
 * @example
 * ```ts
 * import { SchemaArbitrary } from "@mcore-effect/testkit/arbitraries"
 * import { Schema } from "effect"
 * import * as fc from "fast-check"
 *
 * const Request = Schema.Struct({
 *   id: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)),
 *   text: Schema.String,
 *   top_p: Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 })),
 *   tags: Schema.optionalKey(Schema.Array(Schema.String))
 * })
 * fc.assert(fc.property(SchemaArbitrary.make(Request, { maxLength: 5 }), (r) => Schema.is(Request)(r)))
 * ```
 *
 * @since 0.1.0
 */
export const make = <S extends Schema.Top>(schema: S, options?: Options): fc.Arbitrary<S["Type"]> =>
  fromAST(schema.ast, options) as fc.Arbitrary<S["Type"]>

/**
 * {@link make} for a bare AST node.
 *
 * @example
 * ```ts
 * import { SchemaArbitrary } from "@mcore-effect/testkit/arbitraries"
 * import { Schema } from "effect"
 * import * as fc from "fast-check"
 *
 * const ints = SchemaArbitrary.fromAST(Schema.Int.ast)
 * fc.sample(ints, 3).every(Number.isSafeInteger) // true
 * ```
 *
 * @since 0.1.0
 */
export const fromAST = (ast: SchemaAST.AST, options?: Options): fc.Arbitrary<unknown> =>
  new Deriver(options).derive(ast, [])

// -------------------------------------------------------------------------------------------------
// derivation
// -------------------------------------------------------------------------------------------------

const PARSE_OPTIONS: SchemaAST.ParseOptions = {}

const ABSENT: unique symbol = Symbol("SchemaArbitrary/absent")

interface Lengths {
  readonly minLength: number
  readonly maxLength: number
}

const TYPED_ARRAYS = [
  [Uint8Array, (c: Lengths) => fc.uint8Array(c)],
  [Uint8ClampedArray, (c: Lengths) => fc.uint8ClampedArray(c)],
  [Int8Array, (c: Lengths) => fc.int8Array(c)],
  [Uint16Array, (c: Lengths) => fc.uint16Array(c)],
  [Int16Array, (c: Lengths) => fc.int16Array(c)],
  [Uint32Array, (c: Lengths) => fc.uint32Array(c)],
  [Int32Array, (c: Lengths) => fc.int32Array(c)],
  [Float32Array, (c: Lengths) => fc.float32Array(c)],
  [Float64Array, (c: Lengths) => fc.float64Array(c)],
  [BigInt64Array, (c: Lengths) => fc.bigInt64Array(c)],
  [BigUint64Array, (c: Lengths) => fc.bigUint64Array(c)]
] as const satisfies ReadonlyArray<readonly [new(n: number) => unknown, (c: Lengths) => fc.Arbitrary<unknown>]>

class Deriver {
  readonly maxLength: number
  readonly maxDepth: number
  readonly overrides: ReadonlyMap<SchemaAST.AST, fc.Arbitrary<unknown>>
  readonly depthIdentifier = fc.createDepthIdentifier()
  readonly recursive = new Map<SchemaAST.AST, boolean>()

  constructor(options: Options | undefined) {
    this.maxLength = options?.maxLength ?? 10
    this.maxDepth = options?.maxDepth ?? 3
    const overrides = new Map<SchemaAST.AST, fc.Arbitrary<unknown>>()
    for (const [key, arb] of options?.overrides ?? []) overrides.set(SchemaAST.isAST(key) ? key : key.ast, arb)
    this.overrides = overrides
  }

  derive(ast: SchemaAST.AST, path: ReadonlyArray<PropertyKey>): fc.Arbitrary<unknown> {
    const override = this.overrides.get(ast)
    if (override !== undefined) return override
    const { constraint, filters } = collectChecks(ast.checks)
    // Attached after the checks (it sits on the last check): it stands for the whole node.
    const whole = ast.checks?.[ast.checks.length - 1]!.annotations?.[ArbitraryAnnotationId]
    if (typeof whole === "function") return this.attached(ast, whole, constraint, path)
    let base: fc.Arbitrary<unknown>
    try {
      // Attached to the node itself (before any check): it stands for the node, the checks still apply.
      const own = ast.annotations?.[ArbitraryAnnotationId]
      base = typeof own === "function" ? this.attached(ast, own, constraint, path) : this.base(ast, path, constraint)
    } catch (error) {
      // The decoded side is opaque: generate the encoded side and decode it through the schema.
      if (!(error instanceof UnsupportedSchema) || ast.encoding === undefined) throw error
      base = this.viaEncoding(ast, path, error)
    }
    if (filters.length === 0) return base
    return base.filter((value) => filters.every((f) => f.run(value, ast, PARSE_OPTIONS) === undefined))
  }

  attached(ast: SchemaAST.AST, factory: Function, constraint: MutableConstraint, path: ReadonlyArray<PropertyKey>): fc.Arbitrary<unknown> {
    const typeParameters = ast._tag === "Declaration"
      ? ast.typeParameters.map((t, i) => this.derive(t, [...path, `<type parameter ${i}>`]))
      : []
    return (factory as ArbitraryFactory<unknown>)({ typeParameters, constraint, maxLength: this.maxLength })
  }

  viaEncoding(ast: SchemaAST.AST, path: ReadonlyArray<PropertyKey>, original: UnsupportedSchema): fc.Arbitrary<unknown> {
    let encoded: fc.Arbitrary<unknown>
    try {
      encoded = this.derive(SchemaAST.toEncoded(ast), path)
    } catch {
      throw original
    }
    const decode = Schema.decodeUnknownResult(Schema.make(ast) as Schema.Codec<unknown, unknown>)
    return encoded
      .map((value) => decode(value))
      .filter(Result.isSuccess)
      .map((result) => result.success)
  }

  /** The node's own type, its checks aside. */
  base(ast: SchemaAST.AST, path: ReadonlyArray<PropertyKey>, constraint: MutableConstraint): fc.Arbitrary<unknown> {
    switch (ast._tag) {
      case "Null":
        return fc.constant(null)
      case "Undefined":
      case "Void":
        return fc.constant(undefined)
      case "Boolean":
        return fc.boolean()
      case "Literal":
        return fc.constant(ast.literal)
      case "UniqueSymbol":
        return fc.constant(ast.symbol)
      case "Symbol":
        return fc.string({ maxLength: this.maxLength }).map((s) => Symbol.for(s))
      case "Enum": {
        const values = [...new Set(ast.enums.map(([, v]) => v))]
        if (values.length === 0) throw new UnsupportedSchema(ast._tag, path, "an enum with no members")
        return fc.constantFrom(...values)
      }
      case "Never":
        throw new UnsupportedSchema(ast._tag, path, "Never has no values")
      case "Unknown":
      case "Any":
        return unknownValue({ maxDepth: this.maxDepth, maxLength: this.maxLength })
      case "ObjectKeyword":
        return entriesToObject(
          fc.uniqueArray(fc.tuple(mapKey, unknownValue({ maxDepth: this.maxDepth - 1 })), { selector: (e) => e[0], maxLength: 4 })
        )
      case "String":
        return this.string(constraint)
      case "Number":
        return this.number(ast, path, constraint)
      case "BigInt":
        return this.bigint(ast, path, constraint)
      case "Union":
        return this.union(ast, path)
      case "Arrays":
        return this.arrays(ast, path, constraint)
      case "Objects":
        return this.objects(ast, path)
      case "Suspend":
        return this.suspend(ast, path)
      case "Declaration":
        return this.declaration(ast, path, constraint)
      case "TemplateLiteral":
        throw new UnsupportedSchema(ast._tag, path, "template literals are not supported; attach an arbitrary with SchemaArbitrary.annotate")
    }
  }

  lengths(constraint: MutableConstraint): { readonly minLength: number; readonly maxLength: number } {
    const minLength = constraint.minLength ?? 0
    const maxLength = Math.max(minLength, Math.min(constraint.maxLength ?? Infinity, minLength + this.maxLength))
    return { minLength, maxLength }
  }

  string(constraint: MutableConstraint): fc.Arbitrary<string> {
    const { minLength, maxLength } = this.lengths(constraint)
    const pattern = constraint.patterns?.[0]
    if (pattern !== undefined) {
      // Other patterns and the length bounds are checked by the filters.
      const re = new RegExp(pattern.source, pattern.flags)
      return fc.stringMatching(re, constraint.maxLength !== undefined ? { maxLength: constraint.maxLength } : {})
    }
    if (constraint.minLength !== undefined || constraint.maxLength !== undefined) {
      // One UTF-16 code unit per character, so the length bounds are exact.
      return fc.string({ unit: "grapheme-ascii", minLength, maxLength })
    }
    return fc.oneof(
      { weight: 3, arbitrary: fc.string({ unit: "grapheme-ascii", maxLength }) },
      { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength }) }
    )
  }

  number(ast: SchemaAST.AST, path: ReadonlyArray<PropertyKey>, c: MutableConstraint): fc.Arbitrary<number> {
    const min = typeof c.minimum === "number" ? c.minimum : undefined
    const max = typeof c.maximum === "number" ? c.maximum : undefined
    if (c.number === "integer") {
      let lo = min === undefined ? Number.MIN_SAFE_INTEGER : c.exclusiveMinimum ? Math.floor(min) + 1 : Math.ceil(min)
      let hi = max === undefined ? Number.MAX_SAFE_INTEGER : c.exclusiveMaximum ? Math.ceil(max) - 1 : Math.floor(max)
      lo = Math.max(lo, Number.MIN_SAFE_INTEGER)
      hi = Math.min(hi, Number.MAX_SAFE_INTEGER)
      if (lo > hi) throw new UnsupportedSchema(ast._tag, path, `no integer lies between the bounds ${min} and ${max}`)
      // Mostly small (32-bit) values, sometimes anywhere in the range (beyond 2^32 too).
      const smallLo = Math.max(lo, -SMALL_INT - 1)
      const smallHi = Math.min(hi, SMALL_INT)
      const wide = fc.integer({ min: lo, max: hi })
      return smallLo <= smallHi && (smallLo !== lo || smallHi !== hi)
        ? fc.oneof({ weight: 3, arbitrary: fc.integer({ min: smallLo, max: smallHi }) }, { weight: 1, arbitrary: wide })
        : wide
    }
    if (min !== undefined && max !== undefined && (min > max || (min === max && (c.exclusiveMinimum || c.exclusiveMaximum)))) {
      throw new UnsupportedSchema(ast._tag, path, `no number lies between the bounds ${min} and ${max}`)
    }
    const finite = c.number === "finite"
    return fc.double({
      ...(min !== undefined ? { min, minExcluded: c.exclusiveMinimum === true } : {}),
      ...(max !== undefined ? { max, maxExcluded: c.exclusiveMaximum === true } : {}),
      noNaN: finite || min !== undefined || max !== undefined,
      noDefaultInfinity: finite
    })
  }

  bigint(ast: SchemaAST.AST, path: ReadonlyArray<PropertyKey>, c: MutableConstraint): fc.Arbitrary<bigint> {
    let min = typeof c.minimum === "bigint" ? c.minimum : undefined
    let max = typeof c.maximum === "bigint" ? c.maximum : undefined
    if (min !== undefined && c.exclusiveMinimum) min++
    if (max !== undefined && c.exclusiveMaximum) max--
    if (min !== undefined && max !== undefined && min > max) {
      throw new UnsupportedSchema(ast._tag, path, `no bigint lies between the bounds ${min} and ${max}`)
    }
    return fc.bigInt({ ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) })
  }

  isRecursive(ast: SchemaAST.AST): boolean {
    const known = this.recursive.get(ast)
    if (known !== undefined) return known
    this.recursive.set(ast, false) // cycles through non-Suspend nodes cannot happen; guard anyway
    let out = false
    switch (ast._tag) {
      case "Suspend":
        out = true
        break
      case "Union":
        out = ast.types.some((t) => this.isRecursive(t))
        break
      case "Arrays":
        out = ast.elements.some((t) => this.isRecursive(t)) || ast.rest.some((t) => this.isRecursive(t))
        break
      case "Objects":
        out = ast.propertySignatures.some((p) => this.isRecursive(p.type)) || ast.indexSignatures.some((i) => this.isRecursive(i.type))
        break
      case "Declaration":
        out = ast.typeParameters.some((t) => this.isRecursive(t))
        break
    }
    this.recursive.set(ast, out)
    return out
  }

  union(ast: SchemaAST.Union, path: ReadonlyArray<PropertyKey>): fc.Arbitrary<unknown> {
    if (ast.types.length === 0) throw new UnsupportedSchema(ast._tag, path, "a union with no members")
    const members = ast.types.map((t) => ({ ast: t, arb: this.derive(t, path) }))
    let out: fc.Arbitrary<unknown>
    if (this.isRecursive(ast)) {
      // At the depth limit fast-check takes the first member: put the non-recursive ones first.
      members.sort((a, b) => Number(this.isRecursive(a.ast)) - Number(this.isRecursive(b.ast)))
      out = fc.oneof({ depthIdentifier: this.depthIdentifier, maxDepth: this.maxDepth, depthSize: "small" }, ...members.map((m) => m.arb))
    } else {
      out = members.length === 1 ? members[0]!.arb : fc.oneof(...members.map((m) => m.arb))
    }
    if (ast.options?.mode === "oneOf") {
      const is = Schema.is(Schema.make(SchemaAST.toType(ast)))
      out = out.filter((v) => is(v))
    }
    return out
  }

  arrays(ast: SchemaAST.Arrays, path: ReadonlyArray<PropertyKey>, constraint: MutableConstraint): fc.Arbitrary<unknown> {
    const elements = ast.elements.map((e, i) => ({ optional: SchemaAST.isOptional(e), arb: this.derive(e, [...path, i]) }))
    const required = elements.filter((e) => !e.optional).map((e) => e.arb)
    const optional = elements.filter((e) => e.optional).map((e) => e.arb)
    const [head, ...tail] = ast.rest.map((r, i) => this.derive(r, [...path, elements.length + i]))
    const fixed = required.length + tail.length
    if (head === undefined) {
      // A tuple: the required elements, then a prefix of the optional ones.
      if (optional.length === 0) return fc.tuple(...required)
      return fc.integer({ min: 0, max: optional.length }).chain((n) => fc.tuple(...required, ...optional.slice(0, n)))
    }
    const { minLength, maxLength } = this.lengths(constraint)
    const repeatMin = Math.max(0, minLength - fixed - optional.length)
    const repeatMax = Math.max(repeatMin, maxLength - fixed - optional.length)
    const repeated = fc.array(head, {
      minLength: repeatMin,
      maxLength: repeatMax,
      ...(this.isRecursive(ast) ? { depthIdentifier: this.depthIdentifier } : {})
    })
    // The rest only follows when every optional element is present.
    const withOptional = optional.length === 0
      ? fc.tuple(fc.tuple(...required), repeated, fc.tuple(...tail)).map(([r, rep, t]) => [...r, ...rep, ...t])
      : fc.oneof(
        fc.integer({ min: 0, max: optional.length - 1 }).chain((n) => fc.tuple(...required, ...optional.slice(0, n), ...tail)),
        fc.tuple(fc.tuple(...required, ...optional), repeated, fc.tuple(...tail)).map(([r, rep, t]) => [...r, ...rep, ...t])
      )
    return withOptional
  }

  objects(ast: SchemaAST.Objects, path: ReadonlyArray<PropertyKey>): fc.Arbitrary<unknown> {
    const properties = ast.propertySignatures.map((ps) => ({
      name: ps.name,
      optional: SchemaAST.isOptional(ps.type),
      arb: this.derive(ps.type, [...path, ps.name])
    }))
    const known = new Set<PropertyKey>(properties.map((p) => p.name))
    const struct = fc.tuple(...properties.map((p) => p.optional ? fc.option(p.arb, { nil: ABSENT, freq: 2 }) : p.arb))
      .map((values) => {
        const out: Record<PropertyKey, unknown> = {}
        for (let i = 0; i < properties.length; i++) {
          if (values[i] !== ABSENT) out[properties[i]!.name] = values[i]
        }
        return out
      })
    if (ast.indexSignatures.length === 0) return struct
    const entries = ast.indexSignatures.map((is, i) => {
      const key = this.indexKey(is.parameter, [...path, `<index signature ${i}>`])
        .filter((k) => k !== "__proto__" && !known.has(k))
      return fc.tuple(key, this.derive(is.type, [...path, `<index signature ${i} value>`]))
    })
    const rest = fc.uniqueArray(entries.length === 1 ? entries[0]! : fc.oneof(...entries), {
      selector: (e) => e[0],
      maxLength: Math.min(this.maxLength, 5),
      ...(this.isRecursive(ast) ? { depthIdentifier: this.depthIdentifier } : {})
    })
    let out: fc.Arbitrary<Record<PropertyKey, unknown>> = fc.tuple(struct, rest).map(([s, es]) => {
      for (const [k, v] of es) s[k] = v
      return s
    })
    if (properties.length > 0) {
      // A property whose name matches an index signature must satisfy that signature too.
      const is = Schema.is(Schema.make(new SchemaAST.Objects([], ast.indexSignatures)))
      out = out.filter((v) => is(v))
    }
    return out
  }

  indexKey(parameter: SchemaAST.AST, path: ReadonlyArray<PropertyKey>): fc.Arbitrary<string> {
    switch (parameter._tag) {
      case "String":
        return this.derive(parameter, path) as fc.Arbitrary<string>
      case "Union":
        return fc.oneof(...parameter.types.map((t) => this.indexKey(t, path)))
      default:
        throw new UnsupportedSchema(parameter._tag, path, "only string keys are supported in records")
    }
  }

  readonly suspended = new Map<SchemaAST.Suspend, fc.Arbitrary<unknown>>()

  suspend(ast: SchemaAST.Suspend, path: ReadonlyArray<PropertyKey>): fc.Arbitrary<unknown> {
    // Built on first use, so a schema that refers to itself does not recurse while building.
    return fc.constant(null).chain(() => {
      let arb = this.suspended.get(ast)
      if (arb === undefined) {
        arb = this.derive(ast.thunk(), path)
        this.suspended.set(ast, arb)
      }
      return arb
    })
  }

  declaration(ast: SchemaAST.Declaration, path: ReadonlyArray<PropertyKey>, constraint: MutableConstraint): fc.Arbitrary<unknown> {
    const { minLength, maxLength } = this.lengths(constraint)
    const representation = (ast.annotations?.representation as { readonly id?: unknown } | undefined)?.id
    if (representation === "effect/schema/Uint8Array") return fc.uint8Array({ minLength, maxLength })
    if (representation === "effect/schema/Date") return fc.date({ noInvalidDate: true })

    const toCodec = ast.annotations?.toCodec
    if (typeof toCodec === "function") {
      const link = toCodec(ast.typeParameters.map((t) => Schema.make(SchemaAST.toType(t)))) as SchemaAST.Link
      if (link.transformation._tag !== "Transformation") {
        throw new UnsupportedSchema(ast._tag, path, "its toCodec link is a middleware, not a transformation")
      }
      const from = SchemaAST.toType(link.to)
      const decode = Schema.decodeUnknownResult(
        Schema.make(SchemaAST.decodeTo(from, SchemaAST.toType(ast), link.transformation)) as Schema.Codec<unknown, unknown>
      )
      return this.derive(from, path)
        .map((v) => decode(v))
        .filter(Result.isSuccess)
        .map((r) => r.success)
    }

    const is = Schema.is(Schema.make(SchemaAST.toType(ast)))
    const typed = TYPED_ARRAYS.filter(([C]) => is(new C(0))).map(([, arb]) => arb({ minLength, maxLength }) as fc.Arbitrary<unknown>)
    if (typed.length > 0) return typed.length === 1 ? typed[0]! : fc.oneof(...typed)

    const name = typeof ast.annotations?.expected === "string" ? ` (${ast.annotations.expected})` : ""
    throw new UnsupportedSchema(
      ast._tag,
      path,
      `an opaque declaration${name}; attach an arbitrary with SchemaArbitrary.annotate or pass one in options.overrides`
    )
  }
}
