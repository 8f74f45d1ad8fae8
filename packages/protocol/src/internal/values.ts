/**
 * Two small judgements about plain values that every package makes: whether a value is a plain
 * object (what msgpack decodes a map to, and what a caller writes as `{ ... }`), and how to name
 * a value in an error message. One definition, so that every error says the same thing about
 * the same value.
 *
 * @since 0.1.0
 * @internal
 */

/**
 * True for a plain object: an object literal, `Object.create(null)`, or a decoded msgpack map.
 * Arrays, typed arrays, class instances, `Map`s and `null` are not.
 *
 * @since 0.1.0
 * @internal
 */
export const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (value === null || typeof value !== "object") return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/**
 * A value named for an error message: numbers, booleans, `null` and `undefined` as they print,
 * a bigint with its `n`, a string quoted (cut at `maxString` characters; with `maxString` 0 just
 * `a string`, where the kind is the point), anything else by its kind (`an array`,
 * `a Uint8Array`, `an object`, `a Map`, `a function`).
 *
 * @since 0.1.0
 * @internal
 */
export const describeValue = (value: unknown, maxString = 40): string => {
  switch (typeof value) {
    case "number":
    case "boolean":
    case "undefined":
      return String(value)
    case "bigint":
      return `${value}n`
    case "string":
      if (maxString <= 0) return "a string"
      return JSON.stringify(value.length > maxString ? value.slice(0, maxString) + "…" : value)
    case "object": {
      if (value === null) return "null"
      if (Array.isArray(value)) return "an array"
      if (isPlainObject(value)) return "an object"
      const name = (value as { constructor?: { name?: unknown } }).constructor?.name
      return typeof name === "string" && name !== "" ? `${/^[AEIOU]/.test(name) ? "an" : "a"} ${name}` : "an object"
    }
    default:
      return `a ${typeof value}`
  }
}
