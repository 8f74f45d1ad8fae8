/**
 * Text in, text out over the inference client: a Hugging Face tokenizer, chat templates, an
 * incremental detokenizer, streamed text and an Effect `LanguageModel`.
 *
 * @since 0.1.0
 */
export {}
