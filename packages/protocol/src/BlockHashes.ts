/**
 * Prefix-routing block hashes of a token-id prompt (the protocol README, "The submission").
 *
 * The token ids are written as little-endian int64 and cut into blocks; each complete block is
 * hashed as `SHA-256(parent || block)`, `parent` being the previous block's digest (32 zero
 * bytes, or the media cache key, for the first), and reduced to an integer in [1, 2^63 - 1].
 * The coordinator routes a request to the engine that already holds its longest run of
 * leading hashes, so these must equal, bit for bit, what Megatron-LM's Python computes.
 *
 * Two implementations give the same hashes: a native addon, built at install where a C
 * compiler exists, that hashes the whole chain in one call with OpenSSL, and a pure one on
 * `node:crypto`. `blockHashes` uses the native one when it loaded, and
 * `MCORE_EFFECT_NO_NATIVE=1` forces the pure one.
 *
 * @since 0.1.0
 */
import { chainNative } from "./internal/blockHashChainNative.ts"
import { chainPure, type TokenIds as ChainTokenIds } from "./internal/blockHashChainPure.ts"

/**
 * Token ids, already validated by the caller as non-negative safe integers: a prompt's token ids,
 * or bytes.
 *
 * @category models
 * @since 0.1.0
 */
export type TokenIds = ChainTokenIds

/**
 * A block-hash function: one hash per complete block, each in [1, 2^63 - 1].
 *
 * @category models
 * @since 0.1.0
 */
export type BlockHasher = (tokens: TokenIds, blockSizeTokens: number, mediaCacheKey?: string | null) => BigUint64Array<ArrayBuffer>

type Chain = (tokens: TokenIds, blockSizeTokens: number, parent: Uint8Array, out: BigUint64Array) => void

const MEDIA_CACHE_KEY = /^[0-9a-f]{64}$/

/** The first block's parent: the media cache key's 32 bytes, or zeros. */
const initialParent = (mediaCacheKey: string | null | undefined): Uint8Array => {
  const parent = new Uint8Array(32)
  if (mediaCacheKey === null || mediaCacheKey === undefined) return parent
  // Wrong input here is a programmer error (the key is computed, never typed in): throw.
  if (typeof mediaCacheKey !== "string" || !MEDIA_CACHE_KEY.test(mediaCacheKey)) {
    throw new RangeError(`mediaCacheKey must be 64 lowercase hex characters, got ${JSON.stringify(mediaCacheKey)}`)
  }
  for (let i = 0; i < 32; i++) parent[i] = parseInt(mediaCacheKey.slice(2 * i, 2 * i + 2), 16)
  return parent
}

const hasherOf = (chain: Chain): BlockHasher => (tokens, blockSizeTokens, mediaCacheKey) => {
  // The caller validated the configured block size; anything else here is a programmer error.
  if (!Number.isSafeInteger(blockSizeTokens) || blockSizeTokens < 1) {
    throw new RangeError(`blockSizeTokens must be a positive integer, got ${blockSizeTokens}`)
  }
  const parent = initialParent(mediaCacheKey)
  const out = new BigUint64Array(Math.floor(tokens.length / blockSizeTokens))
  chain(tokens, blockSizeTokens, parent, out)
  return out
}

/**
 * The block hashes computed with `node:crypto` only; always available.
 *
 * @example
 * ```ts
 * import { BlockHashes } from "@mcore-effect/protocol"
 *
 * BlockHashes.blockHashesPure([0], 1) // BigUint64Array [901630261472408622n]
 * BlockHashes.blockHashesPure([1, 2, 3, 4, 5], 2) // two hashes: the fifth token is no complete block
 * ```
 *
 * @category hashing
 * @since 0.1.0
 */
export const blockHashesPure: BlockHasher = hasherOf(chainPure)

/**
 * The block hashes computed by the native addon, or `undefined` when it was not built, did
 * not load, or `MCORE_EFFECT_NO_NATIVE=1`.
 *
 * @example
 * ```ts
 * import { BlockHashes } from "@mcore-effect/protocol"
 *
 * BlockHashes.blockHashesNative?.([0], 1) // BigUint64Array [901630261472408622n], or undefined
 * ```
 *
 * @category hashing
 * @since 0.1.0
 */
export const blockHashesNative: BlockHasher | undefined = chainNative === undefined ? undefined : hasherOf(chainNative)

/**
 * Which implementation `blockHashes` uses in this process.
 *
 * @category hashing
 * @since 0.1.0
 */
export const blockHashImplementation: "native" | "pure" = blockHashesNative === undefined ? "pure" : "native"

/**
 * The block hashes of `tokens`: one per complete block of `blockSizeTokens` tokens, each a
 * `bigint` in [1, 2^63 - 1], salted by `mediaCacheKey` (64 lowercase hex characters) when the
 * request carries media. Uses the fastest implementation available
 * (`blockHashImplementation`).
 *
 * Throws a `RangeError` for a block size that is not a positive integer or a malformed media
 * cache key: both are configuration the caller validates first.
 *
 * @example
 * ```ts
 * import { BlockHashes } from "@mcore-effect/protocol"
 *
 * const hashes = BlockHashes.blockHashes(new Int32Array(1000), 256) // 3 hashes: 232 tokens left over
 * const salted = BlockHashes.blockHashes(new Int32Array(1000), 256, "ab".repeat(32)) // 3 different hashes
 * hashes.length // 3
 * ```
 *
 * @category hashing
 * @since 0.1.0
 */
export const blockHashes: BlockHasher = blockHashesNative ?? blockHashesPure
