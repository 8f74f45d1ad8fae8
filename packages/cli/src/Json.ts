/**
 * JSON for what comes off the wire: msgpack values JSON has no form for are written in the
 * nearest one a reader expects (a block hash beyond 2^53 as a decimal string, bytes as base64,
 * a typed array as an array).
 *
 * @since 0.1.0
 * @internal
 */

const replacer = (_key: string, value: unknown): unknown => {
  if (typeof value === "bigint") {
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(value)
      : value.toString()
  }
  if (value instanceof Uint8Array) return { base64: Buffer.from(value).toString("base64") }
  if (ArrayBuffer.isView(value)) return Array.from(value as unknown as ArrayLike<number | bigint>)
  return value
}

/**
 * One line of JSON.
 *
 * @example
 * ```ts
 * import { stringify } from "./Json.ts"
 *
 * stringify({ hash: 2n ** 60n, bytes: new Uint8Array([1, 2]) })
 * // '{"hash":"1152921504606846976","bytes":{"base64":"AQI="}}'
 * ```
 *
 * @since 0.1.0
 */
export const stringify = (value: unknown): string => JSON.stringify(value, replacer) ?? "null"
