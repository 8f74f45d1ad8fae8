/**
 * The fast path of `Msgpack.decode`: a reader for what Python's `msgpack.packb` writes (nil,
 * booleans, integers, floats, str, bin, arrays, maps with str keys), with results identical to
 * msgpackr's as `Msgpack` configures it (maps as plain objects, `__proto__` renamed `__proto_`,
 * 64-bit integers as `bigint` past 2^53, bin as a view of the input). It reads a reply's token
 * arrays and keys several times faster than msgpackr's general reader.
 *
 * Anything else (extension types, the never-used 0xc1, map keys that are not str, nesting deeper
 * than {@link MAX_DEPTH}) throws {@link Unsupported}, and the caller hands the bytes to msgpackr,
 * so those keep msgpackr's behaviour exactly.
 *
 * @internal
 */

/** Thrown for bytes this reader leaves to msgpackr. */
export class Unsupported {
  private constructor() {}
  static readonly instance = new Unsupported()
}

/** Thrown for bytes that are not one well-formed msgpack value. */
export class Malformed extends globalThis.Error {}

/** Deeper than this is left to msgpackr (Python's packer refuses past 511 levels anyway). */
const MAX_DEPTH = 512

/** A str this long or shorter is looked up in the string cache before it is decoded. */
const MAX_CACHED = 24
const CACHE_SIZE = 4096

const TWO_32 = 0x1_0000_0000

const utf8 = new TextDecoder()

/**
 * Decoded short strings by their bytes: the same few dozen keys and status names arrive in every
 * reply, and finding one costs less than decoding it again (and the same string object makes a
 * cheaper property key). ASCII only, so a cached string is compared with the bytes char by char;
 * a slot is chosen from the length and the first and last two bytes, and a collision overwrites.
 */
const cache: Array<string | undefined> = new Array(CACHE_SIZE).fill(undefined)

class Reader {
  pos = 0
  /** Made on the first float: most frames have none. */
  private view: DataView | undefined = undefined
  constructor(readonly b: Uint8Array) {}

  private need(n: number): void {
    if (this.pos + n > this.b.length) throw new Malformed("Unexpected end of MessagePack data")
  }

  private u8(): number {
    this.need(1)
    return this.b[this.pos++]!
  }

  private u16(): number {
    this.need(2)
    const b = this.b
    const p = this.pos
    this.pos = p + 2
    return (b[p]! << 8) | b[p + 1]!
  }

  private u32(): number {
    this.need(4)
    const b = this.b
    const p = this.pos
    this.pos = p + 4
    return b[p]! * 0x100_0000 + ((b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!)
  }

  private u64(): number | bigint {
    const hi = this.u32()
    const lo = this.u32()
    if (hi < 0x20_0000 || (hi === 0x20_0000 && lo === 0)) return hi * TWO_32 + lo
    return (BigInt(hi) << 32n) | BigInt(lo)
  }

  private i64(): number | bigint {
    const hi = this.u32() | 0
    const lo = this.u32()
    // [-2^53, 2^53] as a number, as msgpackr's "auto" does.
    if ((hi >= -0x20_0000 && hi < 0x20_0000) || (hi === 0x20_0000 && lo === 0)) return hi * TWO_32 + lo
    return BigInt.asIntN(64, (BigInt(hi >>> 0) << 32n) | BigInt(lo))
  }

  private float(size: 4 | 8): number {
    this.need(size)
    const b = this.b
    const view = (this.view ??= new DataView(b.buffer, b.byteOffset, b.byteLength))
    const p = this.pos
    this.pos = p + size
    return size === 8 ? view.getFloat64(p) : view.getFloat32(p)
  }

  private str(n: number): string {
    this.need(n)
    const b = this.b
    const start = this.pos
    const end = start + n
    this.pos = end
    if (n === 0) return ""
    if (n > MAX_CACHED) return utf8.decode(b.subarray(start, end))
    const slot = ((n << 7) ^ (b[start]! << 4) ^ b[start + (n >> 1)]! ^ (b[end - 1]! << 2) ^ (b[end - 2 + (n === 1 ? 1 : 0)]! << 9)) &
      (CACHE_SIZE - 1)
    const cached = cache[slot]
    if (cached !== undefined && cached.length === n) {
      let i = 0
      while (i < n && cached.charCodeAt(i) === b[start + i]) i++
      if (i === n) return cached
    }
    const decoded = utf8.decode(b.subarray(start, end))
    // Same length as its bytes: ASCII, comparable byte for char next time.
    if (decoded.length === n) cache[slot] = decoded
    return decoded
  }

  private key(): string {
    const t = this.b[this.pos]
    if (t === undefined) throw new Malformed("Unexpected end of MessagePack data")
    // A key that is not a str: msgpackr's rules for those apply.
    if (!((t >= 0xa0 && t <= 0xbf) || (t >= 0xd9 && t <= 0xdb))) throw Unsupported.instance
    const key = this.value(0) as string
    return key === "__proto__" ? "__proto_" : key
  }

  private array(n: number, depth: number): Array<unknown> {
    // Every element takes a byte at least: a length past the end is a lie, not an allocation.
    if (n > this.b.length - this.pos) throw new Malformed("Unexpected end of MessagePack data")
    if (depth >= MAX_DEPTH) throw Unsupported.instance
    const out = new Array<unknown>(n)
    const b = this.b
    const length = b.length
    for (let i = 0; i < n; i++) {
      // Token ids inline: most arrays on the wire are of small non-negative integers.
      const p = this.pos
      const t = b[p]!
      if (t < 0x80) {
        out[i] = t
        this.pos = p + 1
      } else if (t === 0xce && p + 5 <= length) {
        out[i] = b[p + 1]! * 0x100_0000 + ((b[p + 2]! << 16) | (b[p + 3]! << 8) | b[p + 4]!)
        this.pos = p + 5
      } else if (t === 0xcd && p + 3 <= length) {
        out[i] = (b[p + 1]! << 8) | b[p + 2]!
        this.pos = p + 3
      } else {
        out[i] = this.value(depth + 1)
      }
    }
    return out
  }

  private map(n: number, depth: number): Record<string, unknown> {
    if (2 * n > this.b.length - this.pos) throw new Malformed("Unexpected end of MessagePack data")
    if (depth >= MAX_DEPTH) throw Unsupported.instance
    const out: Record<string, unknown> = {}
    for (let i = 0; i < n; i++) {
      const key = this.key()
      out[key] = this.value(depth + 1)
    }
    return out
  }

  value(depth: number): unknown {
    const b = this.b
    const t = b[this.pos]
    if (t === undefined) throw new Malformed("Unexpected end of MessagePack data")
    this.pos++
    if (t < 0x80) return t
    if (t < 0x90) return this.map(t & 0x0f, depth)
    if (t < 0xa0) return this.array(t & 0x0f, depth)
    if (t < 0xc0) return this.str(t & 0x1f)
    if (t >= 0xe0) return t - 0x100
    switch (t) {
      case 0xc0:
        return null
      case 0xc2:
        return false
      case 0xc3:
        return true
      case 0xc4:
        return this.bin(this.u8())
      case 0xc5:
        return this.bin(this.u16())
      case 0xc6:
        return this.bin(this.u32())
      case 0xca:
        return this.float(4)
      case 0xcb:
        return this.float(8)
      case 0xcc:
        return this.u8()
      case 0xcd:
        return this.u16()
      case 0xce:
        return this.u32()
      case 0xcf:
        return this.u64()
      case 0xd0: {
        const v = this.u8()
        return v < 0x80 ? v : v - 0x100
      }
      case 0xd1: {
        const v = this.u16()
        return v < 0x8000 ? v : v - 0x1_0000
      }
      case 0xd2:
        return this.u32() | 0
      case 0xd3:
        return this.i64()
      case 0xd9:
        return this.str(this.u8())
      case 0xda:
        return this.str(this.u16())
      case 0xdb:
        return this.str(this.u32())
      case 0xdc:
        return this.array(this.u16(), depth)
      case 0xdd:
        return this.array(this.u32(), depth)
      case 0xde:
        return this.map(this.u16(), depth)
      case 0xdf:
        return this.map(this.u32(), depth)
      default:
        throw Unsupported.instance
    }
  }

  private bin(n: number): Uint8Array {
    this.need(n)
    const start = this.pos
    this.pos = start + n
    return this.b.subarray(start, start + n)
  }
}

/**
 * Exactly one value from `bytes`.
 *
 * @throws {@link Malformed} for truncated bytes or bytes after the value; {@link Unsupported}
 * for what is left to msgpackr.
 */
export const read = (bytes: Uint8Array): unknown => {
  const reader = new Reader(bytes)
  const value = reader.value(0)
  if (reader.pos !== bytes.length) throw new Malformed("Data read, but end of buffer not reached")
  return value
}
