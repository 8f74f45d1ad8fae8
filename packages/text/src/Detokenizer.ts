/**
 * The incremental detokenizer: token ids in, as they stream, text deltas out. Three promises:
 *
 * - the deltas, concatenated (with {@link Detokenizer.finish}'s rest), equal decoding the whole
 *   sequence at once, however the ids were split into pushes;
 * - no replacement character for a UTF-8 sequence that a later token completes (a CJK character
 *   or an emoji spread over several byte-level tokens is held back until it is whole);
 * - the cost per token is flat in the sequence length: nothing is decoded twice.
 *
 * How, by the tokenizer's decoder ({@link Tokenizer.Decoding}):
 *
 * - byte-level (Qwen, Llama 3, GPT-2): each token's bytes, computed once per id, go through one
 *   streaming UTF-8 decoder (WHATWG `TextDecoder` with `stream: true`, which holds an incomplete
 *   sequence until its last byte). An added token is written as it is, after flushing the decoder
 *   (the library decodes the bytes between added tokens as separate runs). A token whose bytes are whole UTF-8 on their own (every token of an English text) is given
 *   as its text, known once per id, when the decoder holds nothing back: no decoder call.
 * - joined (no decoder): each token's string, after a space.
 * - anything else: the prefix-window method of vLLM and TGI, decoding a window of the last few
 *   tokens twice per push through the library, far dearer, which is why the two common kinds
 *   above do not use it (PERFORMANCE.md#byte-level-tokens-through-one-streaming-utf-8-decoder).
 *
 * Stop strings are applied to the text: text that could still become the start of a stop string
 * is held back; once one appears the text ends where it begins, and nothing more is emitted.
 *
 * @since 0.1.0
 */
import { ByteLevelDecoder, type Decoder, JoinedDecoder, WindowedDecoder } from "./internal/tokenDecoders.ts"
import type * as Tokenizer from "./Tokenizer.ts"

/**
 * Options of {@link make}.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Leave special tokens out of the text (default false, as `Tokenizer.decode`). */
  readonly skipSpecialTokens?: boolean | undefined
  /** Strings that end the text where they begin (the stop string itself is not emitted). */
  readonly stop?: ReadonlyArray<string> | undefined
}

/**
 * A detokenizer for one sequence. Not shared between sequences: it holds the sequence's state.
 *
 * @category models
 * @since 0.1.0
 */
export interface Detokenizer {
  /**
   * Feeds the next ids; returns the text they complete ("" when nothing can be emitted yet, and
   * always "" once a stop string was found).
   */
  push(ids: ReadonlyArray<number>): string
  /**
   * Ends the sequence; returns what was held back: an incomplete UTF-8 sequence (as U+FFFD, as
   * decoding the whole sequence would give it) and text that could have started a stop string.
   * Later pushes return "".
   */
  finish(): string
  /** The stop string that ended the text, once one did. */
  readonly stopString: string | undefined
  /** How many ids were consumed: all pushed, or those up to and including the one that completed a stop string. */
  readonly tokenCount: number
}

// ---------------------------------------------------------------------------------------------
// Stop strings and the public object (the decoders are in internal/tokenDecoders.ts)

class Incremental implements Detokenizer {
  stopString: string | undefined = undefined
  tokenCount = 0
  private finished = false
  /** Text decoded but held back: it could be the start of a stop string. */
  private held = ""
  private readonly maxStop: number
  constructor(
    private readonly decoder: Decoder,
    private readonly stops: ReadonlyArray<string>
  ) {
    this.maxStop = stops.reduce((max, s) => Math.max(max, s.length), 0)
  }

  push(ids: ReadonlyArray<number>): string {
    if (this.finished || this.stopString !== undefined) return ""
    if (this.stops.length === 0) {
      this.tokenCount += ids.length
      return this.decoder.push(ids, 0, ids.length)
    }
    // Token by token, so a stop string ends the count at the token that completed it.
    let out = ""
    for (let i = 0; i < ids.length; i++) {
      this.tokenCount++
      out += this.filter(this.decoder.push(ids, i, i + 1))
      if (this.stopString !== undefined) break
    }
    return out
  }

  finish(): string {
    if (this.finished || this.stopString !== undefined) return ""
    const rest = this.stops.length === 0 ? this.decoder.finish() : this.filter(this.decoder.finish())
    this.finished = true
    const held = this.held
    this.held = ""
    return rest + held
  }

  /** Emits what cannot be part of a stop string; holds the rest; cuts at a stop string. */
  private filter(text: string): string {
    if (text === "") return ""
    const all = this.held + text
    let cut = -1
    for (const stop of this.stops) {
      // A match lies wholly in the new text or overlaps the held part (which held no match).
      const at = all.indexOf(stop, Math.max(0, this.held.length - stop.length + 1))
      if (at >= 0 && (cut < 0 || at < cut)) {
        cut = at
        this.stopString = stop
      }
    }
    if (cut >= 0) {
      this.held = ""
      return all.slice(0, cut)
    }
    let keep = Math.min(this.maxStop - 1, all.length)
    for (; keep > 0; keep--) {
      const tail = all.slice(all.length - keep)
      if (this.stops.some((stop) => stop.startsWith(tail))) break
    }
    this.held = all.slice(all.length - keep)
    return all.slice(0, all.length - keep)
  }
}

/**
 * A detokenizer for one sequence of `tokenizer`'s ids.
 *
 * @example
 * ```ts
 * import { Detokenizer, Tokenizer } from "@mcore-effect/text"
 *
 * declare const tokenizer: Tokenizer.Service
 * const detokenizer = Detokenizer.make(tokenizer, { skipSpecialTokens: true, stop: ["\n\n"] })
 * let text = ""
 * for (const ids of [[9707], [1879, 0]]) text += detokenizer.push(ids)
 * text += detokenizer.finish()
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (tokenizer: Tokenizer.Service, options?: Options | undefined): Detokenizer => {
  const skip = options?.skipSpecialTokens === true
  const kind = tokenizer.decoding.kind
  const decoder = kind === "byteLevel"
    ? new ByteLevelDecoder(tokenizer, skip)
    : kind === "joined"
    ? new JoinedDecoder(tokenizer, skip)
    : new WindowedDecoder(tokenizer, skip)
  return new Incremental(decoder, (options?.stop ?? []).filter((s) => s !== ""))
}
