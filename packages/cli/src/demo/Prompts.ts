/**
 * The demo's prompts: words of the test engines' vocabulary, so what comes back reads as words.
 *
 * @since 0.1.0
 * @internal
 */
import { Generation, Vocabulary } from "@mcore-effect/testkit"

/**
 * The prompts streamed one by one at the start of the demo.
 *
 * @since 0.1.0
 */
export const streamed: ReadonlyArray<string> = [
  "the quick fox jumps over the old stone",
  "a small bird sings near the river",
  "one white cloud and the bright moon",
  "the slow dog sleeps under a large tree",
  "two black cats run into the quiet house",
  "the wind writes on the snow"
]

/**
 * The `i`-th prompt of a batch: six vocabulary words picked by the test engines' own generator,
 * so every prompt is different and every run is the same.
 *
 * @example
 * ```ts
 * import { numbered } from "./Prompts.ts"
 *
 * numbered(0) === numbered(0) // true
 * numbered(0) === numbered(1) // false
 * ```
 *
 * @since 0.1.0
 */
export const numbered = (i: number): string => Vocabulary.detokenize(Generation.tokens([i], 6))
