import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import * as Media from "../src/Media.ts"
import * as Msgpack from "../src/Msgpack.ts"
import type { ProtocolError } from "../src/ProtocolError.ts"
import * as SamplingParams from "../src/SamplingParams.ts"

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex")

/** JSON vector value -> the value a caller would pass: `{"$bin": hex}` becomes a Uint8Array. */
const fromJson = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(fromJson)
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>
    if (typeof record.$bin === "string") return new Uint8Array(Buffer.from(record.$bin, "hex"))
    return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, fromJson(v)]))
  }
  return value
}

interface MediaKeyCase {
  readonly media: unknown
  readonly frame_hex: string
  readonly media_cache_key: string
}

const cases = (JSON.parse(
  readFileSync(new URL("./fixtures/media_keys.json", import.meta.url), "utf8")
) as { cases: ReadonlyArray<MediaKeyCase> }).cases

const prepared = (data: Media.MultiModalData | null | undefined): Media.PreparedMedia => {
  const result = Media.prepare(data)
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  if (result.success === null) throw new Error("expected media")
  return result.success
}

const failure = (data: unknown): ProtocolError => {
  const result = Media.prepare(data as Media.MultiModalData)
  if (Result.isSuccess(result)) throw new Error("expected a failure")
  return result.failure
}

const invalidWhy = (data: unknown): string => {
  const reason = failure(data).reason
  if (reason._tag !== "InvalidMedia") throw new Error(`expected InvalidMedia, got ${reason._tag}: ${reason.message}`)
  return reason.why
}

describe("Media.prepare: the Python peer's vectors", () => {
  it("has the six vectors", () => {
    expect(cases.length).toBe(6)
  })

  cases.forEach((c, i) => {
    it(`reproduces case ${i} byte for byte, with its key`, () => {
      const media = fromJson(c.media) as Record<string, ReadonlyArray<Uint8Array>>
      const p = prepared(media)
      expect(hex(p.frame)).toBe(c.frame_hex)
      expect(p.cacheKey).toBe(c.media_cache_key)
      expect(p.descriptor.media_cache_key).toBe(c.media_cache_key)
      expect(Media.mediaCacheKey(Buffer.from(c.frame_hex, "hex"))).toBe(c.media_cache_key)
      const counts: Record<string, number> = {}
      for (const key of Object.keys(media)) counts[key] = media[key]!.length
      expect(p.descriptor.modalities).toEqual(counts)
    })
  })

  it("reproduces frames.json submit_image: frame 3 and the descriptor in frame 0", () => {
    const frame0 =
      "941409de0012ab74656d7065726174757265cb3fe6666666666666a5746f705f6b00a5746f705f70cb3feccccccccccccdb072" +
      "657475726e5f6c6f675f70726f6273c2b5736b69705f70726f6d70745f6c6f675f70726f6273c2af72657475726e5f736567" +
      "6d656e7473c2b66e756d5f746f6b656e735f746f5f67656e657261746520b06e756d5f746f6b656e735f746f74616cc0ae74" +
      "65726d696e6174696f6e5f6964c0ae746f705f6e5f6c6f6770726f627300bc72657475726e5f70726f6d70745f746f705f6e" +
      "5f6c6f6770726f6273c2a76164645f424f53c2aa73746f705f776f726473c0b86465746f6b656e697a655f73746f705f7365" +
      "7175656e6365c2b472657475726e5f70726f6d70745f746f6b656e73c2a973747265616d696e67c2b273747265616d696e67" +
      "5f696e74657276616c01ad646f5f6b765f68616e646f6666c282af6d656469615f63616368655f6b6579d940333164326332" +
      "6665383563633233663038323938333164383562313132306238666134653933383837643465303338313763343363643365" +
      "6365306430663636aa6d6f64616c697469657381a5696d61676501"
    const frame3 = "81a5696d61676591c410000102030405060708090a0b0c0d0e0f"
    const image = new Uint8Array(Array.from({ length: 16 }, (_, i) => i))
    // A single byte string and a one-element list are the same media.
    for (const data of [{ image }, { image: [image] }]) {
      const p = prepared(data)
      expect(hex(p.frame)).toBe(frame3)
      expect(p.descriptor).toEqual({
        media_cache_key: "31d2c2fe85cc23f0829831d85b1120b8fa4e93887d4e03817c43cd3ece0d0f66",
        modalities: { image: 1 }
      })
      const params = SamplingParams.make({ temperature: 0.7, top_p: 0.9, num_tokens_to_generate: 32 })
      if (Result.isFailure(params)) throw new Error(params.failure.message)
      expect(hex(Msgpack.encode([20, 9, params.success, p.descriptor]))).toBe(frame0)
    }
  })
})

describe("Media.prepare", () => {
  it("gives null when there is no media", () => {
    for (const data of [null, undefined, {}, { image: null }, { image: undefined, video: null }]) {
      const result = Media.prepare(data)
      expect(Result.isSuccess(result) && result.success).toBe(null)
    }
  })

  it("refuses audio and any other modality key, before looking at the items", () => {
    for (const key of ["audio", "images", "media_cache_key", "media_tokens_preexpanded", "Image"]) {
      const reason = failure({ [key]: new Uint8Array([1]) }).reason
      expect(reason._tag).toBe("UnsupportedModality")
      if (reason._tag === "UnsupportedModality") expect(reason.modality).toBe(key)
    }
    // A malformed image does not mask the unsupported key, and an absent value does not excuse it.
    expect(failure({ image: "not bytes", audio: new Uint8Array([1]) }).reason._tag).toBe("UnsupportedModality")
    expect(failure({ audio: undefined }).reason._tag).toBe("UnsupportedModality")
  })

  it("refuses malformed raw items", () => {
    expect(invalidWhy({ image: "abc" })).toContain("expected a Uint8Array")
    expect(invalidWhy({ image: 42 })).toContain("expected a Uint8Array")
    expect(invalidWhy({ image: [new Uint8Array([1]), "x"] })).toContain("item 1")
    expect(invalidWhy({ image: [new Uint8Array([1]), new Uint16Array([1])] })).toContain("item 1")
    expect(invalidWhy({ video: [] })).toContain("empty list")
    expect(invalidWhy({ image: new ArrayBuffer(4) })).toContain("expected a Uint8Array")
    expect(invalidWhy({ image: new Map() })).toContain("expected a Uint8Array")
  })

  it("refuses a multi_modal_data that is not a map", () => {
    for (const data of [[new Uint8Array([1])], new Uint8Array([1]), "image", 3]) {
      const reason = failure(data).reason
      expect(reason._tag).toBe("InvalidMedia")
      if (reason._tag === "InvalidMedia") expect(reason.modality).toBe("multi_modal_data")
    }
  })

  it("accepts a Buffer as bytes", () => {
    const p = prepared({ image: Buffer.from([1, 2, 3]) })
    expect(hex(p.frame)).toBe(hex(prepared({ image: [new Uint8Array([1, 2, 3])] }).frame))
  })

  it("sends both modalities together, image first, counting each", () => {
    const p = prepared({ video: new Uint8Array([9]), image: [new Uint8Array([1]), new Uint8Array([2])] })
    expect(p.descriptor.modalities).toEqual({ image: 2, video: 1 })
    expect(Object.keys(p.descriptor.modalities)).toEqual(["image", "video"])
    expect(Object.keys(Msgpack.decode(p.frame) as object)).toEqual(["image", "video"])
  })

  it("does not touch its input", () => {
    const data = { image: { imgs_sizes: [[16, 16]], imgs: [[[0.5, 1]]], num_img_embeddings_per_tile: 4 } }
    const snapshot = structuredClone(data)
    prepared(data)
    expect(data).toEqual(snapshot)
    expect(Object.keys(data.image)).toEqual(["imgs_sizes", "imgs", "num_img_embeddings_per_tile"])
  })

  it.prop(
    "a raw list: the frame decodes back to the bytes, the key is its SHA-256, the count its length",
    [Schema.NonEmptyArray(Schema.Uint8Array)],
    ([images]) => {
      const p = prepared({ image: images })
      const decoded = Schema.decodeUnknownSync(Media.MediaWire)(Msgpack.decode(p.frame))
      expect((decoded.image as ReadonlyArray<Uint8Array>).map(hex)).toEqual(images.map(hex))
      expect(p.cacheKey).toBe(createHash("sha256").update(p.frame).digest("hex"))
      expect(p.descriptor.modalities).toEqual({ image: images.length })
    }
  )
})

describe("Media.prepare: preprocessed tensor maps", () => {
  const patches = (n: number, d: number) => Array.from({ length: n }, (_, i) => Array.from({ length: d }, (_, j) => i + j / 8))

  it("counts dynamic-resolution images by the rows of imgs_sizes", () => {
    const p = prepared({ image: { imgs: [patches(6, 4)], imgs_sizes: [[32, 32], [16, 32]] } })
    expect(p.descriptor.modalities).toEqual({ image: 2 })
  })

  it("counts static-tiling images by num_tiles", () => {
    const p = prepared({
      image: { imgs: [patches(2, 3), patches(2, 3), patches(2, 3)], num_tiles: [1, 2], num_img_embeddings_per_tile: 256 }
    })
    expect(p.descriptor.modalities).toEqual({ image: 2 })
  })

  it("counts by the first dimension of imgs when it is the only tensor", () => {
    expect(prepared({ image: { imgs: [patches(1, 2), patches(1, 2), patches(1, 2)] } }).descriptor.modalities)
      .toEqual({ image: 3 })
  })

  it("counts videos by num_frames", () => {
    const p = prepared({
      video: {
        imgs: [patches(12, 4)],
        imgs_sizes: [[16, 16], [16, 16], [16, 16]],
        num_frames: [2, 1],
        video_fps: 2.5,
        video_frame_indices: [[0, 5], [0, 3]],
        num_img_embeddings_per_tile: 64
      }
    })
    expect(p.descriptor.modalities).toEqual({ video: 2 })
  })

  it("packs the tensor map with sorted keys, so the key does not depend on the input's key order", () => {
    const a = prepared({ image: { num_tiles: [1], imgs: [patches(1, 2)], num_img_embeddings_per_tile: 4 } })
    const b = prepared({ image: { num_img_embeddings_per_tile: 4, imgs: [patches(1, 2)], num_tiles: [1] } })
    expect(hex(a.frame)).toBe(hex(b.frame))
    expect(a.cacheKey).toBe(b.cacheKey)
    const decoded = Msgpack.decode(a.frame) as { image: Record<string, unknown> }
    expect(Object.keys(decoded.image)).toEqual(["imgs", "num_img_embeddings_per_tile", "num_tiles"])
  })

  it("accepts typed arrays as rows and sends them as numbers, the same bytes as plain arrays", () => {
    const plain = prepared({ image: { imgs: [[0.5, 1.5], [2, 3]], imgs_sizes: [[16, 16]] } })
    const typed = prepared({
      image: { imgs: [Float64Array.from([0.5, 1.5]), Float64Array.from([2, 3])], imgs_sizes: [Int32Array.from([16, 16])] }
    })
    expect(hex(typed.frame)).toBe(hex(plain.frame))
    expect(Result.isSuccess(Schema.decodeUnknownResult(Media.MediaWire)(Msgpack.decode(typed.frame)))).toBe(true)
  })

  it("leaves out tensors that are null or undefined, as the Python side skips None", () => {
    const a = prepared({ image: { imgs: [patches(1, 2)], imgs_sizes: null, num_tiles: undefined } })
    const b = prepared({ image: { imgs: [patches(1, 2)] } })
    expect(hex(a.frame)).toBe(hex(b.frame))
  })

  const bad: ReadonlyArray<readonly [string, Media.MultiModalData | Record<string, unknown>, string]> = [
    ["an empty map", { image: {} }, "at least one of imgs, imgs_sizes, num_tiles"],
    ["only nulls", { image: { imgs: null } }, "at least one of"],
    ["an unknown key", { image: { imgs: [1], pixels: [1] } }, "unknown key \"pixels\""],
    ["a video key on an image", { image: { imgs: [1], num_frames: [1] } }, "unknown key \"num_frames\""],
    ["a ragged tensor", { image: { imgs: [[1, 2], [3]] } }, "imgs[1]: has shape [1] where [0] has [2]"],
    ["a ragged leaf", { image: { imgs: [[1, 2], 3] } }, "imgs[1]"],
    ["a string element", { image: { imgs_sizes: [[16, "16"]] } }, "imgs_sizes[0][1]: a string"],
    ["a nested Uint8Array", { image: { imgs: [new Uint8Array([1])] } }, "sent as bytes"],
    ["a boolean", { image: { imgs: [true] } }, "imgs[0]: true"],
    ["a fractional per-tile count", { image: { imgs: [1], num_img_embeddings_per_tile: 1.5 } }, "non-negative integer"],
    ["a negative per-tile count", { image: { imgs: [1], num_img_embeddings_per_tile: -1 } }, "non-negative integer"],
    ["static tiling without per-tile count", { image: { imgs: [[1]], num_tiles: [1] } }, "num_img_embeddings_per_tile > 0"],
    ["an empty leading dimension", { image: { imgs_sizes: [] } }, "describes no image"],
    ["a video without num_frames", { video: { imgs: [[1]], imgs_sizes: [[1, 1]] } }, "missing num_frames"],
    ["a class instance", { image: new (class Tensors { imgs = [1] })() }, "expected a Uint8Array"]
  ]
  for (const [name, data, text] of bad) {
    it(`refuses ${name}`, () => {
      expect(invalidWhy(data)).toContain(text)
    })
  }

  it("refuses a tensor nested beyond reason", () => {
    let deep: unknown = 1
    for (let i = 0; i < 100; i++) deep = [deep]
    expect(invalidWhy({ image: { imgs: deep } })).toContain("nested deeper")
  })
})

describe("Media.MediaDescriptor", () => {
  const decode = Schema.decodeUnknownResult(Media.MediaDescriptor)
  it("decodes every prepared descriptor and refuses a malformed key", () => {
    for (const c of cases) expect(Result.isSuccess(decode(prepared(fromJson(c.media) as never).descriptor))).toBe(true)
    expect(Result.isFailure(decode({ media_cache_key: "ABC", modalities: { image: 1 } }))).toBe(true)
    expect(Result.isFailure(decode({ media_cache_key: "a".repeat(64), modalities: { image: 0 } }))).toBe(true)
  })
})

describe("Media.MediaWire", () => {
  it("decodes a tensor map frame and refuses a ragged-type value", () => {
    const p = prepared({ image: { imgs: [[0.25, 1]], num_tiles: [1], num_img_embeddings_per_tile: 16 } })
    const decoded = Schema.decodeUnknownSync(Media.MediaWire)(Msgpack.decode(p.frame))
    expect(decoded.image).toEqual({ imgs: [[0.25, 1]], num_tiles: [1], num_img_embeddings_per_tile: 16 })
    expect(Result.isFailure(Schema.decodeUnknownResult(Media.MediaWire)({ image: { imgs: ["x"] } }))).toBe(true)
  })

  it("prepares every raw list fast-check can think of", () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array(), { minLength: 1, maxLength: 4 }), (images) => {
        const p = prepared({ video: images })
        return p.descriptor.modalities.video === images.length && Media.mediaCacheKey(p.frame) === p.cacheKey
      })
    )
  })
})
