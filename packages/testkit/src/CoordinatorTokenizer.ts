/**
 * The test coordinator's tokenizer: the test vocabulary, which the test engines generate in. A
 * coordinator whose engines run a real model needs that model's tokenizer instead (the
 * interface is the coordinator package's, re-exported here).
 *
 * @since 0.2.0
 */
import type { CoordinatorTokenizer as Tokenizer } from "@mcore-effect/coordinator"
import * as Vocabulary from "./Vocabulary.ts"

/**
 * What a coordinator tokenizes text prompts and detokenizes finished requests with (see the
 * coordinator package's `CoordinatorTokenizer`).
 *
 * @category models
 * @since 0.2.0
 */
export type CoordinatorTokenizer = Tokenizer.CoordinatorTokenizer

/**
 * The test vocabulary (`Vocabulary`): what the test engines generate in, the test coordinator's
 * default.
 *
 * @category constructors
 * @since 0.2.0
 */
export const vocabulary: CoordinatorTokenizer = {
  tokenize: Vocabulary.tokenize,
  detokenize: Vocabulary.detokenize
}
