/**
 * The three ways `Detokenizer` turns streamed ids into text, by the tokenizer's decoder: bytes
 * through one streaming UTF-8 decoder (byte-level), strings joined by spaces (no decoder), and
 * the prefix window of vLLM and TGI (any other). `Detokenizer.ts` says why each.
 *
 * @since 0.2.0
 * @internal
 */
import type * as Tokenizer from "../Tokenizer.ts"

/** The part of a detokenizer that turns ids into text, before stop strings. */
export interface Decoder {
  /** Text for ids[from, to); `end` true when these are the last ones (flush). */
  push(ids: ReadonlyArray<number>, from: number, to: number): string
  finish(): string
}

// ---------------------------------------------------------------------------------------------
// Byte-level

/** GPT-2's `bytes_to_unicode`, reversed: code point -> byte, -1 where none. */
const UNICODE_TO_BYTE: Int16Array = (() => {
  const table = new Int16Array(324).fill(-1)
  let n = 0
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)
    table[printable ? b : 256 + n++] = b
  }
  return table
})()

const utf8 = new TextEncoder()

/**
 * The bytes of a byte-level token string. A string with a character outside the table is not a
 * byte-level token: its own UTF-8 bytes, as Python's `tokenizers` does.
 */
const tokenBytes = (token: string): Uint8Array => {
  const bytes = new Uint8Array(token.length)
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i)
    const b = c < UNICODE_TO_BYTE.length ? UNICODE_TO_BYTE[c]! : -1
    if (b < 0) return utf8.encode(token)
    bytes[i] = b
  }
  return bytes
}

/** Per tokenizer, the bytes of each id, filled as ids are first seen (Qwen3 has 151,669). */
const bytesTables = new WeakMap<Tokenizer.Decoding, Array<Uint8Array | undefined>>()

/**
 * Per tokenizer, the text of each id whose bytes are whole UTF-8 on their own (`null` for one
 * whose are not: part of a character), filled as ids are first seen.
 */
const textTables = new WeakMap<Tokenizer.Decoding, Array<string | null | undefined>>()

const STREAM = { stream: true } as const

/** Decodes only bytes that are whole, valid UTF-8 (else throws), keeping a BOM as it is. */
const wholeUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })

const tableOf = <A>(tables: WeakMap<Tokenizer.Decoding, Array<A>>, decoding: Tokenizer.Decoding): Array<A> => {
  let table = tables.get(decoding)
  if (table === undefined) {
    table = new Array(decoding.tokens.length)
    tables.set(decoding, table)
  }
  return table
}

export class ByteLevelDecoder implements Decoder {
  /**
   * The streaming UTF-8 decoder, made when the first token that is not whole UTF-8 on its own
   * comes: for most tokens (every one of an English text) the text of their bytes is known, and
   * the decoder is not needed (nor its call per token, nor its ~0.1 KB per open stream).
   */
  private utf8: InstanceType<typeof TextDecoder> | undefined = undefined
  /**
   * Continuation bytes the bytes decoded so far still wait for, counted as UTF-8 lays them out.
   * Zero means the decoder holds nothing back (it holds only the start of a sequence that could
   * still be valid, which this count never takes for complete), so a token's whole text can be
   * given without it.
   */
  private need = 0
  private readonly bytes: Array<Uint8Array | undefined>
  private readonly texts: Array<string | null | undefined>
  /**
   * Bytes of several ids decoded as one run; made on first use, since a stream pushes one id at a
   * time (one held from the start costs every open stream memory:
   * PERFORMANCE.md#the-byte-level-decoders-scratch-buffer-made-on-first-use).
   */
  private scratch: Uint8Array | undefined = undefined
  constructor(
    private readonly tokenizer: Tokenizer.Service,
    private readonly skipSpecial: boolean
  ) {
    this.bytes = tableOf(bytesTables, tokenizer.decoding)
    this.texts = tableOf(textTables, tokenizer.decoding)
  }

  push(ids: ReadonlyArray<number>, from: number, to: number): string {
    const { added, tokens } = this.tokenizer.decoding
    // One token (the streaming case): its text when it is whole and nothing is held back, else
    // its bytes straight to the decoder, no copy.
    if (to - from === 1 && !added.has(ids[from]!)) {
      const id = ids[from]!
      if (this.need === 0) {
        const text = this.textOf(id, tokens)
        if (text !== null) return text
      }
      const bytes = this.bytesOf(id, tokens)
      return bytes === undefined ? "" : this.decodeStream(bytes)
    }
    let text = ""
    let length = 0
    let scratch = this.scratch ??= new Uint8Array(256)
    for (let i = from; i < to; i++) {
      const id = ids[i]!
      const addedToken = added.get(id)
      if (addedToken !== undefined) {
        if (this.skipSpecial && this.tokenizer.isSpecial(id)) continue
        text += this.decodeEnd(scratch.subarray(0, length)) + addedToken.content
        length = 0
        continue
      }
      const bytes = this.bytesOf(id, tokens)
      if (bytes === undefined) continue
      if (length + bytes.length > scratch.length) {
        const grown = new Uint8Array(Math.max(scratch.length * 2, length + bytes.length))
        grown.set(scratch.subarray(0, length))
        this.scratch = scratch = grown
      }
      scratch.set(bytes, length)
      length += bytes.length
    }
    return length === 0 ? text : text + this.decodeStream(scratch.subarray(0, length))
  }

  finish(): string {
    return this.decodeEnd(undefined)
  }

  /** `bytes` through the streaming decoder, which holds back an incomplete sequence at the end. */
  private decodeStream(bytes: Uint8Array): string {
    let need = this.need
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!
      if (need > 0 && (b & 0xc0) === 0x80) need--
      else need = b < 0xc0 ? 0 : b < 0xe0 ? 1 : b < 0xf0 ? 2 : b < 0xf8 ? 3 : 0
    }
    this.need = need
    return this.decoder().decode(bytes, STREAM)
  }

  private decoder(): InstanceType<typeof TextDecoder> {
    return this.utf8 ??= new TextDecoder("utf-8", { fatal: false, ignoreBOM: true })
  }

  /** `bytes`, then the end of the run: what the decoder held back becomes replacement characters. */
  private decodeEnd(bytes: Uint8Array | undefined): string {
    this.need = 0
    if (this.utf8 === undefined && (bytes === undefined || bytes.length === 0)) return ""
    return this.decoder().decode(bytes)
  }

  /** The text of a (non-added) id, or `null` when its bytes are not whole UTF-8 on their own. */
  private textOf(id: number, tokens: ReadonlyArray<string | undefined>): string | null {
    let text = this.texts[id]
    if (text === undefined) {
      const bytes = this.bytesOf(id, tokens)
      if (bytes === undefined) return ""
      try {
        text = wholeUtf8.decode(bytes)
      } catch {
        text = null
      }
      this.texts[id] = text
    }
    return text
  }

  /** The bytes of a (non-added) id, computed on first sight; `undefined` for an unknown id. */
  private bytesOf(id: number, tokens: ReadonlyArray<string | undefined>): Uint8Array | undefined {
    let bytes = this.bytes[id]
    if (bytes === undefined) {
      const token = tokens[id]
      if (token === undefined) return undefined
      bytes = tokenBytes(token)
      this.bytes[id] = bytes
    }
    return bytes
  }
}

// ---------------------------------------------------------------------------------------------
// Joined (no decoder)

export class JoinedDecoder implements Decoder {
  private first = true
  constructor(
    private readonly tokenizer: Tokenizer.Service,
    private readonly skipSpecial: boolean
  ) {}

  push(ids: ReadonlyArray<number>, from: number, to: number): string {
    const tokens = this.tokenizer.decoding.tokens
    let text = ""
    for (let i = from; i < to; i++) {
      const id = ids[i]!
      const token = tokens[id]
      if (token === undefined || (this.skipSpecial && this.tokenizer.isSpecial(id))) continue
      text += this.first ? token : " " + token
      this.first = false
    }
    return text
  }

  finish(): string {
    return ""
  }
}

// ---------------------------------------------------------------------------------------------
// Windowed (any other decoder)

export class WindowedDecoder implements Decoder {
  private readonly ids: Array<number> = []
  private prefixOffset = 0
  private readOffset = 0
  /** Whether the last token the decoder sees is a byte-fallback token (`<0x41>`). */
  private endsInByteToken = false
  private readonly options: Tokenizer.DecodeOptions
  constructor(
    private readonly tokenizer: Tokenizer.Service,
    skipSpecial: boolean
  ) {
    this.options = { skipSpecialTokens: skipSpecial }
  }

  push(ids: ReadonlyArray<number>, from: number, to: number): string {
    const { byteFallback, isByteToken, tokens } = this.tokenizer.decoding
    for (let i = from; i < to; i++) {
      const id = ids[i]!
      this.ids.push(id)
      // The last token the decoder sees: skipped special tokens and unknown ids do not end a run.
      if (byteFallback && tokens[id] !== undefined && !(this.options.skipSpecialTokens === true && this.tokenizer.isSpecial(id))) {
        this.endsInByteToken = isByteToken(id)
      }
    }
    const prefix = this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset), this.options)
    const full = this.tokenizer.decode(this.ids.slice(this.prefixOffset), this.options)
    if (full.length <= prefix.length || full.endsWith("\uFFFD") || this.inByteRun()) return ""
    this.prefixOffset = this.readOffset
    this.readOffset = this.ids.length
    // Older ids are never read again.
    if (this.prefixOffset > 4096) {
      this.ids.splice(0, this.prefixOffset)
      this.readOffset -= this.prefixOffset
      this.prefixOffset = 0
    }
    return full.slice(prefix.length)
  }

  /**
   * With byte fallback, a run of byte tokens is text only once it ends: a later byte can turn the
   * whole run into replacement characters (Python's semantics), so no window ends inside one.
   */
  private inByteRun(): boolean {
    return this.endsInByteToken
  }

  finish(): string {
    const prefix = this.tokenizer.decode(this.ids.slice(this.prefixOffset, this.readOffset), this.options)
    const full = this.tokenizer.decode(this.ids.slice(this.prefixOffset), this.options)
    this.prefixOffset = this.readOffset = this.ids.length
    return full.slice(prefix.length)
  }
}
