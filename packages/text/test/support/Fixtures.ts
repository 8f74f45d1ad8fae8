/**
 * The reference vectors from Python (written by fixtures/generate.py; see its docstring for what
 * each holds and how it was made).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"

const read = (name: string): unknown =>
  JSON.parse(Fs.readFileSync(Path.join(import.meta.dirname, "..", "fixtures", name), "utf8"))

interface EncodeVector {
  readonly text: string
  readonly ids: ReadonlyArray<number>
  readonly decoded: string
  readonly decodedSkipSpecial?: string
}

interface ChatVector {
  readonly name: string
  readonly messages: ReadonlyArray<{ readonly role: string; readonly content: string; readonly [key: string]: unknown }>
  readonly tools?: ReadonlyArray<unknown>
  readonly addGenerationPrompt: boolean
  readonly variables?: Record<string, unknown>
  readonly rendered: string
  readonly ids: ReadonlyArray<number>
}

/** Qwen3: encode/decode, every prefix of multi-byte texts, chats. */
export const qwen3Vectors = read("qwen3.json") as {
  readonly encode: ReadonlyArray<EncodeVector & { readonly decodedSkipSpecial: string }>
  readonly prefixes: ReadonlyArray<{ readonly text: string | null; readonly ids: ReadonlyArray<number>; readonly decoded: ReadonlyArray<string> }>
  readonly sequences: ReadonlyArray<{ readonly ids: ReadonlyArray<number>; readonly decoded: string; readonly decodedSkipSpecial: string }>
  readonly chats: ReadonlyArray<ChatVector>
}

/** The testkit's word-level tokenizer: encode/decode, chats. */
export const wordVectors = read("word.json") as {
  readonly encode: ReadonlyArray<EncodeVector>
  readonly chats: ReadonlyArray<ChatVector>
}

/** A hand-made SentencePiece-like tokenizer (byte fallback; decoded in windows): encode/decode, random sequences. */
export const sentencePieceVectors = read("sentencepiece_like.json") as {
  readonly encode: ReadonlyArray<EncodeVector>
  readonly sequences: ReadonlyArray<{ readonly ids: ReadonlyArray<number>; readonly decoded: string; readonly decodedSkipSpecial: string }>
}

/** The directory of the hand-made SentencePiece-like tokenizer. */
export const sentencePieceDirectory: string = Path.join(import.meta.dirname, "..", "fixtures", "sentencepiece_like")
