/**
 * The fast path of `Msgpack.decode`: a reader for what Python's `msgpack.packb` writes (nil,
 * booleans, integers, floats, str, bin, arrays, maps with str keys), with results identical to
 * msgpackr's as `Msgpack` configures it (maps as plain objects, `__proto__` renamed `__proto_`,
 * 64-bit integers as `bigint` past 2^53, bin as a view of the input), and faster than msgpackr's
 * general reader (PERFORMANCE.md#a-reader-of-its-own-for-pythons-msgpack).
 *
 * Map keys are strict, as Python's `unpackb` is (`strict_map_key`): a key that is not a str, or
 * a key a map already holds (after the `__proto__` rename), is {@link Malformed}, never turned into
 * a string or merged. A JavaScript object cannot hold `1` and `"1"` apart, and no Python dict packs
 * a key twice, so either is a hostile or broken frame.
 *
 * Anything else (extension types, the never-used 0xc1, nesting deeper than {@link MAX_DEPTH})
 * throws {@link Unsupported}, and the caller hands the bytes to msgpackr (after
 * {@link checkKeys}), so those keep msgpackr's behaviour, map keys aside.
 *
 * @internal
 */
import * as MsgpackScan from "../MsgpackScan.ts"

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

/** The slot of the str whose bytes are `b[start, end)` (not empty), in {@link cache} and {@link stamps}. */
const slotOf = (b: Uint8Array, start: number, end: number): number => {
  const n = end - start
  return ((n << 7) ^ (b[start]! << 4) ^ b[start + (n >> 1)]! ^ (b[end - 1]! << 2) ^ (b[end - 2 + (n === 1 ? 1 : 0)]! << 9)) &
    (CACHE_SIZE - 1)
}

const EMPTY_SLOT = CACHE_SIZE
const PROTO_SLOT = CACHE_SIZE + 1

/**
 * Repeated map keys, found without a lookup per key: each map being read takes a new generation,
 * and stamps its keys' slots with it. A key whose slot holds a stamp of this map's generation or
 * later (a map nested in this one stamps later ones) may be a repeat, and only then is the map
 * asked whether it has the key already (a lookup per key is dearer:
 * PERFORMANCE.md#repeated-map-keys-found-by-generation-stamps).
 */
const stamps = new Float64Array(CACHE_SIZE + 2)
/** Counts maps read since the process started: exact to 2^53, more maps than it will ever read. */
let generation = 0

class Reader {
  pos = 0
  /** The slot of the key {@link Reader.key} read last. */
  private keySlot = 0
  /** The slot {@link Reader.str} computed last (strs of 1 to {@link MAX_CACHED} bytes). */
  private strSlot = 0
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
    const slot = slotOf(b, start, end)
    this.strSlot = slot
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
    const b = this.b
    const t = b[this.pos]
    if (t === undefined) throw new Malformed("Unexpected end of MessagePack data")
    if (!((t >= 0xa0 && t <= 0xbf) || (t >= 0xd9 && t <= 0xdb))) throw notStringKey(t)
    const start = this.pos + (t <= 0xbf ? 1 : t === 0xd9 ? 2 : t === 0xda ? 3 : 5)
    let key = this.value(0) as string
    const end = this.pos
    if (key === "__proto__") key = "__proto_"
    // Both spellings of __proto_ share a slot, as they share a key.
    const n = end - start
    this.keySlot = key === "__proto_" ? PROTO_SLOT : n === 0 ? EMPTY_SLOT : n <= MAX_CACHED ? this.strSlot : slotOf(b, start, end)
    return key
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
    const gen = ++generation
    for (let i = 0; i < n; i++) {
      const key = this.key()
      const slot = this.keySlot
      if (stamps[slot]! >= gen && Object.hasOwn(out, key)) throw duplicateKey(key)
      stamps[slot] = gen
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

/** msgpack's name for the type a byte starts. */
const typeName = (t: number): string =>
  t < 0x80 || t >= 0xe0 || (t >= 0xcc && t <= 0xd3)
    ? "an integer"
    : t === 0xca || t === 0xcb
    ? "a float"
    : t < 0x90 || t === 0xde || t === 0xdf
    ? "a map"
    : t < 0xa0 || t === 0xdc || t === 0xdd
    ? "an array"
    : t < 0xc0 || (t >= 0xd9 && t <= 0xdb)
    ? "a string"
    : t === 0xc0
    ? "nil"
    : t === 0xc2 || t === 0xc3
    ? "a boolean"
    : t >= 0xc4 && t <= 0xc6
    ? "bytes"
    : t === 0xc1
    ? "the never-used byte 0xc1"
    : "an extension"

const notStringKey = (t: number): Malformed => new Malformed(`a map key must be a string, got ${typeName(t)}`)

const duplicateKey = (key: string): Malformed =>
  new Malformed(`a map holds the key ${JSON.stringify(key.length > 40 ? key.slice(0, 40) + "…" : key)} twice`)

/**
 * The map-key rules of the reader, for bytes it leaves to msgpackr (extension types, deep
 * nesting), which would turn any key into a string and let a later key overwrite an earlier
 * one. A walk with a stack of its own (nesting of any depth), no values built but the keys.
 *
 * @throws {@link Malformed} for a key that is not a str or a key its map holds already, and for
 * bytes that are not well-formed msgpack.
 */
export const checkKeys = (b: Uint8Array): void => {
  // Per open array or map: values still to read, and for a map the keys read so far.
  const remaining: Array<number> = [1]
  const keys: Array<Set<string> | undefined> = [undefined]
  let p = 0
  while (remaining.length > 0) {
    const top = remaining.length - 1
    if (remaining[top] === 0) {
      remaining.pop()
      keys.pop()
      continue
    }
    const left = --remaining[top]!
    const t = b[p]
    if (t === undefined) throw new Malformed("Unexpected end of MessagePack data")
    const seen = keys[top]
    if (seen !== undefined && left % 2 === 1) {
      // A key: an odd count of values left in its map (its value is still to come).
      if (!((t >= 0xa0 && t <= 0xbf) || (t >= 0xd9 && t <= 0xdb))) throw notStringKey(t)
      const reader = new Reader(b)
      reader.pos = p
      let key = reader.value(0) as string
      if (key === "__proto__") key = "__proto_"
      if (seen.has(key)) throw duplicateKey(key)
      seen.add(key)
      p = reader.pos
      continue
    }
    const map = MsgpackScan.mapHeader(b, p)
    const array = map === undefined ? MsgpackScan.arrayHeader(b, p) : undefined
    if (map !== undefined) {
      remaining.push(2 * map.count)
      keys.push(new Set())
      p = map.start
    } else if (array !== undefined) {
      remaining.push(array.count)
      keys.push(undefined)
      p = array.start
    } else {
      try {
        p = MsgpackScan.skip(b, p)
      } catch (cause) {
        throw new Malformed(cause instanceof globalThis.Error ? cause.message : String(cause))
      }
    }
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
