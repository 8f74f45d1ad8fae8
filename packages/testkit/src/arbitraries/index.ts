/**
 * fast-check arbitraries for the coordinator protocol: every message, whole conversations, and
 * any value a Schema accepts. A separate entry point (`@mcore-effect/testkit/arbitraries`) so
 * that the runtime testkit (`@mcore-effect/testkit`, which `mcore coordinator` and `--embedded`
 * run) never loads fast-check.
 *
 * @since 0.1.0
 */
export * as Arbitraries from "./Arbitraries.ts"
export * as SchemaArbitrary from "./SchemaArbitrary.ts"
