/**
 * The small built-in vocabulary the test engines generate from and the test coordinator
 * detokenizes with: a fixed list of words, a whitespace tokenizer over it, and the inverse.
 * It stands in for a real tokenizer so text prompts, `stop_words` and `generated_text` work
 * without one, and it is the same on every side (engine, coordinator, test), so a test can
 * compute what it expects.
 *
 * @since 0.1.0
 */

/**
 * The words, by token id. Id 0 is the end-of-document token.
 *
 * @category constants
 * @since 0.1.0
 */
export const words: ReadonlyArray<string> = [
  "<|endoftext|>",
  "the", "a", "an", "one", "two", "three", "four", "five",
  "red", "green", "blue", "black", "white", "small", "large", "quick",
  "slow", "old", "new", "bright", "quiet", "cat", "dog", "fox",
  "bird", "fish", "tree", "river", "stone", "house", "road", "sky",
  "sun", "moon", "star", "cloud", "rain", "wind", "snow", "fire",
  "runs", "jumps", "sleeps", "sings", "reads", "writes", "sees", "finds",
  "over", "under", "near", "far", "into", "from", "with", "and",
  "or", "but", "so", "then", "now", "here", "there", "."
]

/**
 * How many words the vocabulary holds; generated token ids lie in `[1, size)`.
 *
 * @category constants
 * @since 0.1.0
 */
export const size: number = words.length

/**
 * The end-of-document token id (Megatron's `tokenizer.eod`).
 *
 * @category constants
 * @since 0.1.0
 */
export const eod = 0

const ids: ReadonlyMap<string, number> = new Map(words.map((word, id) => [word, id]))

/** Ids of words outside the vocabulary start here, so they never collide with generated ones. */
const UNKNOWN_BASE = 1 << 16

/** FNV-1a over UTF-16 code units: stable, dependency-free, good enough to name unknown words. */
const fnv1a = (text: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return h >>> 0
}

/**
 * Splits text on whitespace and maps each word to its id; a word outside the vocabulary gets a
 * stable id of its own (at or above 65536), so the same text always gives the same ids.
 *
 * @example
 * ```ts
 * import { Vocabulary } from "@mcore-effect/testkit"
 *
 * Vocabulary.tokenize("the quick fox") // [1, 16, 24]
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const tokenize = (text: string): Array<number> => {
  const out: Array<number> = []
  for (const word of text.split(/\s+/)) {
    if (word === "") continue
    out.push(ids.get(word) ?? UNKNOWN_BASE + (fnv1a(word) % UNKNOWN_BASE))
  }
  return out
}

/**
 * The text of one token id (`<id>` for an id outside the vocabulary).
 *
 * @category utils
 * @since 0.1.0
 */
export const word = (id: number): string => words[id] ?? `<${id}>`

/**
 * Joins the words of `tokens` with single spaces. With `removeEod` (Megatron's default unless
 * `detokenize_stop_sequence` is set) end-of-document tokens are left out.
 *
 * @example
 * ```ts
 * import { Vocabulary } from "@mcore-effect/testkit"
 *
 * Vocabulary.detokenize([1, 16, 24, 0], { removeEod: true }) // "the quick fox"
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const detokenize = (
  tokens: ReadonlyArray<number>,
  options?: { readonly removeEod?: boolean | undefined }
): string => {
  const removeEod = options?.removeEod === true
  const parts: Array<string> = []
  for (const id of tokens) {
    if (removeEod && id === eod) continue
    parts.push(word(id))
  }
  return parts.join(" ")
}
