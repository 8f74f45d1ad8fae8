/**
 * A bounded cache of tokenized pieces inside `@huggingface/tokenizers`' `encode`.
 *
 * The pipeline (Python's `tokenizers` and this library alike) first splits the text at added
 * tokens (`<|im_start|>`, `<|im_end|>`...), strips around those that say `lstrip` / `rstrip`,
 * normalizes each section, splits it again at normalized added tokens, then pre-tokenizes and
 * runs the model on each remaining piece on its own: a piece's tokens depend on the piece's text
 * and, for a Metaspace pre-tokenizer with `prepend_scheme: "first"`, on whether it lies in the
 * first section; on nothing else. So a cache from (piece, first section or not) to its tokens
 * gives what the library gives, and a chat whose system prompt, template text and earlier turns
 * repeat request after request pays for the new turn only.
 *
 * Why: encoding is a large share of a chat request's CPU
 * (PERFORMANCE.md#the-piece-cache-srcinternalpiececachets).
 *
 * This replaces the instance's `encode_text` by the same steps as the library's 0.2.0 (the
 * version the lockfile pins), with the cache around the pre-tokenizer and model step. It is not
 * installed for a tokenizer that lowercases and strips accents itself
 * (`do_lowercase_and_remove_accent`, a step the library does not export): that one keeps the
 * library's own `encode_text`.
 *
 * @since 0.1.0
 * @internal
 */
import { Lru } from "./Lru.ts"

/** The library's splitter at added tokens: a trie of their texts, one UTF-16 unit per level. */
interface Splitter {
  readonly trie: Record<string, unknown>
  split(text: string): Array<string>
}

/**
 * The library's `DictionarySplitter.split`, skipping the positions no added token starts at
 * (the library walks its trie from every position: PERFORMANCE.md#the-piece-cache-srcinternalpiececachets).
 * Same longest-match rule, same result.
 */
const fastSplit = (splitter: Splitter): ((text: string) => Array<string>) => {
  const root = splitter.trie
  const firsts = new Set<number>()
  for (const key of Object.keys(root)) if (key.length === 1) firsts.add(key.charCodeAt(0))
  return (text) => {
    const result: Array<string> = []
    const n = text.length
    let start = 0
    let i = 0
    while (i < n) {
      if (!firsts.has(text.charCodeAt(i))) {
        i++
        continue
      }
      let node = root as Record<string, unknown> | undefined
      let match: string | undefined
      for (let j = i; j < n; j++) {
        node = node![text[j]!] as Record<string, unknown> | undefined
        if (node === undefined) break
        if (typeof node.end === "string" && node.end !== "") match = node.end
      }
      if (match === undefined) {
        i++
        continue
      }
      if (i > start) result.push(text.slice(start, i))
      result.push(match)
      i += match.length
      start = i
    }
    if (start < n) result.push(text.slice(start))
    return result
  }
}

/** The library's tokenizer, as far as its `encode_text` reads it. */
interface LibraryTokenizer {
  encode_text: (text: string | null) => Array<string> | null
  readonly splitter_unnormalized: Splitter
  readonly splitter_normalized: Splitter
  readonly added_tokens_map: Map<string, { readonly lstrip?: boolean; readonly rstrip?: boolean }>
  readonly remove_space?: boolean | undefined
  readonly do_lowercase_and_remove_accent?: boolean | undefined
  readonly normalizer: ((text: string) => string) | null
  readonly pre_tokenizer: ((text: string, options: { section_index: number }) => Array<string>) | null
  readonly model: (tokens: Array<string>) => Array<string>
}

/**
 * Options of the cache.
 *
 * @since 0.1.0
 */
export interface Options {
  /** Pieces held at most (least recently used forgotten first); 0 turns the cache off. */
  readonly pieces: number
  /** Longer pieces are tokenized every time and never held (bounds the memory). */
  readonly maxPieceLength: number
}

/**
 * The default: 1,024 pieces of at most 4,096 UTF-16 units (and an eighth as many more of texts'
 * first sections), so at most ~9 MB of keys and about as much of tokens held, and a system
 * prompt or a few-shot preamble fits.
 *
 * @since 0.1.0
 */
export const defaults: Options = { pieces: 1_024, maxPieceLength: 4_096 }

/**
 * What the cache did, for tests.
 *
 * @since 0.1.0
 */
export interface Stats {
  hits: number
  misses: number
  readonly size: () => number
}

/** Whitespace trimming as the library does it (JavaScript's `trimStart` / `trimEnd`). */
const stripAround = (pieces: Array<string>, added: LibraryTokenizer["added_tokens_map"]): void => {
  for (let i = 0; i < pieces.length; i++) {
    const token = added.get(pieces[i]!)
    if (token === undefined) continue
    if (token.lstrip === true && i > 0) pieces[i - 1] = pieces[i - 1]!.trimEnd()
    if (token.rstrip === true && i < pieces.length - 1) pieces[i + 1] = pieces[i + 1]!.trimStart()
  }
}

/**
 * Installs the cache on `library` (a `@huggingface/tokenizers` `Tokenizer`). Returns its stats,
 * or `undefined` when it was not installed (turned off, or a tokenizer it does not cover).
 *
 * @since 0.1.0
 */
export const install = (library: object, options: Options = defaults): Stats | undefined => {
  const hf = library as LibraryTokenizer
  if (options.pieces <= 0 || hf.do_lowercase_and_remove_accent === true) return undefined
  if (typeof hf.encode_text !== "function") return undefined
  for (const splitter of [hf.splitter_unnormalized, hf.splitter_normalized]) {
    if (typeof splitter?.split !== "function" || typeof splitter.trie !== "object" || splitter.trie === null) return undefined
  }
  // The first section's pieces apart (Metaspace's `prepend_scheme: "first"` reads it), in a
  // smaller cache of their own: a text has one first section.
  const first = new Lru<string, ReadonlyArray<string>>(Math.ceil(options.pieces / 8))
  const rest = new Lru<string, ReadonlyArray<string>>(options.pieces)
  const stats: Stats = { hits: 0, misses: 0, size: () => first.size + rest.size }
  const splitUnnormalized = fastSplit(hf.splitter_unnormalized)
  const splitNormalized = fastSplit(hf.splitter_normalized)
  const { maxPieceLength } = options
  const added = hf.added_tokens_map

  const tokenize = (piece: string, sectionIndex: number): ReadonlyArray<string> => {
    const cacheable = piece.length <= maxPieceLength
    const cache = sectionIndex === 0 ? first : rest
    if (cacheable) {
      const held = cache.get(piece)
      if (held !== undefined) {
        stats.hits++
        return held
      }
      stats.misses++
    }
    const words = hf.pre_tokenizer !== null ? hf.pre_tokenizer(piece, { section_index: sectionIndex }) : [piece]
    const tokens = hf.model(words)
    if (cacheable) cache.set(piece, tokens)
    return tokens
  }

  hf.encode_text = (text) => {
    if (text === null) return null
    const out: Array<string> = []
    const sections = splitUnnormalized(text)
    stripAround(sections, added)
    for (let sectionIndex = 0; sectionIndex < sections.length; sectionIndex++) {
      let section = sections[sectionIndex]!
      if (section.length === 0) continue
      if (added.has(section)) {
        out.push(section)
        continue
      }
      if (hf.remove_space === true) section = section.trim().split(/\s+/).join(" ")
      if (hf.normalizer !== null) section = hf.normalizer(section)
      if (section.length === 0) continue
      const pieces = splitNormalized(section)
      stripAround(pieces, added)
      for (const piece of pieces) {
        if (piece.length === 0) continue
        if (added.has(piece)) {
          out.push(piece)
          continue
        }
        const tokens = tokenize(piece, sectionIndex)
        for (let i = 0; i < tokens.length; i++) out.push(tokens[i]!)
      }
    }
    return out
  }
  return stats
}
