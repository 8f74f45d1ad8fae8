/**
 * A Hugging Face tokenizer as an Effect service: loaded from a local tokenizer directory
 * (`tokenizer.json`, `tokenizer_config.json`, optionally `chat_template.jinja` and
 * `generation_config.json`) with `@huggingface/tokenizers` (pure JavaScript), never from the
 * network. Encode, decode, the special tokens, the eos ids and the chat template.
 *
 * Loading Qwen3's 11 MB `tokenizer.json` takes about 1.5 s (JSON parse and the BPE merges), so a
 * program loads it once, in a layer.
 *
 * @since 0.1.0
 */
import { Tokenizer as HfTokenizer } from "@huggingface/tokenizers"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import { BYTE_TOKEN, type LibraryDecoder, pythonByteFallback } from "./internal/byteFallback.ts"
import * as ByteLevel from "./internal/byteLevel.ts"
import * as PieceCache from "./internal/pieceCache.ts"
import { readJson, readText } from "./internal/tokenizerFiles.ts"
import { FileNotFound, MalformedFile, type TextError, textError } from "./TextError.ts"

/**
 * Options of {@link Service.encode}.
 *
 * @category models
 * @since 0.1.0
 */
export interface EncodeOptions {
  /**
   * Add the special tokens the tokenizer's post-processor adds (a bos, for some models). Default
   * true, as transformers' `encode`; a rendered chat template already holds them, so prompts from
   * a chat are encoded with false (as `apply_chat_template` does).
   */
  readonly addSpecialTokens?: boolean | undefined
}

/**
 * Options of loading a tokenizer ({@link fromDirectory}, {@link fromFiles}, {@link layer}).
 *
 * @category models
 * @since 0.1.0
 */
export interface LoadOptions {
  /**
   * How many tokenized pieces `encode` keeps (least recently used forgotten first; default
   * 1,024, 0 turns it off). A piece is the text between two added tokens (`<|im_start|>`...),
   * tokenized on its own by the pipeline, so what the cache gives is exactly what tokenizing
   * gives; a chat's system prompt and template text are then tokenized once, not per request.
   * Pieces longer than 4,096 UTF-16 units are never held.
   */
  readonly pieceCache?: number | undefined
}

/**
 * Options of {@link Service.decode}.
 *
 * @category models
 * @since 0.1.0
 */
export interface DecodeOptions {
  /** Leave special tokens (eos, `<|im_start|>`, ...) out of the text. Default false. */
  readonly skipSpecialTokens?: boolean | undefined
}

/**
 * How the tokenizer turns ids back into text, as far as the incremental detokenizer needs to
 * know it: the token strings, which ids are added tokens (written out verbatim) and which of those
 * are special, and the decoder's kind.
 *
 * - `byteLevel`: each token string maps to bytes (GPT-2's byte-to-unicode table), the text is
 *   their UTF-8 decoding; added tokens are written as they are (Qwen, Llama 3, GPT-2).
 * - `joined`: no decoder, the token strings joined with single spaces (word-level tokenizers).
 * - `other`: any other decoder (Metaspace, WordPiece, ByteFallback sequences...), or any decoder
 *   followed by the tokenization-space clean-up: decoded through the library, in windows.
 *
 * @category models
 * @since 0.1.0
 */
export interface Decoding {
  readonly kind: "byteLevel" | "joined" | "other"
  /**
   * The decoder turns byte tokens (`<0x41>`) into text (SentencePiece-style byte fallback): a run
   * of them is only text once it ends, so the detokenizer holds it back until then.
   */
  readonly byteFallback: boolean
  /** True for the id of a byte token (`<0x41>`) when the decoder has byte fallback. */
  readonly isByteToken: (id: number) => boolean
  /** The token string of each id (added tokens included); `undefined` for an id with none. */
  readonly tokens: ReadonlyArray<string | undefined>
  /** The ids of added tokens, with whether each is special. */
  readonly added: ReadonlyMap<number, { readonly content: string; readonly special: boolean }>
}

/**
 * The service.
 *
 * @category models
 * @since 0.1.0
 */
export interface Service {
  /** Where the tokenizer came from: its directory, or a name given to an in-memory one. */
  readonly source: string
  /** Text to token ids. */
  readonly encode: (text: string, options?: EncodeOptions | undefined) => Array<number>
  /**
   * Token ids to text. Ids the vocabulary does not hold are left out (as Python's `tokenizers`
   * does); an empty list decodes to "".
   */
  readonly decode: (ids: ReadonlyArray<number>, options?: DecodeOptions | undefined) => string
  /**
   * The ids that end a generation: the config's `eos_token`, and `generation_config.json`'s
   * `eos_token_id` (one or several) when the directory holds one.
   */
  readonly eosTokenIds: ReadonlyArray<number>
  /** `bos_token` of the config, when it has one. */
  readonly bosToken: string | undefined
  /** `eos_token` of the config, when it has one. */
  readonly eosToken: string | undefined
  /**
   * What transformers calls `special_tokens_map` (`bos_token`, `eos_token`, `unk_token`,
   * `sep_token`, `pad_token`, `cls_token`, `mask_token`, `additional_special_tokens`, those set):
   * the variables a chat template sees beside the messages.
   */
  readonly specialTokensMap: Readonly<Record<string, string | ReadonlyArray<string>>>
  /**
   * The chat templates by name: `default` for a single `chat_template` (or
   * `chat_template.jinja`), the names of a list of named templates otherwise (`tool_use`...).
   */
  readonly chatTemplates: ReadonlyMap<string, string>
  /** True for the id of a special token. */
  readonly isSpecial: (id: number) => boolean
  /** The id of a token string (`"<|im_end|>"`), if the vocabulary holds it. */
  readonly tokenToId: (token: string) => number | undefined
  /** How many ids the vocabulary has (added tokens included): ids lie in `[0, vocabSize)`. */
  readonly vocabSize: number
  /** For the incremental detokenizer: see {@link Decoding}. */
  readonly decoding: Decoding
}

/**
 * The `Tokenizer` service.
 *
 * @example
 * ```ts
 * import { Tokenizer } from "@mcore-effect/text"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const tokenizer = yield* Tokenizer.Tokenizer
 *   const ids = tokenizer.encode("Hello world")
 *   return tokenizer.decode(ids)
 * }).pipe(Effect.provide(Tokenizer.layer("/models/qwen3")))
 * ```
 *
 * @category services
 * @since 0.1.0
 */
export class Tokenizer extends Context.Service<Tokenizer, Service>()("@mcore-effect/text/Tokenizer") {}

/**
 * The two JSON documents of a tokenizer, and what else a directory may add.
 *
 * @category models
 * @since 0.1.0
 */
export interface Files {
  /** The parsed `tokenizer.json`. */
  readonly tokenizer: unknown
  /** The parsed `tokenizer_config.json`. */
  readonly config: unknown
  /** The text of `chat_template.jinja`, which takes precedence over the config's `chat_template`. */
  readonly chatTemplate?: string | undefined
  /** The parsed `generation_config.json`, for its `eos_token_id`. */
  readonly generationConfig?: unknown
}

type Json = Record<string, unknown>

const isObject = (u: unknown): u is Json => typeof u === "object" && u !== null && !Array.isArray(u)

/** A token in a config: a string, or an AddedToken object with `content` (older configs). */
const tokenContent = (u: unknown): string | undefined =>
  typeof u === "string" ? u : isObject(u) && typeof u.content === "string" ? u.content : undefined

const SPECIAL_KEYS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"] as const

const malformed = (path: string, why: string): TextError => textError(new MalformedFile({ path, why }))

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const chatTemplatesOf = (files: Files, configPath: string): Map<string, string> | TextError => {
  const templates = new Map<string, string>()
  if (files.chatTemplate !== undefined) {
    templates.set("default", files.chatTemplate)
    return templates
  }
  const value = (files.config as Json).chat_template
  if (value === undefined || value === null) return templates
  if (typeof value === "string") {
    templates.set("default", value)
    return templates
  }
  if (Array.isArray(value)) {
    for (const entry of value) {
      if (!isObject(entry) || typeof entry.name !== "string" || typeof entry.template !== "string") {
        return malformed(configPath, "chat_template: a list entry should be { name, template } with two strings")
      }
      templates.set(entry.name, entry.template)
    }
    return templates
  }
  return malformed(configPath, "chat_template should be a string or a list of { name, template }")
}

const eosIdsOf = (files: Files, tokenToId: (token: string) => number | undefined, eosToken: string | undefined) => {
  const ids: Array<number> = []
  const add = (id: unknown) => {
    if (typeof id === "number" && Number.isSafeInteger(id) && id >= 0 && !ids.includes(id)) ids.push(id)
  }
  if (eosToken !== undefined) add(tokenToId(eosToken))
  if (isObject(files.generationConfig)) {
    const eos = files.generationConfig.eos_token_id
    if (Array.isArray(eos)) eos.forEach(add)
    else add(eos)
  }
  return ids
}

/** GPT-2's byte-level decoders, as `tokenizer.json` spells them. */
const decodingKind = (tokenizerJson: Json, cleanUp: boolean): Decoding["kind"] => {
  const model = tokenizerJson.model
  if (isObject(model) && typeof model.end_of_word_suffix === "string" && model.end_of_word_suffix !== "") return "other"
  if (cleanUp) return "other"
  const decoder = tokenizerJson.decoder
  if (decoder === null || decoder === undefined) return "joined"
  if (isObject(decoder) && decoder.type === "ByteLevel") return "byteLevel"
  return "other"
}

/**
 * Builds a tokenizer from its files already in memory (what {@link fromDirectory} reads). `source`
 * names it in errors and in {@link Service.source}.
 *
 * @example
 * ```ts
 * import { Tokenizer } from "@mcore-effect/text"
 * import { WordTokenizer } from "@mcore-effect/testkit"
 *
 * const tokenizer = Tokenizer.fromFiles({
 *   tokenizer: WordTokenizer.tokenizerJson(),
 *   config: WordTokenizer.tokenizerConfig()
 * }, "word-level")
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromFiles = (
  files: Files,
  source: string,
  options?: LoadOptions | undefined
): Effect.Effect<Service, TextError> =>
  Effect.suspend(() => {
    const tokenizerPath = Path.join(source, "tokenizer.json")
    const configPath = Path.join(source, "tokenizer_config.json")
    if (!isObject(files.tokenizer)) return Effect.fail(malformed(tokenizerPath, "expected a JSON object"))
    if (!isObject(files.config)) return Effect.fail(malformed(configPath, "expected a JSON object"))
    const tokenizerJson = files.tokenizer
    const config = files.config
    if (!isObject(tokenizerJson.model)) return Effect.fail(malformed(tokenizerPath, "no \"model\" object"))
    if (!Array.isArray(tokenizerJson.added_tokens)) return Effect.fail(malformed(tokenizerPath, "no \"added_tokens\" list"))
    let hf: HfTokenizer
    try {
      hf = new HfTokenizer(tokenizerJson, config)
    } catch (cause) {
      return Effect.fail(malformed(tokenizerPath, describe(cause)))
    }
    const templates = chatTemplatesOf(files, configPath)
    if (!(templates instanceof Map)) return Effect.fail(templates)
    ByteLevel.install((hf as unknown as { readonly pre_tokenizer: unknown }).pre_tokenizer)
    PieceCache.install(hf, { ...PieceCache.defaults, pieces: options?.pieceCache ?? PieceCache.defaults.pieces })

    const tokenToId = (token: string) => hf.token_to_id(token)
    const added = new Map<number, { readonly content: string; readonly special: boolean }>()
    for (const [id, token] of hf.get_added_tokens_decoder()) added.set(id, { content: token.content, special: token.special })
    const special = new Set<number>()
    for (const [id, token] of added) if (token.special) special.add(id)
    // The config may name special tokens the tokenizer.json did not flag (additional_special_tokens).
    const extraSpecial = config.additional_special_tokens
    if (Array.isArray(extraSpecial)) {
      for (const token of extraSpecial) {
        const id = typeof token === "string" ? tokenToId(token) : undefined
        if (id !== undefined) special.add(id)
      }
    }

    const specialTokensMap: Record<string, string | ReadonlyArray<string>> = {}
    for (const key of SPECIAL_KEYS) {
      const content = tokenContent(config[key])
      if (content !== undefined) specialTokensMap[key] = content
    }
    if (Array.isArray(extraSpecial)) {
      specialTokensMap.additional_special_tokens = extraSpecial.flatMap((t) => {
        const content = tokenContent(t)
        return content === undefined ? [] : [content]
      })
    }
    const bosToken = tokenContent(config.bos_token)
    const eosToken = tokenContent(config.eos_token)

    const vocab = hf.get_vocab(true)
    let vocabSize = 0
    for (const id of vocab.values()) if (id + 1 > vocabSize) vocabSize = id + 1
    const tokens: Array<string | undefined> = new Array(vocabSize)
    for (const [token, id] of vocab) tokens[id] = token
    // transformers' default when the config does not say (the library's too).
    const cleanUp = config.clean_up_tokenization_spaces === undefined ? true : config.clean_up_tokenization_spaces === true
    const byteFallback = pythonByteFallback(hf.decoder as unknown as LibraryDecoder | null)
    const isByteToken = (id: number) => {
      const token = tokens[id]
      return byteFallback && token !== undefined && BYTE_TOKEN.test(token)
    }
    const decoding: Decoding = { kind: decodingKind(tokenizerJson, cleanUp), byteFallback, isByteToken, tokens, added }
    // Special tokens skipped here, by a set of their strings, rather than by the library, which
    // searches its list of them for every token (`Array.includes`: a fifth of a 64-token reply's
    // detokenization in our coordinator). Not where the library also trims the text when it skips
    // them (a decoder with an end-of-word suffix): that is left to it.
    const library = hf as unknown as { readonly special_tokens: ReadonlyArray<string>; readonly decoder: { readonly end_of_word_suffix?: unknown } | null }
    const specialContents: ReadonlySet<string> = new Set(library.special_tokens)
    const libraryTrims = Boolean(library.decoder?.end_of_word_suffix)

    const service: Service = {
      source,
      encode: (text, options) => hf.encode(text, { add_special_tokens: options?.addSpecialTokens ?? true }).ids,
      decode: (ids, options) => {
        // The library throws on an empty list and maps unknown ids to `undefined`; Python's
        // tokenizers returns "" and leaves unknown ids out.
        const skipHere = options?.skipSpecialTokens === true && !libraryTrims
        const known = ids.filter((id) => {
          const token = Number.isSafeInteger(id) ? tokens[id] : undefined
          return token !== undefined && !(skipHere && specialContents.has(token))
        })
        return known.length === 0
          ? ""
          : hf.decode(known as Array<number>, { skip_special_tokens: options?.skipSpecialTokens === true && libraryTrims })
      },
      eosTokenIds: eosIdsOf(files, tokenToId, eosToken),
      bosToken,
      eosToken,
      specialTokensMap,
      chatTemplates: templates,
      isSpecial: (id) => special.has(id),
      tokenToId,
      vocabSize,
      decoding
    }
    return Effect.succeed(service)
  })

/**
 * Loads a Hugging Face tokenizer directory: `tokenizer.json` and `tokenizer_config.json` (both
 * required), `chat_template.jinja` and `generation_config.json` (when present). Local files only.
 *
 * @example
 * ```ts
 * import { Tokenizer } from "@mcore-effect/text"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const tokenizer = yield* Tokenizer.fromDirectory("/models/qwen3")
 *   return tokenizer.eosTokenIds
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromDirectory = (directory: string, options?: LoadOptions | undefined): Effect.Effect<Service, TextError> =>
  Effect.gen(function*() {
    const stat = yield* Effect.tryPromise({
      try: () => Fs.stat(directory),
      catch: (cause) => textError(new FileNotFound({ path: directory, why: describe(cause) }))
    })
    if (!stat.isDirectory()) {
      return yield* Effect.fail(textError(new FileNotFound({ path: directory, why: "not a directory" })))
    }
    const [tokenizer, config, chatTemplate, generationConfig] = yield* Effect.all([
      readJson(Path.join(directory, "tokenizer.json"), true),
      readJson(Path.join(directory, "tokenizer_config.json"), true),
      readText(Path.join(directory, "chat_template.jinja")),
      readJson(Path.join(directory, "generation_config.json"), false)
    ])
    return yield* fromFiles({ tokenizer, config, chatTemplate, generationConfig }, directory, options)
  }).pipe(Effect.withSpan("Tokenizer.fromDirectory", { attributes: { directory } }))

/**
 * The service from a tokenizer directory (see {@link fromDirectory}).
 *
 * @category layers
 * @since 0.1.0
 */
export const layer = (directory: string, options?: LoadOptions | undefined): Layer.Layer<Tokenizer, TextError> =>
  Layer.effect(Tokenizer, fromDirectory(directory, options))

/**
 * The service from files in memory (see {@link fromFiles}).
 *
 * @category layers
 * @since 0.1.0
 */
export const layerFromFiles = (
  files: Files,
  source: string,
  options?: LoadOptions | undefined
): Layer.Layer<Tokenizer, TextError> => Layer.effect(Tokenizer, fromFiles(files, source, options))
