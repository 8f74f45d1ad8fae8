/**
 * What a coordinator reads text with: it tokenizes a text prompt to hash it for prefix routing,
 * and detokenizes a finished request's tokens into `generated_text` (and, on core_v0.16-0.18, a
 * token prompt into `prompt`), as Megatron-LM's coordinator does with the model's tokenizer.
 *
 * @since 0.2.0
 */

/**
 * A tokenizer as the coordinator uses it: synchronous, since it runs in the coordinator's loop
 * once per text prompt and once per finished request.
 *
 * @example
 * ```ts
 * import type { CoordinatorTokenizer } from "@mcore-effect/coordinator"
 *
 * // One token per code point, as Megatron's own test harness tokenizes.
 * const codepoints: CoordinatorTokenizer.CoordinatorTokenizer = {
 *   tokenize: (text) => Array.from(text, (c) => c.codePointAt(0)!),
 *   detokenize: (ids, options) =>
 *     String.fromCodePoint(...ids.filter((id) => !(options?.removeEod === true && id === 0)))
 * }
 * ```
 *
 * @category models
 * @since 0.2.0
 */
export interface CoordinatorTokenizer {
  readonly tokenize: (text: string) => ReadonlyArray<number>
  /**
   * The text of `ids`. With `removeEod`, the end-of-document token is left out, as Megatron's
   * `detokenize(..., remove_EOD=True)` does unless the request set `detokenize_stop_sequence`.
   */
  readonly detokenize: (ids: ReadonlyArray<number>, options?: { readonly removeEod?: boolean | undefined }) => string
}
