/**
 * How `SchemaArbitrary` derives an arbitrary from a Schema's AST, node by node.
 *
 * @since 0.1.0
 * @internal
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import * as fc from "fast-check"
import { collectChecks, type MutableConstraint } from "./schemaConstraints.ts"
import { type ArbitraryFactory, ArbitraryAnnotationId, type Options, UnsupportedSchema } from "./schemaOptions.ts"
import { entriesToObject, mapKey, SMALL_INT, unknownValue } from "./unknownValue.ts"

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

/** @internal */
export class Deriver {
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
