/**
 * Small value types that several messages share.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"

/**
 * A request id: a non-negative safe integer, assigned by the client from 0 in increasing order
 * (the coordinator renumbers with ids of its own towards the engines).
 *
 * @category schemas
 * @since 0.1.0
 */
export const RequestId = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * @category models
 * @since 0.1.0
 */
export type RequestId = typeof RequestId.Type

const UINT63_MAX = (1n << 63n) - 1n

const BlockHash = Schema.Union([
  Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)),
  // msgpack decodes uint64 2^53 as a number (it is exact), one past the safe integers.
  Schema.Literal(2 ** 53),
  Schema.BigInt.check(Schema.isBetweenBigInt({ minimum: 1n, maximum: UINT63_MAX }))
])

/**
 * Block hashes, each in [1, 2^63 - 1]. On the wire an array of ints (uint64 above 2^32, as
 * Python writes them); in memory a `BigUint64Array`, so hashes above 2^53 stay exact.
 *
 * @category schemas
 * @since 0.1.0
 */
export const BlockHashList = Schema.Array(BlockHash).pipe(
  Schema.decodeTo(
    Schema.declare((u: unknown): u is BigUint64Array => u instanceof BigUint64Array),
    SchemaTransformation.transform<BigUint64Array, ReadonlyArray<number | bigint>>({
      decode: (hashes) => BigUint64Array.from(hashes, (h) => BigInt(h)),
      encode: (hashes) => Array.from(hashes, (h) => (h <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(h) : h))
    })
  )
)

/**
 * A list of non-negative integers: token ids on the receiving side, KV source block ids.
 *
 * @category schemas
 * @since 0.1.0
 */
export const IntList = Schema.Array(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)))

/**
 * The prefill peer's KV export (NIXL agent and layout): a map, bounded by TP size, not by the
 * prompt, so it rides in the metadata frame.
 *
 * @category schemas
 * @since 0.1.0
 */
export const KvMeta = Schema.Record(Schema.String, Schema.Unknown)

/**
 * @category models
 * @since 0.1.0
 */
export type KvMeta = typeof KvMeta.Type
