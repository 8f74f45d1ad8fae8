/**
 * Reading the JSON test vectors: bytes are written `{"$bin": hex}` and integers beyond a double's
 * precision `{"$bigint": "decimal"}`. This turns them into the values our decoder yields, and
 * turns decoded values back into comparable plain data.
 */
import { readFileSync } from "node:fs"

export const readFixture = <A>(name: string): A =>
  JSON.parse(readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8")) as A

/** JSON vector value -> the value msgpack decoding gives (bigint beyond 2^53, Uint8Array for bin). */
export const fromJson = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(fromJson)
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>
    if (typeof record.$bin === "string" && Object.keys(record).length === 1) {
      return new Uint8Array(Buffer.from(record.$bin, "hex"))
    }
    if (typeof record.$bigint === "string" && Object.keys(record).length === 1) {
      const n = BigInt(record.$bigint)
      return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n
    }
    return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, fromJson(v)]))
  }
  return value
}

/** Any decoded value -> plain comparable data (typed arrays as arrays, bytes as plain Uint8Array). */
export const plain = (value: unknown): unknown => {
  if (value instanceof Uint8Array) return new Uint8Array(value)
  if (value instanceof BigUint64Array || value instanceof BigInt64Array) {
    return Array.from(value, (n) => (n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n))
  }
  if (ArrayBuffer.isView(value)) return Array.from(value as unknown as ArrayLike<number>)
  if (Array.isArray(value)) return value.map(plain)
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]))
  }
  return value
}

/** True when a value holds a non-integer number anywhere (floats may differ in width on re-encode). */
export const hasFloat = (value: unknown): boolean => {
  if (typeof value === "number") return !Number.isInteger(value)
  if (Array.isArray(value)) return value.some(hasFloat)
  if (value !== null && typeof value === "object" && !ArrayBuffer.isView(value)) {
    return Object.values(value).some(hasFloat)
  }
  return false
}

export const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex")
