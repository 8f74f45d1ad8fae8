/**
 * A bounded cache of rendered chats: (template, messages, options) to the prompt text.
 *
 * A template is a function of its variables, except through `strftime_now` (today's date, read
 * by Llama 3's templates): a template whose text names it is never cached. The key is the chat
 * and its options written out in full ({@link keyOf}), computed on every call, so a message
 * object changed in place after a render is rendered afresh, never answered from a stale entry;
 * a value that is not plain data (a class instance, a function, a `Map`, `NaN`) makes the chat
 * uncacheable rather than guessed at.
 *
 * Why: rendering a template is a visible share of a chat request's CPU
 * (PERFORMANCE.md#the-render-cache-srcinternalrendercachets).
 *
 * @since 0.1.0
 * @internal
 */
import { Lru } from "./Lru.ts"

/**
 * Options of the cache.
 *
 * @since 0.1.0
 */
export interface Options {
  /** Rendered chats held at most (least recently used forgotten first); 0 turns the cache off. */
  readonly entries: number
  /** Chats whose key is longer (UTF-16 units) are rendered every time and never held. */
  readonly maxKeyLength: number
}

/**
 * The default: 256 chats of up to 8,192 units of key, so at most ~8 MB held (key and text).
 *
 * @since 0.1.0
 */
export const defaults: Options = { entries: 256, maxKeyLength: 8_192 }

/**
 * Whether renders of the template `source` can be cached: not when it reads the clock.
 *
 * @since 0.1.0
 */
export const cacheable = (source: string): boolean => !source.includes("strftime_now")

/** Writes `value`'s key after `out`; `undefined` when `value` is not plain data. */
const write = (value: unknown, out: string): string | undefined => {
  switch (typeof value) {
    case "string":
      return out + JSON.stringify(value)
    case "boolean":
      return out + (value ? "t" : "f")
    case "undefined":
      return out + "u"
    case "number":
      // -0 and 0, NaN and null would write alike: left uncached.
      return !Number.isFinite(value) || Object.is(value, -0) ? undefined : out + String(value)
    case "object": {
      if (value === null) return out + "n"
      let next: string | undefined = out
      if (Array.isArray(value)) {
        next += "["
        for (let i = 0; i < value.length; i++) {
          if (!(i in value)) return undefined
          next = write(value[i], next)
          if (next === undefined) return undefined
          next += ","
        }
        return next + "]"
      }
      const proto = Object.getPrototypeOf(value)
      if (proto !== Object.prototype && proto !== null) return undefined
      if (Object.getOwnPropertySymbols(value).length > 0) return undefined
      next += "{"
      for (const key of Object.keys(value)) {
        const descriptor = Object.getOwnPropertyDescriptor(value, key)!
        if (descriptor.get !== undefined || descriptor.set !== undefined) return undefined
        next = write(descriptor.value, next + JSON.stringify(key) + ":")
        if (next === undefined) return undefined
        next += ","
      }
      return next + "}"
    }
    default:
      return undefined
  }
}

/**
 * The key of `value` (plain data: strings, finite numbers, booleans, `null`, `undefined`, dense
 * arrays, plain objects with data properties, in their order), distinct for any two values a
 * template can tell apart (an absent key and one set to `undefined` included); `undefined` when
 * `value` holds anything else.
 *
 * @since 0.1.0
 */
export const keyOf = (value: unknown): string | undefined => write(value, "")

/**
 * The cache.
 *
 * @since 0.1.0
 */
export interface RenderCache {
  /** The text held for `key`, if any. */
  readonly get: (key: string) => string | undefined
  /** Holds `text` for `key`, when the key is short enough. */
  readonly set: (key: string, text: string) => void
  readonly stats: { hits: number; misses: number; readonly size: () => number }
}

/**
 * A cache with `options`; `undefined` when turned off.
 *
 * @since 0.1.0
 */
export const make = (options: Options = defaults): RenderCache | undefined => {
  if (options.entries <= 0) return undefined
  const lru = new Lru<string, string>(options.entries)
  const stats = { hits: 0, misses: 0, size: () => lru.size }
  return {
    stats,
    get: (key) => {
      const text = lru.get(key)
      if (text === undefined) stats.misses++
      else stats.hits++
      return text
    },
    set: (key, text) => {
      if (key.length <= options.maxKeyLength) lru.set(key, text)
    }
  }
}
