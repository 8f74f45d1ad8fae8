/**
 * One media item checked and shaped for frame 3: raw bytes or a list of them, or a preprocessed
 * tensor map (rectangular, numeric, within Python's nesting limit, with its item count read off
 * the tensors as the engine reads it).
 *
 * @since 0.2.0
 * @internal
 */
import * as Result from "effect/Result"
import type * as Msgpack from "../Msgpack.ts"
import { InvalidMedia, type ProtocolError, protocolError } from "../ProtocolError.ts"
import { describeValue, isPlainObject } from "./values.ts"
export type Modality = "image" | "video"

const TENSOR_KEYS: Record<Modality, ReadonlyArray<string>> = {
  image: ["imgs", "imgs_sizes", "num_tiles"],
  video: ["imgs", "imgs_sizes", "num_frames", "video_frame_indices", "video_fps"]
}

/** Python's packer refuses deeper nesting; refusing here gives the caller a clearer reason. */
const MAX_TENSOR_DEPTH = 64

export const invalid = (modality: string, why: string): Result.Result<never, ProtocolError> =>
  Result.fail(protocolError(new InvalidMedia({ modality, why })))

const isTensorRow = (value: ArrayBufferView): boolean =>
  value instanceof Float32Array || value instanceof Float64Array || value instanceof Int32Array ||
  value instanceof Uint32Array || value instanceof Int16Array || value instanceof Uint16Array ||
  value instanceof Int8Array || value instanceof Uint8ClampedArray

/** Error text with the path of the offending element; built only when something is wrong. */
class TensorIssue {
  constructor(readonly path: string, readonly why: string) {}
}

/** The tensor's shape (`[]` for a scalar), or what is wrong with it. Touches every element once. */
const shapeOf = (t: unknown, depth: number): ReadonlyArray<number> | TensorIssue => {
  if (typeof t === "number") return []
  if (Array.isArray(t)) {
    if (depth >= MAX_TENSOR_DEPTH) return new TensorIssue("", `nested deeper than ${MAX_TENSOR_DEPTH} levels`)
    const n = t.length
    if (n === 0) return [0]
    const first = shapeOf(t[0], depth + 1)
    if (first instanceof TensorIssue) return new TensorIssue(`[0]${first.path}`, first.why)
    if (first.length === 0) {
      // The innermost dimension: a tight loop over numbers, no recursion.
      for (let i = 1; i < n; i++) {
        if (typeof t[i] !== "number") {
          return new TensorIssue(`[${i}]`, `${describeValue(t[i], 0)} where a number was expected (ragged or not numeric)`)
        }
      }
      return [n]
    }
    for (let i = 1; i < n; i++) {
      const s = shapeOf(t[i], depth + 1)
      if (s instanceof TensorIssue) return new TensorIssue(`[${i}]${s.path}`, s.why)
      if (!sameShape(s, first)) {
        return new TensorIssue(`[${i}]`, `has shape [${s.join(", ")}] where [0] has [${first.join(", ")}] (ragged)`)
      }
    }
    return [n, ...first]
  }
  if (ArrayBuffer.isView(t)) {
    if (isTensorRow(t)) return [(t as Msgpack.NumberTypedArray).length]
    return new TensorIssue(
      "",
      t instanceof Uint8Array
        ? "a Uint8Array would be sent as bytes, not numbers; use an array or another typed array"
        : `a ${t.constructor.name} is not a tensor row (use an array or a numeric typed array)`
    )
  }
  return new TensorIssue("", `${describeValue(t, 0)} is not a number or an array of numbers`)
}

const sameShape = (a: ReadonlyArray<number>, b: ReadonlyArray<number>): boolean => {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

export interface Item {
  readonly wire: unknown
  readonly count: number
}

const rawItem = (modality: Modality, value: unknown): Result.Result<Item, ProtocolError> | undefined => {
  if (value instanceof Uint8Array) return Result.succeed({ wire: [value], count: 1 })
  if (!Array.isArray(value)) return undefined
  if (value.length === 0) {
    return invalid(modality, `an empty list of ${modality}s (leave the key out, or pass null, for no ${modality})`)
  }
  for (let i = 0; i < value.length; i++) {
    if (!(value[i] instanceof Uint8Array)) {
      return invalid(modality, `a raw list holds only Uint8Array items; item ${i} is ${describeValue(value[i])}`)
    }
  }
  return Result.succeed({ wire: value, count: value.length })
}

/** The first dimension of a tensor already known to be valid: how many items it describes. */
const leadingDim = (shape: ReadonlyArray<number>): number => (shape.length === 0 ? 1 : shape[0]!)

const tensorItem = (modality: Modality, value: Record<string, unknown>): Result.Result<Item, ProtocolError> => {
  const tensorKeys = TENSOR_KEYS[modality]
  const wire: Record<string, unknown> = {}
  const shapes: Record<string, ReadonlyArray<number>> = {}
  for (const key of Object.keys(value)) {
    const v = value[key]
    // Absent, as the Python side skips a None tensor.
    if (v === undefined || v === null) continue
    if (key === "num_img_embeddings_per_tile") {
      if (!Number.isSafeInteger(v) || (v as number) < 0) {
        return invalid(modality, `num_img_embeddings_per_tile must be a non-negative integer, got ${describeValue(v)}`)
      }
      wire[key] = v
      continue
    }
    if (!tensorKeys.includes(key)) {
      return invalid(
        modality,
        `unknown key "${key}" in a preprocessed ${modality} map (expected ${
          [...tensorKeys, "num_img_embeddings_per_tile"].join(", ")
        })`
      )
    }
    const shape = shapeOf(v, 0)
    if (shape instanceof TensorIssue) return invalid(modality, `${key}${shape.path}: ${shape.why}`)
    shapes[key] = shape
    wire[key] = v
  }

  let count: number
  if (modality === "image") {
    if (shapes.imgs === undefined && shapes.imgs_sizes === undefined && shapes.num_tiles === undefined) {
      return invalid(modality, "a preprocessed image map needs at least one of imgs, imgs_sizes, num_tiles")
    }
    const perTile = wire.num_img_embeddings_per_tile as number | undefined
    if (shapes.num_tiles !== undefined && shapes.imgs_sizes === undefined && !(perTile !== undefined && perTile > 0)) {
      return invalid(modality, "static tiling (num_tiles without imgs_sizes) needs num_img_embeddings_per_tile > 0")
    }
    // One num_tiles entry, or one imgs_sizes row, per image; otherwise each leading slice of imgs is one.
    count = leadingDim(shapes.num_tiles ?? shapes.imgs_sizes ?? shapes.imgs!)
  } else {
    const missing = ["imgs", "imgs_sizes", "num_frames"].filter((k) => shapes[k] === undefined)
    if (missing.length > 0) {
      return invalid(modality, `a preprocessed video map needs imgs, imgs_sizes and num_frames; missing ${missing.join(", ")}`)
    }
    // One num_frames entry per video.
    count = leadingDim(shapes.num_frames!)
  }
  if (count < 1) return invalid(modality, `the preprocessed map describes no ${modality} (an empty leading dimension)`)
  return Result.succeed({ wire, count })
}

export const item = (modality: Modality, value: unknown): Result.Result<Item, ProtocolError> => {
  const raw = rawItem(modality, value)
  if (raw !== undefined) return raw
  if (isPlainObject(value)) return tensorItem(modality, value)
  return invalid(
    modality,
    `expected a Uint8Array, a list of Uint8Array, or a preprocessed tensor map; got ${describeValue(value)}`
  )
}
