/**
 * A message's head (frame 0, or a one-frame message's array) as bytes, in the common case: the
 * header, the request id, `null`s, and values already encoded (remembered sampling parameters,
 * the prompt's frame), which is every SUBMIT_REQUEST. Written in two passes over a few values
 * with no writer. Why: the general writer's dispatch is a dozen more functions for V8 to run
 * unoptimized and then compile during a client's first burst of requests. Measured in fresh
 * processes (200 SUBMIT_REQUESTs of 512 tokens through `dialect.submit` and
 * `Dialect.encodeClient`, then 20,000 timed by `process.cpuUsage`, compiler threads included):
 * 4.2 µs of CPU per request against 5.0 (medians of 5), and 5.7 against 7.8 (6 interleaved
 * pairs, on a busier machine).
 *
 * @since 0.2.0
 * @internal
 */
import { Raw } from "./msgpackValues.ts"

/** Bytes already encoded that `value` stands for (a `Raw`), else `undefined`. */
const bytesOf = (value: unknown): Uint8Array | undefined => value instanceof Raw ? value.bytes : undefined

/**
 * `values` as a msgpack array, written straight to bytes when it has at most 15 elements and each
 * is an integer from 0 to 2^32 - 1, null (or undefined) or a `Raw` (bytes already encoded); else
 * `undefined`, and `Msgpack.encode` does it. The bytes are `Msgpack.encode`'s.
 *
 * @since 0.2.0
 * @internal
 */
export const encode = (values: ReadonlyArray<unknown>): Uint8Array | undefined => {
  const n = values.length
  if (n > 15) return undefined
  let size = 1
  for (let i = 0; i < n; i++) {
    const v = values[i]
    if (v === null || v === undefined) size += 1
    else if (typeof v === "number") {
      if (!(v >>> 0 === v) || (v === 0 && 1 / v < 0)) return undefined
      size += v < 0x80 ? 1 : v < 0x100 ? 2 : v < 0x10000 ? 3 : 5
    } else {
      const bytes = bytesOf(v)
      if (bytes === undefined) return undefined
      size += bytes.length
    }
  }
  const out = Buffer.allocUnsafe(size)
  out[0] = 0x90 | n
  let at = 1
  for (let i = 0; i < n; i++) {
    const v = values[i]
    if (v === null || v === undefined) out[at++] = 0xc0
    else if (typeof v === "number") {
      if (v < 0x80) out[at++] = v
      else if (v < 0x100) {
        out[at] = 0xcc
        out[at + 1] = v
        at += 2
      } else if (v < 0x10000) {
        out[at] = 0xcd
        out[at + 1] = v >>> 8
        out[at + 2] = v & 0xff
        at += 3
      } else {
        out[at] = 0xce
        out[at + 1] = v >>> 24
        out[at + 2] = (v >>> 16) & 0xff
        out[at + 3] = (v >>> 8) & 0xff
        out[at + 4] = v & 0xff
        at += 5
      }
    } else {
      const bytes = bytesOf(v)!
      out.set(bytes, at)
      at += bytes.length
    }
  }
  return out
}
