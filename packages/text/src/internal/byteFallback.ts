/**
 * Python's `ByteFallback` decoding for `@huggingface/tokenizers`' decoders: a run of byte tokens
 * that is not valid UTF-8 becomes one U+FFFD per byte token, as `decoders/byte_fallback.rs` does.
 *
 * @since 0.2.0
 * @internal
 */

/** A decoder of the library, as far as {@link pythonByteFallback} reads it. */
export interface LibraryDecoder {
  readonly config?: { readonly type?: unknown }
  readonly decoders?: ReadonlyArray<LibraryDecoder>
  decode_chain?: (tokens: Array<string>) => Array<string>
}

export const BYTE_TOKEN = /^<0x([0-9A-Fa-f]{2})>$/

/**
 * Gives the library's `ByteFallback` decoders Python's semantics. The library decodes a run of
 * byte tokens with a lossy `TextDecoder` (one U+FFFD per bad subsequence, the valid bytes kept);
 * Python's `tokenizers` makes the whole run one U+FFFD per byte token when it is not valid UTF-8
 * (`decoders/byte_fallback.rs`). Returns whether the tokenizer has one.
 */
export const pythonByteFallback = (decoder: LibraryDecoder | null): boolean => {
  if (decoder === null) return false
  let found = false
  for (const inner of decoder.decoders ?? []) found = pythonByteFallback(inner) || found
  if (decoder.config?.type !== "ByteFallback") return found
  const strict = new TextDecoder("utf-8", { fatal: true })
  decoder.decode_chain = (tokens) => {
    const out: Array<string> = []
    let bytes: Array<number> = []
    const flush = () => {
      if (bytes.length === 0) return
      try {
        out.push(strict.decode(Uint8Array.from(bytes)))
      } catch {
        for (let i = 0; i < bytes.length; i++) out.push("\uFFFD")
      }
      bytes = []
    }
    for (const token of tokens) {
      const byte = BYTE_TOKEN.exec(token)
      if (byte !== null) bytes.push(parseInt(byte[1]!, 16))
      else {
        flush()
        out.push(token)
      }
    }
    flush()
    return out
  }
  return true
}
