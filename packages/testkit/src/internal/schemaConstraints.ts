/**
 * The bounds a schema's checks put on a node, read from Effect's `arbitraryConstraint`
 * annotations and merged (the tightest bound wins), and every check as a filter: how
 * `SchemaArbitrary` builds values inside the bounds and then keeps only those the schema accepts.
 *
 * @since 0.1.0
 * @internal
 */
import type * as Schema from "effect/Schema"
import type * as SchemaAST from "effect/SchemaAST"

/** Bounds being merged. @internal */
export interface MutableConstraint {
  minimum?: unknown
  exclusiveMinimum?: boolean
  maximum?: unknown
  exclusiveMaximum?: boolean
  minLength?: number
  maxLength?: number
  patterns?: Array<{ readonly source: string; readonly flags: string }>
  number?: "finite" | "integer"
}

const lessThan = (a: unknown, b: unknown): boolean =>
  (typeof a === "number" || typeof a === "bigint") && (typeof b === "number" || typeof b === "bigint") && a < b

const mergeConstraint = (into: MutableConstraint, c: Schema.Annotations.ToArbitrary.FilterConstraint<unknown>): void => {
  if (c.minimum !== undefined) {
    if (into.minimum === undefined || lessThan(into.minimum, c.minimum)) {
      into.minimum = c.minimum
      into.exclusiveMinimum = c.exclusiveMinimum === true
    } else if (into.minimum === c.minimum && c.exclusiveMinimum === true) {
      into.exclusiveMinimum = true
    }
  }
  if (c.maximum !== undefined) {
    if (into.maximum === undefined || lessThan(c.maximum, into.maximum)) {
      into.maximum = c.maximum
      into.exclusiveMaximum = c.exclusiveMaximum === true
    } else if (into.maximum === c.maximum && c.exclusiveMaximum === true) {
      into.exclusiveMaximum = true
    }
  }
  if (c.minLength !== undefined) into.minLength = Math.max(into.minLength ?? 0, c.minLength)
  if (c.maxLength !== undefined) into.maxLength = Math.min(into.maxLength ?? Infinity, c.maxLength)
  if (c.patterns !== undefined) into.patterns = [...(into.patterns ?? []), ...c.patterns]
  if (c.number === "integer" || (c.number === "finite" && into.number === undefined)) into.number = c.number
}

/** A node's merged bounds and its filters. @internal */
export interface CollectedChecks {
  readonly constraint: MutableConstraint
  readonly filters: ReadonlyArray<SchemaAST.Filter<unknown>>
}

/** The bounds and filters of a node's checks. @internal */
export const collectChecks = (checks: SchemaAST.Checks | undefined): CollectedChecks => {
  const constraint: MutableConstraint = {}
  const filters: Array<SchemaAST.Filter<unknown>> = []
  const visit = (check: SchemaAST.Check<unknown>): void => {
    const c = check.annotations?.arbitraryConstraint
    if (c !== undefined) mergeConstraint(constraint, c)
    if (check._tag === "Filter") filters.push(check)
    else check.checks.forEach(visit)
  }
  checks?.forEach(visit)
  return { constraint, filters }
}
