/**
 * A msgpack writer for the engines' hot path: it writes what Python's packer writes (integers
 * in their smallest form, floats as float64, strings as str) and caches encoded map keys, which
 * the general encoder spends most of its time on for the ~50-key finished request (callers
 * encode their keys once, with {@link encodeKeys}). Anything beyond plain numbers, strings and
 * integer lists goes through the protocol's encoder.
 *
 * @since 0.1.0
 * @internal
 */
import { Msgpack } from "@mcore-effect/protocol"

const TWO_32 = 0x1_0000_0000

/** Encodes a fixed set of map keys once: `keys.generated_tokens` is the bytes of that key. */
export const encodeKeys = <const K extends string>(names: ReadonlyArray<K>): { readonly [N in K]: Uint8Array } =>
  Object.freeze(Object.fromEntries(names.map((name) => [name, Msgpack.encode(name)]))) as { readonly [N in K]: Uint8Array }

/**
 * @internal
 */
export class MsgpackWriter {
  private buf: Uint8Array
  private view: DataView
  private pos = 0

  constructor(size = 1024) {
    this.buf = new Uint8Array(size)
    this.view = new DataView(this.buf.buffer)
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.pos + n) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(0, this.pos))
    this.buf = next
    this.view = new DataView(next.buffer)
  }

  /** Empties the writer (after a failed write, say). */
  reset(): this {
    this.pos = 0
    return this
  }

  /** The bytes written so far (a copy), and the writer emptied for reuse. */
  finish(): Uint8Array {
    // allocUnsafe takes small buffers from Node's pool: far cheaper than a fresh ArrayBuffer each.
    const out = Buffer.allocUnsafe(this.pos)
    out.set(this.buf.subarray(0, this.pos))
    this.pos = 0
    return out
  }

  raw(bytes: Uint8Array): this {
    this.ensure(bytes.length)
    this.buf.set(bytes, this.pos)
    this.pos += bytes.length
    return this
  }

  nil(): this {
    this.ensure(1)
    this.buf[this.pos++] = 0xc0
    return this
  }

  bool(v: boolean): this {
    this.ensure(1)
    this.buf[this.pos++] = v ? 0xc3 : 0xc2
    return this
  }

  /** A safe integer, in the smallest form. */
  int(v: number): this {
    this.ensure(9)
    const b = this.buf
    if (v >= 0) {
      if (v < 0x80) b[this.pos++] = v
      else if (v < 0x100) {
        b[this.pos++] = 0xcc
        b[this.pos++] = v
      } else if (v < 0x10000) {
        b[this.pos++] = 0xcd
        this.view.setUint16(this.pos, v)
        this.pos += 2
      } else if (v < TWO_32) {
        b[this.pos++] = 0xce
        this.view.setUint32(this.pos, v)
        this.pos += 4
      } else {
        b[this.pos++] = 0xcf
        this.view.setUint32(this.pos, Math.floor(v / TWO_32))
        this.view.setUint32(this.pos + 4, v >>> 0)
        this.pos += 8
      }
    } else if (v >= -32) b[this.pos++] = v & 0xff
    else if (v >= -0x80) {
      b[this.pos++] = 0xd0
      this.view.setInt8(this.pos++, v)
    } else if (v >= -0x8000) {
      b[this.pos++] = 0xd1
      this.view.setInt16(this.pos, v)
      this.pos += 2
    } else if (v >= -0x8000_0000) {
      b[this.pos++] = 0xd2
      this.view.setInt32(this.pos, v)
      this.pos += 4
    } else {
      b[this.pos++] = 0xd3
      this.view.setBigInt64(this.pos, BigInt(v))
      this.pos += 8
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

  str(s: string): this {
    return this.raw(Msgpack.encode(s))
  }

  arrayHeader(n: number): this {
    this.ensure(5)
    if (n < 16) this.buf[this.pos++] = 0x90 | n
    else if (n < 0x10000) {
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

  mapHeader(n: number): this {
    this.ensure(5)
    if (n < 16) this.buf[this.pos++] = 0x80 | n
    else if (n < 0x10000) {
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

  ints(values: ReadonlyArray<number>): this {
    this.arrayHeader(values.length)
    for (let i = 0; i < values.length; i++) this.int(values[i]!)
    return this
  }

  floats(values: ReadonlyArray<number>): this {
    this.arrayHeader(values.length)
    for (let i = 0; i < values.length; i++) this.float(values[i]!)
    return this
  }

  /** Anything else, through the protocol's encoder. */
  value(v: unknown): this {
    return this.raw(Msgpack.encode(v))
  }
}
