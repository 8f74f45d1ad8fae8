/**
 * Integer flags with a lower bound, refused at parse time with a message naming the bound.
 *
 * @since 0.1.0
 * @internal
 */
import { Flag } from "effect/cli"

/**
 * An integer flag that must be at least `min`.
 *
 * @example
 * ```ts
 * import { Flag } from "effect/cli"
 * import { intAtLeast } from "./Positive.ts"
 *
 * const engines = intAtLeast("engines", 1).pipe(Flag.withDefault(2))
 * ```
 *
 * @since 0.1.0
 */
export const intAtLeast = (name: string, min: number): Flag.Flag<number> =>
  Flag.Int(name).pipe(Flag.filter((n) => n >= min, () => `an integer >= ${min}`))
