/**
 * The options and extension points of `SchemaArbitrary` (public through it), apart from the
 * derivation that reads them (`schemaDeriver.ts`).
 *
 * @since 0.1.0
 * @internal
 */
import type * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import type * as fc from "fast-check"

/**
 * The annotation key under which a schema carries its own fast-check arbitrary factory.
 *
 * @category constants
 * @since 0.1.0
 */
export const ArbitraryAnnotationId = "@mcore-effect/testkit/SchemaArbitrary" as const

/**
 * Bounds that the schema's checks put on a node, as read from Effect's `arbitraryConstraint`
 * annotations. Handed to {@link ArbitraryFactory} so an attached arbitrary can honour them.
 *
 * @category models
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
 * @category models
 * @since 0.1.0
 */
export interface FactoryContext {
  readonly typeParameters: ReadonlyArray<fc.Arbitrary<unknown>>
  readonly constraint: Constraint
  readonly maxLength: number
}

/**
 * An arbitrary factory attached to a schema with `SchemaArbitrary.annotate`.
 *
 * @category models
 * @since 0.1.0
 */
export type ArbitraryFactory<A> = (context: FactoryContext) => fc.Arbitrary<A>

/**
 * Derivation options.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /**
   * Upper bound on the length of generated arrays, strings, typed arrays and records (entries),
   * unless a schema's own `maxLength` check is smaller. Default 10.
   */
  readonly maxLength?: number | undefined
  /** How deep recursive schemas (`Schema.suspend`) and `unknownValue` nest. Default 3. */
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
 * @category errors
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
