/**
 * msgpack as the Python peers write and read it.
 *
 * The coordinator and engines are Python processes using `msgpack.packb(x, use_bin_type=True)`
 * and `unpackb(b, raw=False)`. Encoding is our own, because msgpackr's encoder breaks those
 * peers in several ways (whole numbers above 2^32 as float64, positive bigints as int64,
 * `undefined` as an extension, token typed arrays as bin). Decoding gives what msgpackr gives,
 * with records off and 64-bit integers as `bigint` only when they do not fit a number: a reader
 * of our own takes what Python writes (about twice as fast on a reply's token arrays and keys)
 * and hands anything else (extension types) to msgpackr. Map keys are strings only, each once
 * per map, as Python's `unpackb` requires (`strict_map_key`), where msgpackr would turn `1` into
 * `"1"` and let a later key overwrite an earlier one.
 *
 * @since 0.1.0
 */
import { Unpackr } from "msgpackr"
import * as Reader from "./internal/msgpackReader.ts"
import { POOL_SIZE } from "./internal/msgpackScalarWriter.ts"
import { type EncodeOptions, Writer } from "./internal/msgpackWriter.ts"
import { Raw } from "./internal/msgpackValues.ts"

export {
  Float,
  FloatFields,
  NotEncodableException,
  type NumberTypedArray,
  Raw,
  remember,
  rememberedBytes
} from "./internal/msgpackValues.ts"
export { type EncodeOptions, Writer, type WriterOptions } from "./internal/msgpackWriter.ts"

/**
 * Encodes one value the way Python's `msgpack.packb(value, use_bin_type=True)` does: integers in
 * their smallest form (bigints and whole numbers above 2^32 as uint64 / int64), other numbers
 * (fractions, and whole numbers beyond 2^53, which a `number` holds only as floats) as float64, `Uint8Array` as bin, other typed arrays as arrays of ints, `undefined` as nil.
 *
 * @throws {@link NotEncodableException} for values a Python peer cannot read.
 *
 * @example
 * ```ts
 * import { Msgpack } from "@mcore-effect/protocol"
 *
 * Msgpack.encode([20, 2n ** 60n]) // 92 14 cf 10 00 00 00 00 00 00 00
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const encode = (value: unknown, options?: EncodeOptions): Uint8Array => {
  if (value instanceof Raw) return value.bytes
  if (options?.sortKeys === true || pool.busy) return new Writer(options).value(value).written()
  return pool.encode(value)
}

/**
 * Encodes token ids as {@link encode} does, checking each as it is written: the bytes, or the
 * index of the first element that is not a non-negative safe integer (then nothing is kept).
 * One pass where validating and then encoding a prompt took two (measured: PERFORMANCE.md#token-ids-validated-while-written).
 *
 * @example
 * ```ts
 * import { Msgpack } from "@mcore-effect/protocol"
 *
 * Msgpack.encodeTokenIds([1, 2, 300]) // 93 01 02 cd 01 2c
 * Msgpack.encodeTokenIds([1, -2]) // 1: the index of -2
 * ```
 *
 * @category encoding
 * @since 0.1.0
 */
export const encodeTokenIds = (ids: ReadonlyArray<unknown>): Uint8Array | number =>
  pool.busy ? tokenIdsWith(new Writer(), ids) : pool.encodeTokenIds(ids)

const tokenIdsWith = (writer: Writer, ids: ReadonlyArray<unknown>): Uint8Array | number => {
  const bad = writer.tokenIds(ids)
  return bad === -1 ? writer.written() : bad
}

/**
 * The buffer {@link encode} writes into: values are written one after another into a 64 KiB
 * buffer and handed out as views of it, and a new buffer is started when one is full (the value
 * in progress moves over; what was handed out stays). A fresh writer per value cost more than the
 * encoding itself (PERFORMANCE.md#pooled-encoder-buffers).
 * A view keeps its whole buffer alive, which is what msgpackr's `pack` does too.
 */
class Pool extends Writer {
  /** Set while encoding: a getter that encodes (re-entry) gets a writer of its own. */
  busy = false

  constructor() {
    super({ initialSize: POOL_SIZE })
  }

  encode(value: unknown): Uint8Array {
    this.busy = true
    this.start = this.pos
    try {
      this.value(value)
    } catch (cause) {
      this.pos = this.start
      throw cause
    } finally {
      this.busy = false
    }
    const out = this.buf.subarray(this.start, this.pos)
    this.start = this.pos
    return out
  }

  encodeTokenIds(ids: ReadonlyArray<unknown>): Uint8Array | number {
    this.busy = true
    this.start = this.pos
    let bad: number
    try {
      bad = this.tokenIds(ids)
    } catch (cause) {
      this.pos = this.start
      throw cause
    } finally {
      this.busy = false
    }
    if (bad !== -1) {
      this.pos = this.start
      return bad
    }
    const out = this.buf.subarray(this.start, this.pos)
    this.start = this.pos
    return out
  }
}

const pool = new Pool()

/**
 * Thrown by {@link decode} for bytes that are not exactly one msgpack value.
 *
 * @category errors
 * @since 0.1.0
 */
export class NotDecodableException extends globalThis.Error {
  override readonly name = "NotDecodableException"
}

const unpackr = new Unpackr({
  useRecords: false,
  mapsAsObjects: true,
  // Decode uint64 / int64 as number when exact, bigint otherwise (block hashes).
  int64AsType: "auto" as "bigint"
})

/**
 * Decodes exactly one msgpack value, as Python's `unpackb(bytes, raw=False)` would: trailing
 * bytes are an error, integers beyond 2^53 come back as `bigint`, bin as `Uint8Array`, maps as
 * plain objects. A map key must be a str (Python's `strict_map_key`; bytes keys, which Python
 * also allows, have no place in a JavaScript object either), and must not repeat in its map (no
 * Python dict packs one twice; `__proto__` is read as `__proto_`, so that pair repeats too).
 * The never-used byte 0xc1 is refused, as Python refuses it.
 *
 * @throws {@link NotDecodableException} for anything that is not one well-formed value, and for
 * a map with a key that is not a string or a key it holds twice.
 *
 * @example
 * ```ts
 * import { Msgpack } from "@mcore-effect/protocol"
 *
 * Msgpack.decode(Msgpack.encode({ a: [1, "x"] })) // { a: [1, "x"] }
 * ```
 *
 * @category decoding
 * @since 0.1.0
 */
export const decode = (bytes: Uint8Array): unknown => {
  if (bytes.byteLength === 0) throw new NotDecodableException("empty frame")
  try {
    return Reader.read(bytes)
  } catch (cause) {
    if (cause instanceof Reader.Malformed) throw new NotDecodableException(cause.message)
    if (!(cause instanceof Reader.Unsupported)) throw new NotDecodableException(String(cause))
  }
  try {
    Reader.checkKeys(bytes)
  } catch (cause) {
    throw new NotDecodableException(cause instanceof globalThis.Error ? cause.message : String(cause))
  }
  try {
    // msgpackr's `unpack` refuses trailing bytes ("Data read, but end of buffer not reached").
    return unpackr.unpack(bytes)
  } catch (cause) {
    throw new NotDecodableException(cause instanceof globalThis.Error ? cause.message : String(cause))
  }
}
