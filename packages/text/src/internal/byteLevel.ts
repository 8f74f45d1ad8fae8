/**
 * A faster, identical ByteLevel pre-tokenizer step for `@huggingface/tokenizers`.
 *
 * The library maps each pre-token to GPT-2's byte-to-unicode alphabet through a `TextEncoder`,
 * an `Array.from` and a `join` per pre-token (`ByteLevel.pre_tokenize_text`), a visible share of
 * the server's CPU (PERFORMANCE.md#the-bytelevel-pre-tokenizer-step-srcinternalbytelevelts).
 * A UTF-16 unit below 128 is its own UTF-8 byte, so a pre-token of ASCII maps unit by unit
 * through a 128-entry table; any other pre-token goes the library's way. The result is the
 * library's, character for character.
 *
 * @since 0.1.0
 * @internal
 */

/** The library's ByteLevel pre-tokenizer, as far as its `pre_tokenize_text` reads it. */
interface ByteLevel {
  readonly add_prefix_space: boolean
  readonly use_regex: boolean
  readonly pattern: RegExp
  readonly byte_encoder: Readonly<Record<number, string>>
  readonly text_encoder: { encode(text: string): Uint8Array }
  pre_tokenize_text: (text: string, options?: unknown) => Array<string>
}

const isByteLevel = (u: unknown): u is ByteLevel =>
  typeof u === "function" || (typeof u === "object" && u !== null)
    ? typeof (u as Partial<ByteLevel>).pre_tokenize_text === "function" &&
      typeof (u as Partial<ByteLevel>).text_encoder?.encode === "function" &&
      typeof (u as Partial<ByteLevel>).byte_encoder === "object" &&
      (u as Partial<ByteLevel>).pattern instanceof RegExp
    : false

const speedUp = (pre: ByteLevel): void => {
  const ascii: Array<string> = []
  for (let b = 0; b < 128; b++) ascii.push(pre.byte_encoder[b]!)
  const slow = (token: string): string => Array.from(pre.text_encoder.encode(token), (byte: number) => pre.byte_encoder[byte]).join("")
  const map = (token: string): string => {
    let out = ""
    for (let i = 0; i < token.length; i++) {
      const unit = token.charCodeAt(i)
      if (unit >= 128) return slow(token)
      out += ascii[unit]
    }
    return out
  }
  pre.pre_tokenize_text = (text) => {
    if (pre.add_prefix_space && !text.startsWith(" ")) text = " " + text
    const tokens = pre.use_regex ? text.match(pre.pattern) ?? [] : [text]
    return tokens.map(map)
  }
}

/**
 * Installs the faster step on every ByteLevel pre-tokenizer of `preTokenizer` (the library's
 * `Tokenizer.pre_tokenizer`, a `Sequence` of them included). Returns how many it found.
 *
 * @since 0.1.0
 */
export const install = (preTokenizer: unknown): number => {
  if (isByteLevel(preTokenizer)) {
    speedUp(preTokenizer)
    return 1
  }
  const inner = (preTokenizer as { readonly tokenizers?: unknown } | null)?.tokenizers
  if (!Array.isArray(inner)) return 0
  let found = 0
  for (const pre of inner) found += install(pre)
  return found
}
