/**
 * A Hugging Face tokenizer for the test engines' vocabulary: a word-level `tokenizer.json` and a
 * `tokenizer_config.json` (eos, unk, a small chat template) generated from {@link Vocabulary}, so
 * the tokens the test engines generate detokenize to their words end to end, through the same
 * tokenizer code a real model's files go through (`@mcore-effect/text`, Python's `tokenizers`).
 *
 * Ids 0..64 are {@link Vocabulary.words} (0 is `<|endoftext|>`, the eos); after them come `<unk>`
 * (what a word outside the vocabulary encodes to) and the chat template's special tokens
 * `<|system|>`, `<|user|>`, `<|assistant|>`, `<|tool|>`, `<|end|>`. Text is split on whitespace;
 * decoding joins the words with single spaces, exactly as `Vocabulary.detokenize` does.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import * as Vocabulary from "./Vocabulary.ts"

/**
 * The special tokens after the vocabulary's words, in id order.
 *
 * @category constants
 * @since 0.1.0
 */
export const specialTokens: ReadonlyArray<string> = ["<unk>", "<|system|>", "<|user|>", "<|assistant|>", "<|tool|>", "<|end|>"]

/**
 * The id of a special token (or of a word).
 *
 * @example
 * ```ts
 * import { WordTokenizer } from "@mcore-effect/testkit"
 *
 * WordTokenizer.idOf("<|assistant|>") // 68
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const idOf = (token: string): number | undefined => {
  const special = specialTokens.indexOf(token)
  if (special >= 0) return Vocabulary.size + special
  const word = Vocabulary.words.indexOf(token)
  return word >= 0 ? word : undefined
}

/**
 * The chat template: each message as `<|role|> content <|end|> `, then `<|assistant|>` when a
 * generation prompt is asked for; any other role is refused with `raise_exception`.
 *
 * @category constants
 * @since 0.1.0
 */
export const chatTemplate: string = [
  "{%- for message in messages %}",
  "    {%- if message.role not in ['system', 'user', 'assistant', 'tool'] %}",
  "        {{- raise_exception('unknown role: ' + message.role) }}",
  "    {%- endif %}",
  "    {{- '<|' + message.role + '|> ' + message.content + ' <|end|> ' }}",
  "{%- endfor %}",
  "{%- if add_generation_prompt %}",
  "    {{- '<|assistant|>' }}",
  "{%- endif %}"
].join("\n")

const addedToken = (id: number, content: string) => ({
  id,
  content,
  single_word: false,
  lstrip: false,
  rstrip: false,
  normalized: false,
  special: true
})

/**
 * `tokenizer.json`: a `WordLevel` model over the vocabulary and the special tokens, a
 * `WhitespaceSplit` pre-tokenizer, no decoder (tokens joined with spaces).
 *
 * @category utils
 * @since 0.1.0
 */
export const tokenizerJson = (): Record<string, unknown> => {
  const vocab: Record<string, number> = {}
  Vocabulary.words.forEach((word, id) => (vocab[word] = id))
  specialTokens.forEach((token, i) => (vocab[token] = Vocabulary.size + i))
  return {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: [
      addedToken(Vocabulary.eod, Vocabulary.words[Vocabulary.eod]!),
      ...specialTokens.map((token, i) => addedToken(Vocabulary.size + i, token))
    ],
    normalizer: null,
    pre_tokenizer: { type: "WhitespaceSplit" },
    post_processor: null,
    decoder: null,
    model: { type: "WordLevel", vocab, unk_token: "<unk>" }
  }
}

/**
 * `tokenizer_config.json`: eos `<|endoftext|>` (the engines' end-of-document id 0), unk `<unk>`,
 * no bos, no clean-up of tokenization spaces (so `fox .` stays as the vocabulary writes it), and
 * {@link chatTemplate}.
 *
 * @category utils
 * @since 0.1.0
 */
export const tokenizerConfig = (): Record<string, unknown> => {
  const decoder: Record<string, unknown> = {}
  for (const token of tokenizerJson().added_tokens as ReadonlyArray<ReturnType<typeof addedToken>>) {
    const { id, ...rest } = token
    decoder[String(id)] = rest
  }
  return {
    added_tokens_decoder: decoder,
    bos_token: null,
    eos_token: Vocabulary.words[Vocabulary.eod],
    unk_token: "<unk>",
    pad_token: Vocabulary.words[Vocabulary.eod],
    clean_up_tokenization_spaces: false,
    model_max_length: 1 << 20,
    tokenizer_class: "PreTrainedTokenizerFast",
    chat_template: chatTemplate
  }
}

/**
 * Writes `tokenizer.json` and `tokenizer_config.json` into `directory` (which must exist).
 *
 * @category utils
 * @since 0.1.0
 */
export const write = (directory: string): Effect.Effect<void> =>
  Effect.promise(() =>
    Promise.all([
      Fs.writeFile(Path.join(directory, "tokenizer.json"), JSON.stringify(tokenizerJson(), null, 2)),
      Fs.writeFile(Path.join(directory, "tokenizer_config.json"), JSON.stringify(tokenizerConfig(), null, 2))
    ])
  )

/**
 * A tokenizer directory in a fresh temporary directory, removed when the scope closes; for
 * `--tokenizer DIR` and anything else that loads a tokenizer from disk.
 *
 * @example
 * ```ts
 * import { WordTokenizer } from "@mcore-effect/testkit"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const directory = yield* WordTokenizer.directory
 *   // Tokenizer.fromDirectory(directory) from @mcore-effect/text
 *   return directory
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const directory: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "mcore-word-tokenizer-"))).pipe(
    Effect.tap((dir) => write(dir))
  ),
  (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
)
