/**
 * The field-level arbitraries behind {@link Arbitraries}: token ids, prompts, block hashes,
 * sampling params, media and reply bodies, each built by hand where a Schema alone would give
 * implausible or inconsistent values, and the size limits they share. Public through
 * `Arbitraries`, which re-exports them; this module keeps them apart from the message and
 * conversation arbitraries built on top.
 *
 * @since 0.1.0
 * @internal
 */
import { Media, Messages, type MessageSpec, Msgpack, Reply, SamplingParams } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as fc from "fast-check"
import * as SchemaArbitrary from "../arbitraries/SchemaArbitrary.ts"

/**
 * Size limits.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Longest generated array, string or map (sampling params' stop words, reply fields, ...). Default 6. */
  readonly maxLength?: number | undefined
  /** Longest generated prompt, in tokens (or characters for text). Default 48. */
  readonly maxTokens?: number | undefined
}

/** The limits with their defaults. @internal */
export const resolve = (options: Options | undefined) => ({
  maxLength: options?.maxLength ?? 6,
  maxTokens: options?.maxTokens ?? 48
})

const cache = new Map<string, unknown>()

/**
 * Builds an arbitrary once per name and size limits: deriving one from a Schema is not free.
 *
 * @internal
 */
export const memo = <A>(name: string, options: Options | undefined, build: (options: Options) => A): A => {
  const resolved = resolve(options)
  const key = `${name}/${resolved.maxLength}/${resolved.maxTokens}`
  let out = cache.get(key) as A | undefined
  if (out === undefined) {
    out = build(resolved)
    cache.set(key, out)
  }
  return out
}


const MAX_SAFE = Number.MAX_SAFE_INTEGER
const UINT63_MAX = (1n << 63n) - 1n
const TWO_53 = 1n << 53n

/**
 * A token id: mostly vocabulary-sized, sometimes anywhere up to 2^53 - 1 (so ids above 2^32 are
 * exercised too).
 *
 * @example
 * ```ts
 * import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
 * import * as fc from "fast-check"
 *
 * fc.sample(Arbitraries.tokenId(), 5).every((id) => Number.isSafeInteger(id) && id >= 0) // true
 * ```
 *
 * @category arbitraries
 * @since 0.1.0
 */
export const tokenId = (): fc.Arbitrary<number> =>
  fc.oneof({ weight: 8, arbitrary: fc.nat({ max: 262_143 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: MAX_SAFE }) })

/**
 * Token ids (at least one) as the client may hold them: a plain array, or an `Int32Array`, `Uint32Array`,
 * `Int16Array`, `Uint16Array` or `Float64Array` (each with ids its element type holds).
 *
 * @example
 * ```ts
 * import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
 * import * as fc from "fast-check"
 *
 * fc.sample(Arbitraries.tokenIds({ maxTokens: 4 }), 3)
 * ```
 *
 * @category arbitraries
 * @since 0.1.0
 */
export const tokenIds = (
  options?: Options
): fc.Arbitrary<ReadonlyArray<number> | Int32Array | Uint32Array | Int16Array | Uint16Array | Float64Array> => {
  const { maxTokens } = resolve(options)
  // At least one id: an empty prompt is refused before it is sent (`Prompt.validate`).
  const size = { minLength: 1, maxLength: Math.max(1, maxTokens) }
  const ids = (max: number) => fc.array(fc.integer({ min: 0, max }), size)
  return fc.oneof(
    { weight: 4, arbitrary: fc.array(tokenId(), size) },
    { weight: 1, arbitrary: ids(0x7fff_ffff).map((xs) => Int32Array.from(xs)) },
    { weight: 1, arbitrary: ids(0xffff_ffff).map((xs) => Uint32Array.from(xs)) },
    { weight: 1, arbitrary: ids(0x7fff).map((xs) => Int16Array.from(xs)) },
    { weight: 1, arbitrary: ids(0xffff).map((xs) => Uint16Array.from(xs)) },
    { weight: 1, arbitrary: fc.array(tokenId(), size).map((xs) => Float64Array.from(xs)) }
  )
}

/**
 * What a submission's prompt body holds: text, token ids, or a typed array of token ids.
 *
 * @category models
 * @since 0.1.0
 */
export type PromptBody = MessageSpec.Type<typeof Messages.SubmitRequest>["prompt"]

/**
 * A prompt body: text (any well-formed Unicode) or token ids, never empty.
 *
 * @example
 * ```ts
 * import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
 * import * as fc from "fast-check"
 *
 * fc.sample(Arbitraries.prompt(), 3)
 * ```
 *
 * @category arbitraries
 * @since 0.1.0
 */
export const prompt = (options?: Options): fc.Arbitrary<PromptBody> => {
  const { maxTokens } = resolve(options)
  return fc.oneof(
    fc.string({ unit: "grapheme", minLength: 1, maxLength: Math.max(1, maxTokens) }),
    fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: Math.max(1, maxTokens) }),
    tokenIds(options),
    tokenIds(options)
  )
}

/**
 * A block hash: a bigint in [1, 2^63 - 1], as `(digest mod (2^63 - 1)) + 1` gives; about half of
 * them above 2^53, where a `number` could not hold them.
 *
 * @example
 * ```ts
 * import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
 * import * as fc from "fast-check"
 *
 * fc.sample(Arbitraries.blockHash(), 5).every((h) => h >= 1n && h < 2n ** 63n) // true
 * ```
 *
 * @category arbitraries
 * @since 0.1.0
 */
export const blockHash = (): fc.Arbitrary<bigint> =>
  fc.oneof(
    fc.bigInt({ min: 1n, max: 0xffff_ffffn }),
    fc.bigInt({ min: TWO_53 + 1n, max: UINT63_MAX }),
    fc.bigInt({ min: 1n, max: UINT63_MAX }),
    fc.constantFrom(1n, TWO_53 - 1n, TWO_53, TWO_53 + 1n, UINT63_MAX)
  )

/**
 * Block hashes as the client sends them: a `BigUint64Array` (possibly empty: hashed, shorter than
 * a block).
 *
 * @example
 * ```ts
 * import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
 * import * as fc from "fast-check"
 *
 * fc.sample(Arbitraries.blockHashes(), 3)
 * ```
 *
 * @category arbitraries
 * @since 0.1.0
 */
export const blockHashes = (options?: Options): fc.Arbitrary<BigUint64Array> =>
  fc.array(blockHash(), { maxLength: Math.max(1, Math.ceil(resolve(options).maxTokens / 4)) }).map((hs) => BigUint64Array.from(hs))

const KNOWN_PARAMS: ReadonlyArray<string> = Object.keys(SamplingParams.defaults)
const RESERVED_PARAM_KEYS: ReadonlySet<string> = new Set([...KNOWN_PARAMS, "serialize", "deserialize", "add_attributes"])

/**
 * Sampling parameters that satisfy the protocol's validation: random known fields (the others
 * left to their Python defaults; `num_tokens_to_generate` and `num_tokens_total` never both set;
 * `return_prompt_top_n_logprobs` derived) and sometimes extra keys (given in `extra`, so they
 * follow the known ones on the wire), all built by `SamplingParams.make`.
 *
 * @example
 * ```ts
 * import { SamplingParams } from "@mcore-effect/protocol"
 * import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
 * import { Result } from "effect"
 * import * as fc from "fast-check"
 *
 * fc.assert(fc.property(Arbitraries.samplingParams(), (p) => Result.isSuccess(SamplingParams.make(p))))
 * ```
 *
 * @category arbitraries
 * @since 0.1.0
 */
export const samplingParams = (options?: Options): fc.Arbitrary<SamplingParams.SamplingParams> =>
  memo("samplingParams", options, buildSamplingParams)

const buildSamplingParams = (options: Options): fc.Arbitrary<SamplingParams.SamplingParams> => {
  const { maxLength } = resolve(options)
  const known = SchemaArbitrary.make(SamplingParams.KnownFields, { maxLength })
  const extraKey = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,11}$/).filter((k) => !RESERVED_PARAM_KEYS.has(k))
  const extras = fc.oneof(
    { weight: 3, arbitrary: fc.constant<Array<[string, unknown]>>([]) },
    {
      weight: 1,
      arbitrary: fc.uniqueArray(fc.tuple(extraKey, SchemaArbitrary.unknownValue({ maxDepth: 2 })), {
        selector: (e) => e[0],
        minLength: 1,
        maxLength: 3
      })
    }
  )
  return fc
    .tuple(known, fc.subarray([...KNOWN_PARAMS]), fc.boolean(), extras)
    .map(([values, given, keepTotal, extra]) => {
      const input: Record<string, unknown> = {}
      for (const key of given) {
        if (key !== "return_prompt_top_n_logprobs") input[key] = (values as Record<string, unknown>)[key]
      }
      if (input.num_tokens_to_generate != null && input.num_tokens_total != null) {
        input[keepTotal ? "num_tokens_to_generate" : "num_tokens_total"] = null
      }
      if (extra.length > 0) input.extra = Object.fromEntries(extra)
      const made = SamplingParams.make(input)
      if (Result.isFailure(made)) {
        throw new globalThis.Error(`Arbitraries.samplingParams built invalid input: ${made.failure.message}`)
      }
      return made.success
    })
}

/**
 * What a submission carries about its media: the descriptor (frame 0) and the body (frame 3).
 *
 * @category models
 * @since 0.1.0
 */
export interface SubmittedMedia {
  readonly mediaDescriptor: Media.MediaDescriptor
  /** The pre-encoded frame (as `Submission.submitRequest` sends it), or the media map it decodes to. */
  readonly media: Msgpack.Raw | Media.MediaWire
}

const tensorNumber = fc.oneof(fc.integer({ min: -1000, max: 1000 }), fc.double({ min: -1e6, max: 1e6, noNaN: true }))

const matrix = (rows: fc.Arbitrary<number>, cols: fc.Arbitrary<number>, element: fc.Arbitrary<number>) =>
  fc.tuple(rows, cols).chain(([r, c]) =>
    fc.array(
      fc.oneof(
        { weight: 3, arbitrary: fc.array(element, { minLength: c, maxLength: c }) },
        { weight: 1, arbitrary: fc.array(element, { minLength: c, maxLength: c }).map((row) => Float32Array.from(row)) }
      ),
      { minLength: r, maxLength: r }
    )
  )

const dim = (max: number) => fc.integer({ min: 1, max })

const rawMedia = fc.oneof(
  fc.uint8Array({ maxLength: 24 }),
  fc.array(fc.uint8Array({ maxLength: 24 }), { minLength: 1, maxLength: 3 })
)

const imageTensors = fc.record(
  {
    imgs: matrix(dim(3), dim(4), tensorNumber),
    imgs_sizes: matrix(dim(3), fc.constant(2), fc.integer({ min: 1, max: 4096 })),
    num_tiles: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 3 }),
    num_img_embeddings_per_tile: fc.integer({ min: 0, max: 4096 })
  },
  { requiredKeys: [] }
)

const videoTensors = fc.record(
  {
    imgs: matrix(dim(3), dim(4), tensorNumber),
    imgs_sizes: matrix(dim(3), fc.constant(2), fc.integer({ min: 1, max: 4096 })),
    num_frames: fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 3 }),
    num_img_embeddings_per_tile: fc.integer({ min: 0, max: 4096 }),
    video_frame_indices: fc.array(fc.nat({ max: 1000 }), { maxLength: 4 }),
    video_fps: fc.oneof(fc.double({ min: 1, max: 120, noNaN: true }), fc.array(fc.integer({ min: 1, max: 60 }), { maxLength: 3 }))
  },
  { requiredKeys: ["imgs", "imgs_sizes", "num_frames"] }
)

/**
 * `multi_modal_data` that `Media.prepare` accepts: raw image/video bytes (one item or a list) or
 * preprocessed tensor maps.
 *
 * @example
 * ```ts
 * import { Media } from "@mcore-effect/protocol"
 * import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
 * import { Result } from "effect"
 * import * as fc from "fast-check"
 *
 * fc.assert(fc.property(Arbitraries.multiModalData(), (data) => Result.isSuccess(Media.prepare(data))))
 * ```
 *
 * @category arbitraries
 * @since 0.1.0
 */
export const multiModalData = (): fc.Arbitrary<Media.MultiModalData> => memo("multiModalData", undefined, buildMultiModalData)

const buildMultiModalData = (): fc.Arbitrary<Media.MultiModalData> =>
  fc
    .record(
      {
        image: fc.oneof({ weight: 2, arbitrary: rawMedia }, { weight: 1, arbitrary: imageTensors }),
        video: fc.oneof(rawMedia, videoTensors)
      },
      { requiredKeys: [] }
    )
    .filter((data) => {
      const prepared = Media.prepare(data)
      return Result.isSuccess(prepared) && prepared.success !== null
    })

const decodeMediaWire = Schema.decodeUnknownSync(Media.MediaWire)

/**
 * The media of a submission: a descriptor and body that belong together (the descriptor's cache
 * key is the SHA-256 of the body's bytes; its counts are the items'), from {@link multiModalData}.
 *
 * @example
 * ```ts
 * import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
 * import * as fc from "fast-check"
 *
 * const [m] = fc.sample(Arbitraries.submittedMedia(), 1)
 * m!.mediaDescriptor.media_cache_key.length // 64
 * ```
 *
 * @category arbitraries
 * @since 0.1.0
 */
export const submittedMedia = (): fc.Arbitrary<SubmittedMedia> =>
  fc.tuple(multiModalData(), fc.boolean()).map(([data, raw]) => {
    const prepared = Result.getOrThrow(Media.prepare(data))!
    return {
      mediaDescriptor: prepared.descriptor,
      media: raw ? new Msgpack.Raw(prepared.frame) : decodeMediaWire(Msgpack.decode(prepared.frame))
    }
  })

const encodeReply = Schema.encodeSync(Reply.DynamicInferenceRequestFromMap)
const TENSOR_FIELDS = ["prompt_tokens", "generated_tokens", "generated_log_probs", "prompt_log_probs"] as const

/**
 * A reply body as the engine serializes it (`DynamicInferenceRequest.serialize()`): random known
 * fields, unknown extra keys, and some tensor fields wrapped as `["tensor", [...]]`. With a
 * request id, `request_id` is set to it.
 *
 * @example
 * ```ts
 * import { Reply } from "@mcore-effect/protocol"
 * import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
 * import { Result } from "effect"
 * import * as fc from "fast-check"
 *
 * fc.assert(fc.property(Arbitraries.replyMap(7), (map) => {
 *   const reply = Reply.decodeReply(map)
 *   return Result.isSuccess(reply) && reply.success.request_id === 7
 * }))
 * ```
 *
 * @category arbitraries
 * @since 0.1.0
 */
export const replyMap = (requestId?: number, options?: Options): fc.Arbitrary<Reply.ReplyMap> => {
  const base = memo("replyMap", options, ({ maxLength }) =>
    fc
      .tuple(
        SchemaArbitrary.make(Reply.DynamicInferenceRequest, { maxLength: Math.min(maxLength ?? 6, 4), maxDepth: 2 }),
        fc.subarray([...TENSOR_FIELDS])
      )
      .map(([reply, wrapped]) => {
        const map: Record<string, unknown> = { ...encodeReply(reply) }
        for (const key of wrapped) if (Array.isArray(map[key])) map[key] = ["tensor", map[key]]
        return map
      }))
  return requestId === undefined ? base : base.map((map) => ({ ...map, request_id: requestId }))
}

/**
 * A partial body `{request_id, new_tokens}`, with the given request id when there is one.
 *
 * @example
 * ```ts
 * import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
 * import * as fc from "fast-check"
 *
 * fc.sample(Arbitraries.partialReply(3), 2).every((p) => p.request_id === 3) // true
 * ```
 *
 * @category arbitraries
 * @since 0.1.0
 */
export const partialReply = (requestId?: number, options?: Options): fc.Arbitrary<Reply.PartialReply> =>
  fc.tuple(requestId === undefined ? fc.nat() : fc.constant(requestId), fc.array(tokenId(), { minLength: 1, maxLength: resolve(options).maxLength }))
    .map(([request_id, new_tokens]) => ({ request_id, new_tokens }))

