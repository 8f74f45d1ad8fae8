/**
 * Reading the layout of msgpack bytes without decoding them: where a value ends, where a map's
 * entries are. For splicing bytes instead of decoding and re-encoding a whole frame: the test
 * coordinator fills `generated_text` into a reply this way (the finished request echoes the
 * prompt and is the largest frame it handles), and swaps a metadata frame's request id.
 *
 * Unlike `Msgpack.decode`, these functions throw {@link ScanError} for bytes that are not
 * well-formed msgpack.
 *
 * @since 0.1.0
 */

const u16 = (b: Uint8Array, p: number): number => (b[p]! << 8) | b[p + 1]!
const u32 = (b: Uint8Array, p: number): number => ((b[p]! << 24) >>> 0) + ((b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!)

/**
 * Thrown for bytes that are not well-formed msgpack.
 *
 * @category errors
 * @since 0.1.0
 */
export class ScanError extends globalThis.Error {
  override readonly name = "ScanError"
}

const need = (b: Uint8Array, end: number): number => {
  if (end > b.length) throw new ScanError("truncated")
  return end
}

/** Skips `n` consecutive values starting at `p`. */
const skipMany = (b: Uint8Array, p: number, n: number): number => {
  for (let i = 0; i < n; i++) {
    // One-byte values (token ids below 128, small counts, short-map keys' fixints) without a
    // call: a reply's token arrays are mostly these.
    const t = b[p]
    if (t !== undefined && (t <= 0x7f || t >= 0xe0)) p++
    else p = skip(b, p)
  }
  return p
}

/**
 * The offset just past the msgpack value that starts at `p`.
 *
 * @throws {@link ScanError} for truncated or invalid bytes.
 *
 * @example
 * ```ts
 * import { Msgpack, MsgpackScan } from "@mcore-effect/protocol"
 *
 * MsgpackScan.skip(Msgpack.encode([1, "two", { three: 3 }]), 0) // 14: the whole array
 * ```
 *
 * @category scanning
 * @since 0.1.0
 */
export const skip = (b: Uint8Array, p: number): number => {
  const t = b[p]
  if (t === undefined) throw new ScanError("truncated")
  if (t <= 0x7f || t >= 0xe0) return p + 1
  if (t <= 0x8f) return skipMany(b, p + 1, 2 * (t & 0x0f))
  if (t <= 0x9f) return skipMany(b, p + 1, t & 0x0f)
  if (t <= 0xbf) return need(b, p + 1 + (t & 0x1f))
  switch (t) {
    case 0xc0:
    case 0xc2:
    case 0xc3:
      return p + 1
    case 0xc4:
    case 0xd9:
      need(b, p + 2)
      return need(b, p + 2 + b[p + 1]!)
    case 0xc5:
    case 0xda:
      need(b, p + 3)
      return need(b, p + 3 + u16(b, p + 1))
    case 0xc6:
    case 0xdb:
      need(b, p + 5)
      return need(b, p + 5 + u32(b, p + 1))
    case 0xc7:
      need(b, p + 3)
      return need(b, p + 3 + b[p + 1]!)
    case 0xc8:
      need(b, p + 4)
      return need(b, p + 4 + u16(b, p + 1))
    case 0xc9:
      need(b, p + 6)
      return need(b, p + 6 + u32(b, p + 1))
    case 0xca:
      return need(b, p + 5)
    case 0xcb:
      return need(b, p + 9)
    case 0xcc:
    case 0xd0:
      return need(b, p + 2)
    case 0xcd:
    case 0xd1:
      return need(b, p + 3)
    case 0xce:
    case 0xd2:
      return need(b, p + 5)
    case 0xcf:
    case 0xd3:
      return need(b, p + 9)
    case 0xd4:
      return need(b, p + 3)
    case 0xd5:
      return need(b, p + 4)
    case 0xd6:
      return need(b, p + 6)
    case 0xd7:
      return need(b, p + 10)
    case 0xd8:
      return need(b, p + 18)
    case 0xdc:
      need(b, p + 3)
      return skipMany(b, p + 3, u16(b, p + 1))
    case 0xdd:
      need(b, p + 5)
      return skipMany(b, p + 5, u32(b, p + 1))
    case 0xde:
      need(b, p + 3)
      return skipMany(b, p + 3, 2 * u16(b, p + 1))
    case 0xdf:
      need(b, p + 5)
      return skipMany(b, p + 5, 2 * u32(b, p + 1))
    default:
      throw new ScanError(`invalid byte 0x${t.toString(16)}`)
  }
}

/**
 * The entry count of the map at `p` and where its first key starts, or `undefined` when it is not a map.
 *
 * @category scanning
 * @since 0.1.0
 */
export const mapHeader = (b: Uint8Array, p: number): { readonly count: number; readonly start: number } | undefined => {
  const t = b[p]
  if (t === undefined) return undefined
  if (t >= 0x80 && t <= 0x8f) return { count: t & 0x0f, start: p + 1 }
  if (t === 0xde && p + 3 <= b.length) return { count: u16(b, p + 1), start: p + 3 }
  if (t === 0xdf && p + 5 <= b.length) return { count: u32(b, p + 1), start: p + 5 }
  return undefined
}

/**
 * The element count of the array at `p` and where its first element starts, or `undefined` when
 * it is not an array (or its header is cut short).
 *
 * @example
 * ```ts
 * import { Msgpack, MsgpackScan } from "@mcore-effect/protocol"
 *
 * MsgpackScan.arrayHeader(Msgpack.encode([21, 5]), 0) // { count: 2, start: 1 }
 * ```
 *
 * @category scanning
 * @since 0.1.0
 */
export const arrayHeader = (b: Uint8Array, p: number): { readonly count: number; readonly start: number } | undefined => {
  const t = b[p]
  if (t === undefined) return undefined
  if (t >= 0x90 && t <= 0x9f) return { count: t & 0x0f, start: p + 1 }
  if (t === 0xdc && p + 3 <= b.length) return { count: u16(b, p + 1), start: p + 3 }
  if (t === 0xdd && p + 5 <= b.length) return { count: u32(b, p + 1), start: p + 5 }
  return undefined
}

/**
 * True when `b[start, end)` equals `expected`.
 *
 * @category scanning
 * @since 0.1.0
 */
export const bytesEqual = (b: Uint8Array, start: number, end: number, expected: Uint8Array): boolean => {
  if (end - start !== expected.length) return false
  for (let i = 0; i < expected.length; i++) if (b[start + i] !== expected[i]) return false
  return true
}

/**
 * Where the values of the wanted keys lie in the map at `p`, as {@link findInMap} finds them,
 * but read only until the last of them is found: the rest of the map is not scanned, so neither
 * its end nor whether it is well formed is known. For a key read out of a large map (a reply's
 * `request_id` is its first key of 36) it reads one entry where {@link findInMap} reads them all.
 * A key absent from the map is looked for to the end. `undefined` when `p` is not at a map.
 *
 * @throws {@link ScanError} for malformed bytes read on the way.
 *
 * @example
 * ```ts
 * import { Msgpack, MsgpackScan } from "@mcore-effect/protocol"
 *
 * const bytes = Msgpack.encode({ a: 1, b: "x", c: [1, 2, 3] })
 * MsgpackScan.findKeys(bytes, 0, [Msgpack.encode("b")]) // [[6, 8]]: c is never read
 * ```
 *
 * @category scanning
 * @since 0.2.0
 */
export const findKeys = (
  b: Uint8Array,
  p: number,
  keys: ReadonlyArray<Uint8Array>
): Array<readonly [number, number] | undefined> | undefined => scanMap(b, p, keys, true)?.values

/**
 * Where the values of the wanted keys lie in the map at `p` (keys given encoded, as msgpack
 * strings). Returns `[start, end)` per found key, and the offset just past the map; `undefined`
 * when `p` is not at a map.
 *
 * @throws {@link ScanError} for malformed bytes.
 *
 * @example
 * ```ts
 * import { Msgpack, MsgpackScan } from "@mcore-effect/protocol"
 *
 * const bytes = Msgpack.encode({ a: 1, b: "x" })
 * MsgpackScan.findInMap(bytes, 0, [Msgpack.encode("b")]) // { values: [[6, 8]], end: 8 }
 * ```
 *
 * @category scanning
 * @since 0.1.0
 */
export const findInMap = (
  b: Uint8Array,
  p: number,
  keys: ReadonlyArray<Uint8Array>
): { readonly values: Array<readonly [number, number] | undefined>; readonly end: number } | undefined =>
  scanMap(b, p, keys, false)

/**
 * The one walk over a map's entries behind {@link findInMap} and {@link findKeys}: each wanted
 * key's value range (its first occurrence), and where the walk stopped (past the map, unless
 * `stopWhenFound` ended it at the last key found).
 */
const scanMap = (
  b: Uint8Array,
  p: number,
  keys: ReadonlyArray<Uint8Array>,
  stopWhenFound: boolean
): { readonly values: Array<readonly [number, number] | undefined>; readonly end: number } | undefined => {
  const header = mapHeader(b, p)
  if (header === undefined) return undefined
  const values: Array<readonly [number, number] | undefined> = keys.map(() => undefined)
  let missing = keys.length
  let q = header.start
  for (let i = 0; i < header.count && !(stopWhenFound && missing === 0); i++) {
    const keyEnd = skip(b, q)
    const valueEnd = skip(b, keyEnd)
    for (let k = 0; k < keys.length; k++) {
      if (values[k] === undefined && bytesEqual(b, q, keyEnd, keys[k]!)) {
        values[k] = [keyEnd, valueEnd]
        missing--
      }
    }
    q = valueEnd
  }
  return { values, end: q }
}

/** An array's or map's element count (keys and values both counted) and where its first element starts. */
const containerHeader = (b: Uint8Array, p: number, t: number): { readonly count: number; readonly start: number } | undefined => {
  if (t >= 0x80 && t <= 0x8f) return { count: 2 * (t & 0x0f), start: p + 1 }
  if (t >= 0x90 && t <= 0x9f) return { count: t & 0x0f, start: p + 1 }
  switch (t) {
    case 0xdc:
      return { count: u16(b, need(b, p + 3) - 2), start: p + 3 }
    case 0xdd:
      return { count: u32(b, need(b, p + 5) - 4), start: p + 5 }
    case 0xde:
      return { count: 2 * u16(b, need(b, p + 3) - 2), start: p + 3 }
    case 0xdf:
      return { count: 2 * u32(b, need(b, p + 5) - 4), start: p + 5 }
  }
  return undefined
}

const isString = (t: number): boolean => (t >= 0xa0 && t <= 0xbf) || t === 0xd9 || t === 0xda || t === 0xdb

/** bin 8/16/32 and the extension types. */
const isBytes = (t: number): boolean => (t >= 0xc4 && t <= 0xc9) || (t >= 0xd4 && t <= 0xd8)

/** Estimated bytes of one decoded value (a pointer, a number, a small object header). */
const VALUE_BYTES = 16

/** Estimated bytes of one decoded array or object, besides its elements. */
const CONTAINER_BYTES = 64

/**
 * The most {@link decodedSize} counts per encoded byte (an empty array or map is one byte), plus
 * 16 for the value itself: a frame of `n` bytes never measures above `16 + n * maxDecodedBytesPerByte`,
 * so a frame that short need not be measured against a limit at all.
 *
 * @category scanning
 * @since 0.1.0
 */
export const maxDecodedBytesPerByte: number = CONTAINER_BYTES + VALUE_BYTES

/**
 * An estimate, in bytes, of the memory the msgpack value at `p` takes once decoded: every value
 * counts 16 bytes (its slot), every array or map 64 more, strings two more per encoded byte
 * (UTF-16), byte strings and extensions one more per encoded byte. The walk stops as soon as the estimate passes `limit` (it
 * then returns a number above `limit`), so a declared length of billions costs nothing, and it
 * keeps no stack, so nesting of any depth is fine. For refusing a frame before decoding it.
 *
 * @throws {@link ScanError} for truncated or invalid bytes (within what it read).
 *
 * @example
 * ```ts
 * import { Msgpack, MsgpackScan } from "@mcore-effect/protocol"
 *
 * MsgpackScan.decodedSize(Msgpack.encode([1, 2, 3]), 0) // (16 + 64) + 3 * 16 = 128
 * MsgpackScan.decodedSize(Uint8Array.of(0xdd, 0xff, 0xff, 0xff, 0xff), 0, 1 << 20) > 1 << 20 // true
 * ```
 *
 * @category scanning
 * @since 0.1.0
 */
export const decodedSize = (b: Uint8Array, p: number, limit = Infinity): number => {
  let size = VALUE_BYTES
  let values = 1
  while (values > 0 && size <= limit) {
    values--
    const t = b[p]
    if (t === undefined) throw new ScanError("truncated")
    const container = containerHeader(b, p, t)
    if (container !== undefined) {
      // Its elements' slots are counted here, so a declared length is paid for before any is read.
      size += CONTAINER_BYTES + VALUE_BYTES * container.count
      values += container.count
      p = container.start
      continue
    }
    const end = skip(b, p)
    size += isString(t) ? 2 * (end - p) : isBytes(t) ? end - p : 0
    p = end
  }
  return size
}
