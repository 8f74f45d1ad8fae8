/**
 * The nesting limit of request bodies: a body nested deeper than {@link MAX_DEPTH} levels is
 * refused with a 400 naming the field where the limit is passed, before anything else reads it.
 *
 * Why: `JSON.parse` itself takes any depth (V8's parser is iterative: 1,000,000 nested arrays
 * parse, measured on Node 20), but what reads the value afterwards recurses: Schema's decode,
 * the chat template's variables, `JSON.stringify` (which overflows the stack at 5,000 levels).
 * A `chat_template_kwargs` array nested 5,000 deep, or a tool's `parameters` nested 10,000 deep,
 * answered a bare 500 with an empty body before this check. No real request comes near 128
 * levels (a tool's JSON schema is a handful deep); vLLM's own limit on a tool schema is lower.
 *
 * The walk recurses, but never more than {@link MAX_DEPTH} + 1 frames: it stops at the first
 * container past the limit, so a body nested 100,000 deep costs 129 frames.
 *
 * @since 0.1.0
 */

/**
 * Most levels of nesting a body may have; the body object itself is level 1.
 *
 * @since 0.1.0
 */
export const MAX_DEPTH = 128

/** The keys from the root to the first container deeper than `limit`, or undefined. */
const walk = (value: unknown, depth: number, limit: number): Array<string | number> | undefined => {
  if (depth > limit) return []
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item = value[i]
      if (typeof item !== "object" || item === null) continue
      const deeper = walk(item, depth + 1, limit)
      if (deeper !== undefined) {
        deeper.push(i)
        return deeper
      }
    }
    return undefined
  }
  const record = value as Record<string, unknown>
  for (const key in record) {
    const item = record[key]
    if (typeof item !== "object" || item === null) continue
    const deeper = walk(item, depth + 1, limit)
    if (deeper !== undefined) {
      deeper.push(key)
      return deeper
    }
  }
  return undefined
}

/**
 * `["tools", 0, "function"]` as `tools[0].function`.
 *
 * @since 0.1.0
 */
export const pathName = (path: ReadonlyArray<PropertyKey>): string => {
  let out = ""
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`
    else out += out === "" ? String(key) : `.${String(key)}`
  }
  return out
}

/**
 * Where `value` (a parsed JSON body) is nested deeper than `limit` levels, as a field path
 * (`chat_template_kwargs.x[0][0]...`; `""` when the body itself is too deep, which only a limit
 * below 1 makes), or `undefined` when it is not.
 *
 * @example
 * ```ts
 * import { JsonDepth } from "@mcore-effect/server"
 *
 * JsonDepth.tooDeep({ a: [[1]] }, 3) // undefined: 3 levels
 * JsonDepth.tooDeep({ a: [[[1]]] }, 3) // "a[0][0]"
 * ```
 *
 * @since 0.1.0
 */
export const tooDeep = (value: unknown, limit: number = MAX_DEPTH): string | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const path = walk(value, 1, limit)
  return path === undefined ? undefined : pathName(path.reverse())
}
