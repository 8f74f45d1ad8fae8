/**
 * The byte-level half of `Msgpack.Writer`: a growing buffer and every msgpack form written in
 * Python's smallest encoding (integers, floats, strings, bin, headers), plus the token-id fast
 * paths. `msgpackWriter.ts` builds JavaScript values (arrays, maps, objects, typed arrays) on it.
 *
 * @since 0.2.0
 * @internal
 */
import { NotEncodableException } from "./msgpackValues.ts"

/**
 * Size of `Msgpack.encode`'s pooled buffers: many frames each, so one allocation serves many
 * requests. A pooled writer that outgrows one starts the next at this size.
 *
 * @internal
 */
export const POOL_SIZE = 64 * 1024

/** Writes `x`, an integer in [0, 2^32), in its smallest msgpack form at `pos`; returns the end. */
const writeUint32 = (buf: Uint8Array, pos: number, x: number): number => {
  if (x < 0x80) {
    buf[pos] = x
    return pos + 1
  }
  if (x < 0x100) {
    buf[pos] = 0xcc
    buf[pos + 1] = x
    return pos + 2
  }
  if (x < 0x10000) {
    buf[pos] = 0xcd
    buf[pos + 1] = x >>> 8
    buf[pos + 2] = x & 0xff
    return pos + 3
  }
  buf[pos] = 0xce
  buf[pos + 1] = x >>> 24
  buf[pos + 2] = (x >>> 16) & 0xff
  buf[pos + 3] = (x >>> 8) & 0xff
  buf[pos + 4] = x & 0xff
  return pos + 5
}

/** `Number.MAX_SAFE_INTEGER`, as a constant the hot loops compare against. */
const MAX_SAFE = 9007199254740991

const TWO_32 = 0x1_0000_0000
const UINT64_MAX = 0xffff_ffff_ffff_ffffn
const INT64_MIN = -0x8000_0000_0000_0000n

/**
 * The buffer and the scalar forms behind `Msgpack.Writer`, which extends it.
 *
 * @internal
 */
export class ScalarWriter {
  protected buf: Buffer
  protected view: DataView
  protected pos = 0
  /** Where the value being written starts: what {@link ScalarWriter.ensure} carries over to a new buffer. */
  protected start = 0

  constructor(initialSize?: number) {
    this.buf = Buffer.allocUnsafe(initialSize ?? 256)
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength)
  }

  /** Empties the writer (after a write that threw, say); the buffer is kept. */
  reset(): this {
    this.pos = this.start
    return this
  }

  /** The bytes written so far, copied, and the writer emptied for reuse. */
  finish(): Uint8Array {
    // allocUnsafe takes small buffers from Node's pool: far cheaper than a fresh ArrayBuffer each.
    const out = Buffer.allocUnsafe(this.pos)
    this.buf.copy(out, 0, 0, this.pos)
    this.pos = 0
    return out
  }

  /** The bytes written so far, not copied: valid until the writer is next written to or reset. */
  written(): Uint8Array {
    return this.buf.subarray(0, this.pos)
  }

  /** Bytes that are already msgpack (an encoded key or value), written verbatim. */
  raw(bytes: Uint8Array): this {
    const len = bytes.byteLength
    this.ensure(len)
    this.buf.set(bytes, this.pos)
    this.pos += len
    return this
  }

  nil(): this {
    return this.byte(0xc0)
  }

  bool(v: boolean): this {
    return this.byte(v ? 0xc3 : 0xc2)
  }

  /** A number as `Msgpack.encode` writes it: safe whole numbers as integers in their smallest form, others as float64. */
  number(v: number): this {
    // Whole numbers go out as integers (Python reads ints where it expects floats); -0 stays a float.
    // Only safe integers: beyond 2^53 a number is a float (an integer that large is a bigint), and
    // as an integer it would come back as a bigint where a number was sent (and expected).
    if (Number.isSafeInteger(v) && !Object.is(v, -0)) {
      if (v >= 0) this.uint(v)
      else this.negint(v)
    } else {
      this.float(v)
    }
    return this
  }

  /** A Python float: always float64, whole or not. */
  float(v: number): this {
    this.ensure(9)
    this.buf[this.pos++] = 0xcb
    this.view.setFloat64(this.pos, v)
    this.pos += 8
    return this
  }

  /** An array of numbers, each as {@link ScalarWriter.number} writes it. */
  numbers(values: ArrayLike<number>): this {
    const n = values.length
    this.arrayHeader(n)
    for (let i = 0; i < n; i++) this.number(values[i]!)
    return this
  }

  /** An array of Python floats, each as {@link ScalarWriter.float} writes it. */
  floats(values: ArrayLike<number>): this {
    const n = values.length
    this.arrayHeader(n)
    for (let i = 0; i < n; i++) this.float(values[i]!)
    return this
  }

  string(s: string): this {
    // Short ASCII strings (map keys, mostly) in a plain loop: cheaper than a call into Buffer.write.
    const n = s.length
    if (n < 64) {
      const header = n < 32 ? 1 : 2
      this.ensure(header + n)
      const buf = this.buf
      let pos = this.pos + header
      let i = 0
      for (; i < n; i++) {
        const c = s.charCodeAt(i)
        if (c >= 0x80) break
        buf[pos++] = c
      }
      if (i === n) {
        if (header === 1) {
          buf[this.pos] = 0xa0 | n
        } else {
          buf[this.pos] = 0xd9
          buf[this.pos + 1] = n
        }
        this.pos = pos
        return this
      }
    }
    const max = s.length * 3
    // Reserve the header for the worst case, then move the bytes back if a shorter one fits.
    const reserve = max < 32 ? 1 : max < 0x100 ? 2 : max < 0x10000 ? 3 : 5
    this.ensure(reserve + max)
    const start = this.pos + reserve
    const len = this.buf.write(s, start, "utf8")
    const header = len < 32 ? 1 : len < 0x100 ? 2 : len < 0x10000 ? 3 : 5
    if (header < reserve) this.buf.copyWithin(this.pos + header, start, start + len)
    const buf = this.buf
    if (header === 1) {
      buf[this.pos] = 0xa0 | len
    } else if (header === 2) {
      buf[this.pos] = 0xd9
      buf[this.pos + 1] = len
    } else if (header === 3) {
      buf[this.pos] = 0xda
      this.view.setUint16(this.pos + 1, len)
    } else {
      buf[this.pos] = 0xdb
      this.view.setUint32(this.pos + 1, len)
    }
    this.pos += header + len
    return this
  }

  /** Bytes as msgpack bin (what `Msgpack.encode` writes for a `Uint8Array`). */
  bin(b: Uint8Array): this {
    const len = b.byteLength
    this.ensure(5 + len)
    if (len < 0x100) {
      this.buf[this.pos++] = 0xc4
      this.buf[this.pos++] = len
    } else if (len < 0x10000) {
      this.buf[this.pos++] = 0xc5
      this.view.setUint16(this.pos, len)
      this.pos += 2
    } else {
      this.buf[this.pos++] = 0xc6
      this.view.setUint32(this.pos, len)
      this.pos += 4
    }
    this.buf.set(b, this.pos)
    this.pos += len
    return this
  }

  /** The header of an array of `n` elements; the elements follow. */
  arrayHeader(n: number): this {
    this.ensure(5)
    if (n < 16) {
      this.buf[this.pos++] = 0x90 | n
    } else if (n < 0x10000) {
      this.buf[this.pos++] = 0xdc
      this.view.setUint16(this.pos, n)
      this.pos += 2
    } else {
      this.buf[this.pos++] = 0xdd
      this.view.setUint32(this.pos, n)
      this.pos += 4
    }
    return this
  }

  /** The header of a map of `n` entries; the keys and values follow, key first. */
  mapHeader(n: number): this {
    this.ensure(5)
    if (n < 16) {
      this.buf[this.pos++] = 0x80 | n
    } else if (n < 0x10000) {
      this.buf[this.pos++] = 0xde
      this.view.setUint16(this.pos, n)
      this.pos += 2
    } else {
      this.buf[this.pos++] = 0xdf
      this.view.setUint32(this.pos, n)
      this.pos += 4
    }
    return this
  }

  protected ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    // Only the value in progress moves: what a pool handed out before it stays where it is.
    const used = this.pos - this.start
    let size = this.start === 0 ? this.buf.length * 2 : POOL_SIZE
    while (size < used + n) size *= 2
    const next = this.start === 0 ? Buffer.allocUnsafe(size) : Buffer.allocUnsafeSlow(size)
    this.buf.copy(next, 0, this.start, this.pos)
    this.buf = next
    this.view = new DataView(next.buffer, next.byteOffset, next.byteLength)
    this.pos = used
    this.start = 0
  }

  protected byte(b: number): this {
    this.ensure(1)
    this.buf[this.pos++] = b
    return this
  }

  /** A non-negative integer in the smallest form, as Python writes it. */
  protected uint(v: number): void {
    this.ensure(9)
    const buf = this.buf
    if (v < 0x80) {
      buf[this.pos++] = v
    } else if (v < 0x100) {
      buf[this.pos++] = 0xcc
      buf[this.pos++] = v
    } else if (v < 0x10000) {
      buf[this.pos++] = 0xcd
      this.view.setUint16(this.pos, v)
      this.pos += 2
    } else if (v < TWO_32) {
      buf[this.pos++] = 0xce
      this.view.setUint32(this.pos, v)
      this.pos += 4
    } else {
      buf[this.pos++] = 0xcf
      this.view.setUint32(this.pos, Math.floor(v / TWO_32))
      this.view.setUint32(this.pos + 4, v >>> 0)
      this.pos += 8
    }
  }

  /** A negative integer in the smallest form. */
  protected negint(v: number): void {
    this.ensure(9)
    const buf = this.buf
    if (v >= -32) {
      buf[this.pos++] = v & 0xff
    } else if (v >= -0x80) {
      buf[this.pos++] = 0xd0
      this.view.setInt8(this.pos++, v)
    } else if (v >= -0x8000) {
      buf[this.pos++] = 0xd1
      this.view.setInt16(this.pos, v)
      this.pos += 2
    } else if (v >= -0x8000_0000) {
      buf[this.pos++] = 0xd2
      this.view.setInt32(this.pos, v)
      this.pos += 4
    } else {
      buf[this.pos++] = 0xd3
      this.view.setBigInt64(this.pos, BigInt(v))
      this.pos += 8
    }
  }

  protected bigint(v: bigint, path: string): void {
    if (v >= 0n) {
      if (v > UINT64_MAX) throw new NotEncodableException(path, `integer ${v} does not fit in uint64`)
      if (v <= BigInt(Number.MAX_SAFE_INTEGER)) return this.uint(Number(v))
      this.ensure(9)
      this.buf[this.pos++] = 0xcf
      this.view.setBigUint64(this.pos, v)
      this.pos += 8
    } else {
      if (v < INT64_MIN) throw new NotEncodableException(path, `integer ${v} does not fit in int64`)
      if (v >= BigInt(Number.MIN_SAFE_INTEGER)) return this.negint(Number(v))
      this.ensure(9)
      this.buf[this.pos++] = 0xd3
      this.view.setBigInt64(this.pos, v)
      this.pos += 8
    }
  }

  /**
   * Token ids as a msgpack int array, checked as they are written (the prompt's validation and
   * encoding in one pass): returns the index of the first element that is not a non-negative
   * safe integer, or -1 when every one was written. The bytes are `Msgpack.Writer.value`'s.
   */
  tokenIds(values: ReadonlyArray<unknown>): number {
    const n = values.length
    this.arrayHeader(n)
    for (let i = this.uint32s(values); i < n; i++) {
      const x = values[i]
      // Prompt.validate's test: integers from 0 to 2^53 - 1 (-0 included, written as the float).
      if (!(typeof x === "number" && x >= 0 && x <= MAX_SAFE && Math.floor(x) === x)) return i
      this.number(x)
    }
    return -1
  }

  /**
   * Writes the leading elements of `values` that are integers in [0, 2^32) (token ids: most
   * arrays on the wire), in a loop with no per-element call; returns the index of the first
   * element it left for the general path. Bytes are what {@link ScalarWriter.number} writes.
   */
  protected uint32s(values: ReadonlyArray<unknown>): number {
    const n = values.length
    if (n === 0 || typeof values[0] !== "number") return 0
    this.ensure(5 * n)
    const buf = this.buf
    let pos = this.pos
    let i = 0
    for (; i < n; i++) {
      const x = values[i] as number
      // `x >>> 0 === x` holds for integers in [0, 2^32) and for -0, which is a float.
      if (typeof x !== "number" || x >>> 0 !== x || (x === 0 && 1 / x < 0)) break
      pos = writeUint32(buf, pos, x)
    }
    this.pos = pos
    return i
  }

  /**
   * {@link uint32s} for a typed array's elements: a loop of its own, so that the one over plain
   * arrays (every prompt's token ids) reads one kind of array only (monomorphic; measured:
   * PERFORMANCE.md#plain-arrays-and-typed-arrays-in-separate-loops).
   */
  protected uint32sOfTyped(values: ArrayLike<number>): number {
    const n = values.length
    this.ensure(5 * n)
    const buf = this.buf
    let pos = this.pos
    let i = 0
    for (; i < n; i++) {
      const x = values[i]!
      if (x >>> 0 !== x || (x === 0 && 1 / x < 0)) break
      pos = writeUint32(buf, pos, x)
    }
    this.pos = pos
    return i
  }
}
