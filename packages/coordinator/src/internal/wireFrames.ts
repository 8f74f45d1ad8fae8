/**
 * Byte-level helpers for the hot paths of the coordinator and engines: small metadata
 * frames written with one reused `Msgpack.Writer` (Python-exact: the smallest integer form), and
 * the request id of a metadata frame swapped without re-encoding the rest of it.
 *
 * @since 0.1.0
 * @internal
 */
import { Msgpack, MsgpackScan } from "@mcore-effect/protocol"

/** msgpack `nil`: a body frame that holds nothing. */
export const NIL: Uint8Array = Uint8Array.of(0xc0)

/** Writes the small frames below; each call starts with `reset` and ends with `finish`. */
const writer = new Msgpack.Writer()

/** `pack([header])`. */
export const packHeader = (header: number): Uint8Array => Uint8Array.of(0x91, header)

/** `pack([header, n])` for a non-negative safe integer `n` (a reply's or an abort's metadata). */
export const packHeaderInt = (header: number, n: number): Uint8Array =>
  writer.reset().arrayHeader(2).number(header).number(n).finish()

/**
 * The header of a metadata frame. Read from its first two bytes when it is laid out as Python
 * writes it (a fixarray whose first element is a positive fixint); else the frame is decoded.
 * `undefined` when it is not an array starting with a number.
 */
export const headerOf = (frame: Uint8Array | undefined): number | undefined => {
  if (frame === undefined) return undefined
  if (frame.length >= 2 && frame[0]! >= 0x91 && frame[0]! <= 0x9f && frame[1]! <= 0x7f) return frame[1]
  const values = tryDecode(frame)
  return Array.isArray(values) && typeof values[0] === "number" ? values[0] : undefined
}

/**
 * Where the request id of a metadata frame `[header, id, ...rest]` laid out as Python writes it
 * (a fixarray, the header a positive fixint, the id a msgpack integer) ends, or 0 when the frame
 * is laid out otherwise.
 */
export const requestIdEnd = (frame: Uint8Array): number => {
  if (frame.length < 3 || frame[0]! < 0x92 || frame[0]! > 0x9f || frame[1]! > 0x7f) return 0
  const id = frame[2]!
  const isInteger = id <= 0x7f || (id >= 0xcc && id <= 0xcf) || (id >= 0xd0 && id <= 0xd3)
  return isInteger ? MsgpackScan.skip(frame, 2) : 0
}

/**
 * The metadata frame `[header, id, ...rest]` with `id` replaced, the rest copied byte for byte
 * (the sampling parameters are never re-encoded), and `nils` nil elements appended (main's
 * coordinator forwards a four-element SUBMIT_REQUEST with its `multi_modal_data` as nil). A frame
 * not laid out the way Python writes it, or that would outgrow a fixarray, is decoded and
 * re-encoded whole (which throws for a value with no msgpack form).
 */
export const withRequestId = (frame: Uint8Array, id: number, nils = 0): Uint8Array => {
  const idEnd = requestIdEnd(frame)
  if (idEnd === 0 || frame[0]! + nils > 0x9f) {
    const values = Msgpack.decode(frame) as Array<unknown>
    return Msgpack.encode([values[0], id, ...values.slice(2), ...Array<null>(nils).fill(null)])
  }
  const w = writer.reset().raw(Uint8Array.of(frame[0]! + nils, frame[1]!)).number(id).raw(frame.subarray(idEnd))
  for (let i = 0; i < nils; i++) w.nil()
  return w.finish()
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
