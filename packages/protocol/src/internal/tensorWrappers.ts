/**
 * Python's tensor wrappers in a reply map: `["tensor", x]` (a nested list, or the binary form
 * `{data, dtype, shape}` decoded here) and `["ndarray", {data, dtype}]`, unwrapped as Python's
 * own deserializer unwraps every key.
 *
 * @since 0.2.0
 * @internal
 */
import { isPlainObject } from "./values.ts"

type Reader = (view: DataView, offset: number) => unknown

const halfToFloat = (h: number): number => {
  const sign = h & 0x8000 ? -1 : 1
  const exponent = (h >> 10) & 0x1f
  const fraction = h & 0x3ff
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024)
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : Number.NaN
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024)
}

const bf16 = new DataView(new ArrayBuffer(4))

/** torch dtypes of the binary tensor form: element size and a little-endian reader. */
const DTYPES: Record<string, readonly [number, Reader]> = {
  float32: [4, (v, o) => v.getFloat32(o, true)],
  float64: [8, (v, o) => v.getFloat64(o, true)],
  float16: [2, (v, o) => halfToFloat(v.getUint16(o, true))],
  bfloat16: [2, (v, o) => {
    bf16.setUint32(0, v.getUint16(o, true) << 16)
    return bf16.getFloat32(0)
  }],
  int64: [8, (v, o) => {
    const n = v.getBigInt64(o, true)
    return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n
  }],
  int32: [4, (v, o) => v.getInt32(o, true)],
  int16: [2, (v, o) => v.getInt16(o, true)],
  int8: [1, (v, o) => v.getInt8(o)],
  uint8: [1, (v, o) => v.getUint8(o)],
  bool: [1, (v, o) => v.getUint8(o) !== 0]
}

/**
 * Newer engines send a tensor as `{dtype, shape, data}` with raw little-endian bytes; this turns
 * it into the nested list an older engine would have sent. `undefined` when it is not that form.
 */
const fromBinaryTensor = (t: Record<string, unknown>): unknown => {
  const { data, dtype, shape } = t
  if (!(data instanceof Uint8Array) || typeof dtype !== "string" || !Array.isArray(shape)) return undefined
  const spec = DTYPES[dtype.startsWith("torch.") ? dtype.slice(6) : dtype]
  if (spec === undefined || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) return undefined
  const [size, read] = spec
  const total = (shape as Array<number>).reduce((a, b) => a * b, 1)
  if (total * size !== data.byteLength) return undefined
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  let offset = 0
  const build = (dim: number): unknown => {
    if (dim === shape.length) {
      const value = read(view, offset)
      offset += size
      return value
    }
    const n = shape[dim] as number
    const out = new Array<unknown>(n)
    for (let i = 0; i < n; i++) out[i] = build(dim + 1)
    return out
  }
  return build(0)
}

/**
 * `["tensor", x]` → x (a nested list, or the binary form decoded to one); `["ndarray", {data, dtype}]`
 * → data. Anything else is returned as it is.
 */
export const unwrap = (value: unknown): unknown => {
  if (!Array.isArray(value) || value.length !== 2) return value
  const [tag, inner] = value
  if (tag === "tensor") {
    if (isPlainObject(inner)) {
      const decoded = fromBinaryTensor(inner)
      return decoded === undefined ? value : decoded
    }
    return inner
  }
  if (tag === "ndarray" && isPlainObject(inner) && "data" in inner) return inner.data
  return value
}
