/**
 * The msgpack writer behind `Msgpack.encode`: every JavaScript value written as Python's
 * `msgpack.packb(value, use_bin_type=True)` writes it, piece by piece for hot paths. Public
 * through `Msgpack`, which re-exports it.
 *
 * @since 0.1.0
 * @internal
 */
import {
  Float,
  FloatFields,
  NotEncodableException,
  type NumericTypedArray,
  Raw
} from "./msgpackValues.ts"
import { ScalarWriter } from "./msgpackScalarWriter.ts"

const compareKeys = (a: unknown, b: unknown): number => {
  const x = String(a)
  const y = String(b)
  return x < y ? -1 : x > y ? 1 : 0
}

/** Python's `msgpack.Packer` refuses deeper nesting than this; a cycle ends here too. */
const MAX_DEPTH = 511

const TWO_32 = 0x1_0000_0000

/** Little-endian hosts only (x86, arm64): BigUint64Array words are read as two uint32 halves. */
const isLittleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

/**
 * Options of {@link encode}.
 *
 * @category models
 * @since 0.1.0
 */
export interface EncodeOptions {
  /** Write every map's string keys in sorted order (the media frame, so its hash is stable). */
  readonly sortKeys?: boolean
}

/**
 * Options of a {@link Writer}.
 *
 * @category models
 * @since 0.1.0
 */
export interface WriterOptions extends EncodeOptions {
  /** The buffer's first size in bytes (default 256); it doubles as needed and is kept for reuse. */
  readonly initialSize?: number
}

/**
 * The writer behind {@link encode}, for hot paths that write one value piece by piece and many
 * times over: map keys encoded once and written with {@link Writer.raw}, the buffer kept across
 * values. Each method writes what {@link encode} writes for that JavaScript value, except
 * {@link Writer.float} and {@link Writer.floats}, which always write float64 (a Python float,
 * whole or not). Methods chain; a write that throws leaves part of a value behind, so
 * {@link Writer.reset} before reusing the writer.
 *
 * @example
 * ```ts
 * import { Msgpack } from "@mcore-effect/protocol"
 *
 * const KEYS = { id: Msgpack.encode("id"), t: Msgpack.encode("t") }
 * const w = new Msgpack.Writer()
 * w.mapHeader(2).raw(KEYS.id).number(7).raw(KEYS.t).float(1)
 * w.finish() // 82 a2 69 64 07 a1 74 cb 3f f0 00 00 00 00 00 00: { id: 7, t: 1.0 }
 * ```
 *
 * @category models
 * @since 0.1.0
 */
export class Writer extends ScalarWriter {
  private readonly sortKeys: boolean

  constructor(options?: WriterOptions) {
    super(options?.initialSize)
    this.sortKeys = options?.sortKeys === true
  }

  /** Any value {@link encode} takes. @throws {@link NotEncodableException} as {@link encode} does. */
  value(v: unknown): this {
    this.any(v, 0, "")
    return this
  }

  /** Token ids and other integer typed arrays: a msgpack array of ints, never bin. */
  private typedArray(a: NumericTypedArray, path: string): void {
    const n = a.length
    this.arrayHeader(n)
    if (a instanceof BigUint64Array && isLittleEndian) {
      // Block hashes: read each word as two uint32 halves instead of allocating a bigint apiece.
      const halves = new Uint32Array(a.buffer, a.byteOffset, n * 2)
      for (let i = 0; i < n; i++) {
        const lo = halves[2 * i]!
        const hi = halves[2 * i + 1]!
        if (hi < 0x20_0000) {
          this.uint(hi * TWO_32 + lo)
        } else {
          this.ensure(9)
          this.buf[this.pos++] = 0xcf
          this.view.setUint32(this.pos, hi)
          this.view.setUint32(this.pos + 4, lo)
          this.pos += 8
        }
      }
      return
    }
    if (a instanceof BigInt64Array || a instanceof BigUint64Array) {
      for (let i = 0; i < n; i++) this.bigint(a[i]!, path)
      return
    }
    const numbers = a as unknown as ArrayLike<number>
    for (let i = this.uint32sOfTyped(numbers); i < n; i++) this.number(numbers[i]!)
  }

  private any(v: unknown, depth: number, path: string): void {
    switch (typeof v) {
      case "string":
        this.string(v)
        return
      case "number":
        this.number(v)
        return
      case "boolean":
        this.byte(v ? 0xc3 : 0xc2)
        return
      case "bigint":
        return this.bigint(v, path)
      case "undefined":
        this.byte(0xc0)
        return
      case "object":
        if (v === null) {
          this.byte(0xc0)
          return
        }
        if (depth > MAX_DEPTH) {
          throw new NotEncodableException(path, `nesting deeper than ${MAX_DEPTH} levels (or a cycle)`)
        }
        return this.object(v, depth + 1, path)
      default:
        throw new NotEncodableException(path, `a ${typeof v} has no msgpack form`)
    }
  }

  private object(v: object, depth: number, path: string): void {
    if (Array.isArray(v)) {
      this.arrayHeader(v.length)
      // Elements are encoded with a relative path, and the index is added only when one fails:
      // building "path[i]" for every element cost more than encoding it (a 512-token prompt).
      for (let i = this.uint32s(v); i < v.length; i++) {
        try {
          this.any(v[i], depth, "")
        } catch (cause) {
          if (!(cause instanceof NotEncodableException)) throw cause
          const inner = cause.path
          const at = path + "[" + i + "]"
          throw new NotEncodableException(
            inner === "" ? at : inner[0] === "[" || inner[0] === "." ? at + inner : at + "." + inner,
            cause.reason
          )
        }
      }
      return
    }
    if (ArrayBuffer.isView(v)) {
      if (v instanceof Uint8Array) this.bin(v)
      else if (v instanceof DataView) this.bin(new Uint8Array(v.buffer, v.byteOffset, v.byteLength))
      else this.typedArray(v as NumericTypedArray, path)
      return
    }
    if (v instanceof Raw) {
      this.raw(v.bytes)
      return
    }
    if (v instanceof Float) {
      this.float(v.value)
      return
    }
    if (v instanceof FloatFields) {
      this.plainObject(v.map, depth, path, v.floats)
      return
    }
    if (v instanceof Map) {
      const keys = [...v.keys()]
      if (this.sortKeys) keys.sort(compareKeys)
      this.mapHeader(keys.length)
      for (const key of keys) {
        // Python's unpackb refuses any other key (strict_map_key), and so does decode.
        if (typeof key !== "string") {
          throw new NotEncodableException(path, `a map key must be a string, got ${key === null ? "null" : typeof key}`)
        }
        this.string(key)
        this.any(v.get(key), depth, path + "." + key)
      }
      return
    }
    this.plainObject(v, depth, path, undefined)
  }

  /** A plain object as a map; numbers at the keys in `floats` as float64. */
  private plainObject(v: object, depth: number, path: string, floats: ReadonlySet<string> | undefined): void {
    const proto = Object.getPrototypeOf(v)
    if (proto !== Object.prototype && proto !== null) {
      const name = (v as { constructor?: { name?: string } }).constructor?.name ?? "object"
      throw new NotEncodableException(path, `a ${name} instance has no msgpack form (send plain data)`)
    }
    const keys = Object.keys(v)
    if (this.sortKeys) keys.sort(compareKeys)
    this.mapHeader(keys.length)
    for (const key of keys) {
      this.string(key)
      const value = (v as Record<string, unknown>)[key]
      if (floats !== undefined && typeof value === "number" && floats.has(key)) this.float(value)
      else this.any(value, depth, path === "" ? key : path + "." + key)
    }
  }
}
