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
import type * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"
import type * as fc from "fast-check"
import { Deriver } from "../internal/schemaDeriver.ts"
import { type ArbitraryFactory, ArbitraryAnnotationId, type Options } from "../internal/schemaOptions.ts"

export {
  type ArbitraryFactory,
  ArbitraryAnnotationId,
  type Constraint,
  type FactoryContext,
  type Options,
  UnsupportedSchema
} from "../internal/schemaOptions.ts"
export { unknownValue } from "../internal/unknownValue.ts"

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
 * @category arbitraries
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
 * @category constructors
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
 * @category constructors
 * @since 0.1.0
 */
export const fromAST = (ast: SchemaAST.AST, options?: Options): fc.Arbitrary<unknown> =>
  new Deriver(options).derive(ast, [])
