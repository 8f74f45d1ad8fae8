/**
 * Byte-level helpers for the hot paths of the test coordinator and engines: small metadata
 * frames written directly (Python-exact: the smallest integer form), and the request id of a
 * metadata frame swapped without re-encoding the rest of it.
 *
 * @since 0.1.0
 * @internal
 */
import { Msgpack } from "@mcore-effect/protocol"

/** msgpack `nil`: a body frame that holds nothing. */
export const NIL: Uint8Array = Uint8Array.of(0xc0)

const TWO_32 = 0x1_0000_0000

/** Writes a non-negative safe integer in its smallest msgpack form at `pos`; returns the new pos. */
const writeUint = (buf: Uint8Array, pos: number, v: number): number => {
  if (v < 0x80) {
    buf[pos] = v
    return pos + 1
  }
  if (v < 0x100) {
    buf[pos] = 0xcc
    buf[pos + 1] = v
    return pos + 2
  }
  if (v < 0x10000) {
    buf[pos] = 0xcd
    buf[pos + 1] = v >>> 8
    buf[pos + 2] = v & 0xff
    return pos + 3
  }
  if (v < TWO_32) {
    buf[pos] = 0xce
    buf[pos + 1] = v >>> 24
    buf[pos + 2] = (v >>> 16) & 0xff
    buf[pos + 3] = (v >>> 8) & 0xff
    buf[pos + 4] = v & 0xff
    return pos + 5
  }
  const hi = Math.floor(v / TWO_32)
  const lo = v >>> 0
  buf[pos] = 0xcf
  buf[pos + 1] = hi >>> 24
  buf[pos + 2] = (hi >>> 16) & 0xff
  buf[pos + 3] = (hi >>> 8) & 0xff
  buf[pos + 4] = hi & 0xff
  buf[pos + 5] = lo >>> 24
  buf[pos + 6] = (lo >>> 16) & 0xff
  buf[pos + 7] = (lo >>> 8) & 0xff
  buf[pos + 8] = lo & 0xff
  return pos + 9
}

/** `pack([header])`. */
export const packHeader = (header: number): Uint8Array => Uint8Array.of(0x91, header)

/** `pack([header, n])` for a non-negative safe integer `n` (a reply's or an abort's metadata). */
export const packHeaderInt = (header: number, n: number): Uint8Array => {
  const buf = new Uint8Array(11)
  buf[0] = 0x92
  buf[1] = header
  return buf.subarray(0, writeUint(buf, 2, n))
}

/** Byte length of the msgpack number starting at `pos`, or 0 when it is not a number. */
const numberLength = (buf: Uint8Array, pos: number): number => {
  const b = buf[pos]
  if (b === undefined) return 0
  if (b < 0x80 || b >= 0xe0) return 1
  switch (b) {
    case 0xcc:
    case 0xd0:
      return 2
    case 0xcd:
    case 0xd1:
      return 3
    case 0xce:
    case 0xd2:
    case 0xca:
      return 5
    case 0xcf:
    case 0xd3:
    case 0xcb:
      return 9
    default:
      return 0
  }
}

/**
 * Where the request id of a metadata frame `[header, id, ...rest]` laid out as Python writes it
 * ends, or 0 when the frame is laid out otherwise.
 */
export const requestIdEnd = (frame: Uint8Array, values: ReadonlyArray<unknown>): number => {
  if (frame[0] !== (0x90 | values.length) || frame[1] !== values[0]) return 0
  const length = numberLength(frame, 2)
  return length === 0 ? 0 : 2 + length
}

/**
 * The metadata frame `[header, id, ...rest]` with `id` replaced, the rest copied byte for byte
 * (the sampling parameters are never re-encoded). `values` is the frame decoded, used only when
 * the frame is not laid out the way Python writes it (a fixarray with the header as a fixint).
 */
export const withRequestId = (frame: Uint8Array, values: ReadonlyArray<unknown>, id: number): Uint8Array => {
  const idEnd = requestIdEnd(frame, values)
  if (idEnd === 0) return Msgpack.encode([values[0], id, ...values.slice(2)])
  const rest = frame.subarray(idEnd)
  const out = new Uint8Array(2 + 9 + rest.length)
  out[0] = frame[0]!
  out[1] = frame[1]!
  const pos = writeUint(out, 2, id)
  out.set(rest, pos)
  return out.subarray(0, pos + rest.length)
}

/** True for the one-byte frame `nil`. */
export const isNil = (frame: Uint8Array): boolean => frame.length === 1 && frame[0] === 0xc0

/** Decodes a frame, or returns `undefined` for bytes that are not exactly one msgpack value. */
export const tryDecode = (frame: Uint8Array | undefined): unknown => {
  if (frame === undefined || frame.length === 0) return undefined
  try {
    return Msgpack.decode(frame)
  } catch {
    return undefined
  }
}

/** True for a non-negative safe integer (a request id). */
export const isRequestId = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0

/** A ZeroMQ identity as a map key. */
export const identityKey = (identity: Uint8Array): string => Buffer.from(identity.buffer, identity.byteOffset, identity.byteLength).toString("latin1")

/** A ZeroMQ identity for people: printable identities as text, others as hex. */
export const showIdentity = (identity: Uint8Array): string => {
  for (const b of identity) if (b < 0x20 || b > 0x7e) return `0x${Buffer.from(identity).toString("hex")}`
  return Buffer.from(identity).toString("latin1")
}
