/**
 * Whether a client hashes a prompt into routing hashes (frame 2 of SUBMIT), and the hashes.
 *
 * A client hashes only when it knows the engines' block size, the coordinator's policy reads
 * the hashes, and the prompt is token ids. Otherwise it says `null`: "this client did not hash",
 * which tells the coordinator to hash the prompt itself. `null` is deliberately distinct from an
 * empty list ("hashed, shorter than one block"): reporting `[]` for a client that could not hash
 * would silently turn prefix-affinity routing into load balancing.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { blockHashes } from "./BlockHashes.ts"
import { isTokenIds, type Prompt } from "./Prompt.ts"

/**
 * The coordinator's routing policy.
 *
 * @category schemas
 * @since 0.1.0
 */
export const PrefixCachingPolicy = Schema.Literals(["load_balanced", "longest_prefix", "first_prefix_block"])

/**
 * @category models
 * @since 0.1.0
 */
export type PrefixCachingPolicy = typeof PrefixCachingPolicy.Type

/**
 * What a client was told about the deployment; either may be unknown.
 *
 * @category models
 * @since 0.1.0
 */
export interface HashingConfig {
  /** The engines' KV block size in tokens. Must match the engines, or the hashes name blocks never cached. */
  readonly blockSizeTokens?: number | null | undefined
  /** The coordinator's routing policy: only prefix policies read the hashes. */
  readonly prefixCachingPolicy?: PrefixCachingPolicy | null | undefined
}

/**
 * True when the policy routes on prefixes, so the hashes are read at all.
 *
 * @category hashing
 * @since 0.1.0
 */
export const routesOnPrefixes = (policy: PrefixCachingPolicy | null | undefined): boolean =>
  policy === "longest_prefix" || policy === "first_prefix_block"

/**
 * The routing hashes of a prompt, or `null` when this client does not hash it.
 *
 * @example
 * ```ts
 * import { PrefixHashing } from "@mcore-effect/protocol"
 *
 * const config = { blockSizeTokens: 4, prefixCachingPolicy: "longest_prefix" } as const
 * PrefixHashing.hashesFor([1, 2, 3, 4, 5], config) // BigUint64Array [one hash]
 * PrefixHashing.hashesFor([1, 2, 3], config) // BigUint64Array [] : hashed, shorter than a block
 * PrefixHashing.hashesFor("text", config) // null: the coordinator hashes
 * PrefixHashing.hashesFor([1, 2, 3, 4], {}) // null: told neither block size nor policy
 * ```
 *
 * @category hashing
 * @since 0.1.0
 */
export const hashesFor = (
  prompt: Prompt,
  config: HashingConfig,
  mediaCacheKey?: string | null
): BigUint64Array | null => {
  const blockSize = config.blockSizeTokens
  if (blockSize === null || blockSize === undefined) return null
  if (!routesOnPrefixes(config.prefixCachingPolicy)) return null
  if (!isTokenIds(prompt)) return null
  return blockHashes(prompt, blockSize, mediaCacheKey)
}
