/**
 * The nesting limit of request bodies: a body nested deeper than {@link MAX_DEPTH} levels is
 * refused with a 400 naming the field where the limit is passed, before anything else reads it.
 *
 * Why: `JSON.parse` itself takes any depth (V8's parser is iterative), but what reads the value
 * afterwards recurses: Schema's decode, the chat template's variables, `JSON.stringify` (which
 * overflows the stack a few thousand levels down; PERFORMANCE.md#json-depth).
 * A `chat_template_kwargs` array nested 5,000 deep, or a tool's `parameters` nested 10,000 deep,
 * answered a bare 500 with an empty body before this check. No real request comes near 128
 * levels (a tool's JSON schema is a handful deep); vLLM's own limit on a tool schema is lower.
 *
 * Two ways to find it, with the same answer (a property test holds them to it):
 *
 * - {@link tooDeep} walks the parsed value. It recurses,
 *   but never more than {@link MAX_DEPTH} + 1 frames: it stops at the first container past the
 *   limit.
 * - {@link tooDeepText} scans the text before it is parsed, iteratively: `JSON.parse` does not
 *   overflow on deep nesting, but it is slow on it, so a 4 MiB body of nested arrays would hold
 *   the event loop for seconds. The scan stops at the first container past the limit and jumps
 *   over strings with `indexOf`. The server scans bodies longer than {@link SCAN_TEXT_FROM}
 *   characters; a shorter one is at most half as deep as it is long, parses quickly, and is
 *   walked after its parse. Measurements: PERFORMANCE.md#json-depth.
 *
 * @since 0.1.0
 */

/**
 * Most levels of nesting a body may have; the body object itself is level 1.
 *
 * @since 0.1.0
 */
export const MAX_DEPTH = 128

/**
 * Bodies longer than this (characters) are scanned as text before they are parsed
 * ({@link tooDeepText}); shorter ones are walked once parsed ({@link tooDeep}).
 *
 * @since 0.1.0
 */
export const SCAN_TEXT_FROM = 4096

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
 * import * as JsonDepth from "./JsonDepth.ts"
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

/** A key's JSON text as the key (its escapes read), or the text as it is when it does not parse. */
const keyOf = (text: string): string => {
  try {
    return String(JSON.parse(text))
  } catch {
    return text
  }
}

/**
 * {@link tooDeep} on the JSON text, before it is parsed: where it is nested deeper than `limit`,
 * as the same field path, or `undefined` (also for text that is not JSON in a way the scan cannot
 * see: `JSON.parse` says what is wrong with it). Iterative, and it stops at the first container
 * past the limit; strings are jumped over with `indexOf`.
 *
 * @example
 * ```ts
 * import * as JsonDepth from "./JsonDepth.ts"
 *
 * JsonDepth.tooDeepText(`{"a": [1, [[2]]]}`, 3) // "a[1][0]"
 * ```
 *
 * @since 0.1.0
 */
export const tooDeepText = (text: string, limit: number = MAX_DEPTH): string | undefined => {
  // Per open container, by depth (1 is the body): an object or an array, the index of the item
  // being read (arrays), where the key being read is (objects). At most `limit` of each.
  const isObject: Array<boolean> = []
  const index: Array<number> = []
  const keyStart: Array<number> = []
  const keyEnd: Array<number> = []
  let depth = 0
  let expectKey = false
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 34) {
      // A string: to its closing quote, one not escaped (an even run of backslashes before it).
      let j = i + 1
      for (;;) {
        j = text.indexOf("\"", j)
        if (j < 0) return undefined
        let k = j - 1
        while (text.charCodeAt(k) === 92) k--
        if ((j - 1 - k) % 2 === 0) break
        j++
      }
      if (expectKey) {
        keyStart[depth] = i
        keyEnd[depth] = j + 1
        expectKey = false
      }
      i = j
    } else if (c === 123 || c === 91) {
      depth++
      if (depth > limit) {
        const path: Array<string | number> = []
        for (let d = 1; d < depth; d++) path.push(isObject[d] ? keyOf(text.slice(keyStart[d], keyEnd[d])) : index[d]!)
        return pathName(path)
      }
      isObject[depth] = c === 123
      index[depth] = 0
      expectKey = c === 123
    } else if (c === 125 || c === 93) {
      depth--
      expectKey = false
    } else if (c === 44) {
      if (isObject[depth] === true) expectKey = true
      else index[depth] = (index[depth] ?? 0) + 1
    }
  }
  return undefined
}
