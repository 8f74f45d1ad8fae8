/**
 * How a message's numbers look on the wire, read off its schemas: where an integer is declared,
 * a float's bytes are refused (a decoded `5.0` is the number 5, which an integer schema would
 * accept); where a Python `float` is declared, a whole number is still written as float64.
 *
 * @since 0.2.0
 * @internal
 */
import * as SchemaAST from "effect/SchemaAST"
import * as Msgpack from "../Msgpack.ts"
import * as MsgpackScan from "../MsgpackScan.ts"

// ---------------------------------------------------------------------------------------------
// Integers on the wire
// ---------------------------------------------------------------------------------------------

/**
 * Whether the bytes of a decoded value hold a float where the schema declares an integer: `5.0`
 * decodes to the number 5, which an integer schema then accepts, so the check is on the bytes.
 * `true` when they do not (the value is fine).
 */
export type WireIntCheck = (b: Uint8Array, p: number) => boolean

export const isFloatByte = (t: number | undefined): boolean => t === 0xca || t === 0xcb

const hasIntCheck = (checks: SchemaAST.Checks | undefined): boolean =>
  checks !== undefined && checks.some((check) =>
    check._tag === "Filter"
      ? (check.annotations as { readonly representation?: { readonly id?: unknown } } | undefined)?.representation?.id ===
        "effect/schema/isInt"
      : hasIntCheck(check.checks as SchemaAST.Checks)
  )

/** Whether the schema takes a float at this place (one that is not an integer in its eyes). */
const takesFloat = (ast: SchemaAST.AST): boolean => {
  switch (ast._tag) {
    case "Number":
      return !hasIntCheck(ast.checks)
    case "Literal":
      return typeof ast.literal === "number" && !Number.isInteger(ast.literal)
    case "Union":
      return ast.types.some(takesFloat)
    case "Null":
    case "Undefined":
    case "Void":
    case "Never":
    case "String":
    case "Boolean":
    case "BigInt":
    case "Symbol":
    case "UniqueSymbol":
    case "TemplateLiteral":
    case "Arrays":
      return false
    default:
      // Unknown, declarations, maps: not looked into.
      return true
  }
}

/**
 * The check of one metadata value, from its wire (encoded) schema: a float is refused where only
 * integers are declared (a header, a request id), and arrays are looked into (batched ids).
 * Maps are not (sampling parameters keep their own rules). `undefined`: nothing to check.
 */
export const wireIntCheck = (ast: SchemaAST.AST): WireIntCheck | undefined => {
  const floatOk = takesFloat(ast)
  const arrays = ast._tag === "Arrays" ? [ast] : ast._tag === "Union" ? ast.types.filter(SchemaAST.isArrays) : []
  const inner = arrays.map((a) => ({
    elements: a.elements.map(wireIntCheck),
    rest: a.rest.length > 0 ? wireIntCheck(a.rest[0]!) : undefined
  }))
  const nested = inner.some((a) => a.rest !== undefined || a.elements.some((e) => e !== undefined))
  if (floatOk && !nested) return undefined
  return (b, p) => {
    if (isFloatByte(b[p])) return floatOk
    if (!nested) return true
    const header = MsgpackScan.arrayHeader(b, p)
    if (header === undefined) return true
    // An array the schema accepted: one of the array shapes must accept its bytes too.
    return inner.some(({ elements, rest }) => {
      let q = header.start
      for (let i = 0; i < header.count; i++) {
        const check = i < elements.length ? elements[i] : rest
        if (check !== undefined && !check(b, q)) return false
        q = MsgpackScan.skip(b, q)
      }
      return true
    })
  }
}

// ---------------------------------------------------------------------------------------------
// Floats on the wire
// ---------------------------------------------------------------------------------------------

const isFloatNumber = (ast: SchemaAST.AST): boolean => ast._tag === "Number" && !hasIntCheck(ast.checks)

/** A number (or nothing) that is not declared an integer: a Python `float` field. */
const isFloatField = (ast: SchemaAST.AST): boolean =>
  isFloatNumber(ast) ||
  (ast._tag === "Union" && ast.types.some(isFloatNumber) &&
    ast.types.every((t) => isFloatNumber(t) || t._tag === "Null" || t._tag === "Undefined"))

/**
 * The keys of a metadata map that its schema declares as numbers, not integers (the sampling
 * parameters' `temperature` and `top_p`, as Megatron's `SamplingParams` declares them `float`).
 * `undefined` when the value is not a map or has none.
 *
 * @internal
 */
export const floatKeysOf = (ast: SchemaAST.AST): ReadonlySet<string> | undefined => {
  if (ast._tag !== "Objects") return undefined
  const keys = ast.propertySignatures.filter((ps) => isFloatField(ps.type)).map((ps) => String(ps.name))
  return keys.length === 0 ? undefined : new Set(keys)
}

/**
 * A metadata map with its float fields marked ({@link Msgpack.FloatFields}), so they go out as
 * float64, whole or not: Python writes `temperature: 1.0` as `cb 3f f0 ..`, where a whole
 * JavaScript number is written as an integer (`01`); the schema says which fields are floats.
 * Marked, neither written by a writer of its own nor copied, both slower
 * (PERFORMANCE.md#float-fields-marked-not-copied-or-written-by-a-second-writer). Anything that is
 * not a plain object is left as it is.
 */
export const withFloats = (value: unknown, floats: ReadonlySet<string>): unknown => {
  if (value === null || typeof value !== "object") return value
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return value
  return new Msgpack.FloatFields(value as Record<string, unknown>, floats)
}
