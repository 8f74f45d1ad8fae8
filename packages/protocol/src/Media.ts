/**
 * `multi_modal_data`: validated, packed once into frame 3, and keyed by the SHA-256 of exactly
 * those bytes.
 *
 * The coordinator never decodes frame 3; it reads the small descriptor in frame 0 instead (the
 * cache key for media affinity, and the item counts). The key is the hash of the frame as sent,
 * with every map's keys sorted, so the same media sent the same way always gets the same key,
 * whichever language packed it.
 *
 * @since 0.1.0
 */
import { createHash } from "node:crypto"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Msgpack from "./Msgpack.ts"
import { invalid, item } from "./internal/mediaItems.ts"
import { type ProtocolError, protocolError, UnsupportedModality } from "./ProtocolError.ts"
import { describeValue, isPlainObject } from "./internal/values.ts"

/**
 * Raw media: the encoded bytes of one item (sent as a one-element list), or a list of them.
 *
 * @category models
 * @since 0.1.0
 */
export type RawMedia = Uint8Array | ReadonlyArray<Uint8Array>

/**
 * Typed arrays accepted as the innermost dimension of a tensor. `Uint8Array` is not one: it is
 * sent as msgpack bin, which the engine would read as bytes rather than numbers.
 *
 * @category models
 * @since 0.1.0
 */
export type TensorRow = Msgpack.NumberTypedArray

/**
 * A tensor as nested arrays of numbers (what `torch.Tensor.tolist()` gives), rectangular, with
 * typed arrays allowed as its innermost rows.
 *
 * @category models
 * @since 0.1.0
 */
export type Tensor = number | TensorRow | ReadonlyArray<Tensor>

/**
 * A preprocessed image item. `num_tiles` holds one entry per image (static tiling, each image cut
 * into tiles stacked along `imgs`' first dimension); `imgs_sizes` one `[h, w]` row per image
 * (dynamic resolution). At least one tensor is required, and static tiling (`num_tiles` without
 * `imgs_sizes`) needs `num_img_embeddings_per_tile > 0`, as the engine requires.
 *
 * @category models
 * @since 0.1.0
 */
export interface ImageTensors {
  readonly imgs?: Tensor | null | undefined
  readonly imgs_sizes?: Tensor | null | undefined
  readonly num_tiles?: Tensor | null | undefined
  readonly num_img_embeddings_per_tile?: number | null | undefined
}

/**
 * A preprocessed video item: `imgs` (the frames' patches), `imgs_sizes` (one row per frame) and
 * `num_frames` (one entry per video) are required, as the engine requires them;
 * `num_img_embeddings_per_tile` (an integer), `video_frame_indices` (a tensor) and `video_fps`
 * (a number or a tensor) are optional timing and sizing metadata.
 *
 * @category models
 * @since 0.1.0
 */
export interface VideoTensors {
  readonly imgs?: Tensor | null | undefined
  readonly imgs_sizes?: Tensor | null | undefined
  readonly num_frames?: Tensor | null | undefined
  readonly num_img_embeddings_per_tile?: number | null | undefined
  readonly video_frame_indices?: Tensor | null | undefined
  readonly video_fps?: Tensor | null | undefined
}

/**
 * The vLLM-style modality map a caller submits. A modality whose value is `null` or `undefined`
 * is absent. Any other key (audio included) is an unsupported modality.
 *
 * @category models
 * @since 0.1.0
 */
export interface MultiModalData {
  readonly image?: RawMedia | ImageTensors | null | undefined
  readonly video?: RawMedia | VideoTensors | null | undefined
}

/**
 * The bounded part of the media, in frame 0: the cache key and each present modality's count.
 *
 * @example
 * ```ts
 * import { Media } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * Schema.decodeUnknownSync(Media.MediaDescriptor)({
 *   media_cache_key: "31d2c2fe85cc23f0829831d85b1120b8fa4e93887d4e03817c43cd3ece0d0f66",
 *   modalities: { image: 1 }
 * })
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const MediaDescriptor = Schema.Struct({
  media_cache_key: Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/)),
  modalities: Schema.Struct({
    image: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
    video: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1)))
  })
})

/**
 * @category models
 * @since 0.1.0
 */
export type MediaDescriptor = typeof MediaDescriptor.Type

/**
 * A tensor as it arrives: nested arrays of numbers.
 *
 * @category models
 * @since 0.1.0
 */
export type TensorWire = number | ReadonlyArray<TensorWire>

/**
 * @example
 * ```ts
 * import { Media } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * Schema.decodeUnknownSync(Media.TensorWire)([[1, 2], [3, 4]])
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const TensorWire: Schema.Codec<TensorWire> = Schema.Union([
  Schema.Number,
  Schema.Array(Schema.suspend((): Schema.Codec<TensorWire> => TensorWire))
])

const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * A raw item as it arrives: always a list of byte strings (bin decodes as `Uint8Array`, a
 * `Buffer` under Node).
 *
 * @example
 * ```ts
 * import { Media } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * Schema.decodeUnknownSync(Media.RawMediaWire)([new Uint8Array([0xff, 0xd8])])
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const RawMediaWire = Schema.Array(Schema.Uint8Array)

/**
 * A preprocessed image map as it arrives (see {@link ImageTensors}).
 *
 * @example
 * ```ts
 * import { Media } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * Schema.decodeUnknownSync(Media.ImageTensorsWire)({ imgs: [[0.5]], num_tiles: [1], num_img_embeddings_per_tile: 256 })
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const ImageTensorsWire = Schema.Struct({
  imgs: Schema.optionalKey(TensorWire),
  imgs_sizes: Schema.optionalKey(TensorWire),
  num_tiles: Schema.optionalKey(TensorWire),
  num_img_embeddings_per_tile: Schema.optionalKey(NonNegativeInt)
})

/**
 * A preprocessed video map as it arrives (see {@link VideoTensors}).
 *
 * @example
 * ```ts
 * import { Media } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * Schema.decodeUnknownSync(Media.VideoTensorsWire)({ imgs: [[0.5]], imgs_sizes: [[16, 16]], num_frames: [1] })
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const VideoTensorsWire = Schema.Struct({
  imgs: TensorWire,
  imgs_sizes: TensorWire,
  num_frames: TensorWire,
  num_img_embeddings_per_tile: Schema.optionalKey(NonNegativeInt),
  video_frame_indices: Schema.optionalKey(TensorWire),
  video_fps: Schema.optionalKey(TensorWire)
})

/**
 * Frame 3 as the receiving side (an engine, a test engine) decodes it. Decoding walks every
 * tensor element: fine for a test peer, not for a hot path.
 *
 * @example
 * ```ts
 * import { Media, Msgpack } from "@mcore-effect/protocol"
 * import { Schema } from "effect"
 *
 * const frame = Msgpack.encode({ image: [new Uint8Array([1, 2])] })
 * Schema.decodeUnknownSync(Media.MediaWire)(Msgpack.decode(frame)) // { image: [Uint8Array [1, 2]] }
 * ```
 *
 * @category schemas
 * @since 0.1.0
 */
export const MediaWire = Schema.Struct({
  image: Schema.optionalKey(Schema.Union([RawMediaWire, ImageTensorsWire])),
  video: Schema.optionalKey(Schema.Union([RawMediaWire, VideoTensorsWire]))
})

/**
 * @category models
 * @since 0.1.0
 */
export type MediaWire = typeof MediaWire.Type

/**
 * Media ready to send: frame 3's exact bytes, the descriptor for frame 0, and the cache key (also
 * the salt of the prompt's block hashes).
 *
 * @category models
 * @since 0.1.0
 */
export interface PreparedMedia {
  readonly frame: Uint8Array
  readonly descriptor: MediaDescriptor
  readonly cacheKey: string
}

/**
 * The media cache key: the lowercase hex SHA-256 of frame 3's bytes.
 *
 * @example
 * ```ts
 * import { Media } from "@mcore-effect/protocol"
 *
 * Media.mediaCacheKey(new Uint8Array([0x81, 0xa5, 0x69, 0x6d, 0x61, 0x67, 0x65, 0x91, 0xc4, 0x00]))
 * // "c6408222e3f42e6057af3b4c77423409f2ce8e441c6be2e87939a3ee09dc5070"
 * ```
 *
 * @category hashing
 * @since 0.1.0
 */
export const mediaCacheKey = (frame: Uint8Array): string => createHash("sha256").update(frame).digest("hex")

/** The answer for no media, made once: nearly every request has none. */
const noMedia: Result.Result<PreparedMedia | null, ProtocolError> = Result.succeed(null)

/**
 * Validates `multi_modal_data` and packs it into frame 3: raw bytes become a one-element list,
 * lists of bytes go as they are, and a preprocessed tensor map goes with its keys sorted (every
 * map of the frame is packed with sorted keys). Returns `null` when there is no media (no data,
 * or only absent modalities).
 *
 * Fails with `UnsupportedModality` for any key other than `image` and `video` (audio included),
 * checked before anything is built, and with `InvalidMedia` for anything malformed: an item that
 * is not bytes, a list of bytes or a tensor map; an empty list; a ragged or non-numeric tensor;
 * an unknown key in a tensor map; a tensor map that describes no item.
 *
 * Item counts: a raw list counts its items. A preprocessed image map counts the entries of
 * `num_tiles` if present (static tiling: one entry per image), else the rows of `imgs_sizes`
 * (dynamic resolution: one `[h, w]` per image), else the first dimension of `imgs`. A
 * preprocessed video map counts the entries of `num_frames` (one per video). A scalar counts 1.
 *
 * @example
 * ```ts
 * import { Media } from "@mcore-effect/protocol"
 * import { Result } from "effect"
 *
 * const prepared = Media.prepare({ image: new Uint8Array([0, 1, 2, 3]) })
 * if (Result.isSuccess(prepared) && prepared.success !== null) {
 *   prepared.success.descriptor // { media_cache_key: "…", modalities: { image: 1 } }
 * }
 *
 * Media.prepare({ audio: new Uint8Array([1]) }) // Failure: UnsupportedModality "audio"
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const prepare = (
  data: MultiModalData | null | undefined
): Result.Result<PreparedMedia | null, ProtocolError> => {
  if (data === null || data === undefined) return noMedia
  if (!isPlainObject(data)) {
    return invalid("multi_modal_data", `must be a map of modality to media, got ${describeValue(data)}`)
  }
  const keys = Object.keys(data)
  for (const key of keys) {
    if (key !== "image" && key !== "video") {
      return Result.fail(protocolError(new UnsupportedModality({ modality: key })))
    }
  }

  const media: Record<string, unknown> = {}
  const modalities: { image?: number; video?: number } = {}
  for (const modality of ["image", "video"] as const) {
    const value = data[modality]
    if (value === undefined || value === null) continue
    const built = item(modality, value)
    if (Result.isFailure(built)) return Result.fail(built.failure)
    media[modality] = built.success.wire
    modalities[modality] = built.success.count
  }
  if (modalities.image === undefined && modalities.video === undefined) return Result.succeed(null)

  let frame: Uint8Array
  try {
    frame = Msgpack.encode(media, { sortKeys: true })
  } catch (cause) {
    return invalid(
      "multi_modal_data",
      `not encodable: ${cause instanceof Msgpack.NotEncodableException ? cause.message : String(cause)}`
    )
  }
  const cacheKey = mediaCacheKey(frame)
  return Result.succeed({ frame, descriptor: { media_cache_key: cacheKey, modalities }, cacheKey })
}
