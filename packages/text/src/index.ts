/**
 * Text in, text out over the inference client: a Hugging Face tokenizer, chat templates rendered
 * as transformers renders them, an incremental detokenizer, streamed text, and an Effect AI
 * `LanguageModel` backed by a Megatron deployment.
 *
 * @since 0.1.0
 */
export * as ChatTemplate from "./ChatTemplate.ts"
export * as Detokenizer from "./Detokenizer.ts"
export * as LanguageModel from "./LanguageModel.ts"
export * as TextError from "./TextError.ts"
export * as TextGeneration from "./TextGeneration.ts"
export * as Tokenizer from "./Tokenizer.ts"
