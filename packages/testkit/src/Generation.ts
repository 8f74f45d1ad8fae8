/**
 * The test engines' "model": a deterministic token stream derived from the prompt alone. The
 * same prompt tokens always give the same stream, whatever the engine, the batch or the timing,
 * so a test can compute the tokens a request will produce (to pick a `termination_id` or a stop
 * word that will be hit, or to check a reply).
 *
 * @since 0.1.0
 */
import * as Vocabulary from "./Vocabulary.ts"

/**
 * The seed of a prompt's stream: a 32-bit FNV-1a over its token ids.
 *
 * @category utils
 * @since 0.1.0
 */
export const seedOf = (promptTokens: ReadonlyArray<number>): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < promptTokens.length; i++) {
    // Mix every byte of the id (ids may exceed 16 bits).
    let v = promptTokens[i]! >>> 0
    for (let b = 0; b < 4; b++) {
      h ^= v & 0xff
      h = Math.imul(h, 0x01000193)
      v >>>= 8
    }
  }
  return h >>> 0
}

/** murmur3's 32-bit finalizer: spreads consecutive inputs over the whole range. */
const mix = (x: number): number => {
  x ^= x >>> 16
  x = Math.imul(x, 0x85ebca6b)
  x ^= x >>> 13
  x = Math.imul(x, 0xc2b2ae35)
  x ^= x >>> 16
  return x >>> 0
}

/**
 * The token at position `index` of the stream of `seed`; always a vocabulary word, never the
 * end-of-document token (id 0).
 *
 * @category utils
 * @since 0.1.0
 */
export const tokenAt = (seed: number, index: number): number =>
  1 + (mix((seed ^ Math.imul(index + 1, 0x9e3779b9)) >>> 0) % (Vocabulary.size - 1))

/**
 * The first `count` tokens a test engine generates for a prompt (before any termination or
 * stop word cuts it short).
 *
 * @example
 * ```ts
 * import { Generation, Vocabulary } from "@mcore-effect/testkit"
 *
 * const expected = Generation.tokens(Vocabulary.tokenize("the quick fox"), 4)
 * // use expected[2] as termination_id to stop after three tokens
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const tokens = (promptTokens: ReadonlyArray<number>, count: number): Array<number> => {
  const seed = seedOf(promptTokens)
  const out: Array<number> = []
  for (let i = 0; i < count; i++) out.push(tokenAt(seed, i))
  return out
}

/**
 * A deterministic log probability for a token (test engines report these when
 * `return_log_probs` is set): a negative float that depends on the token only.
 *
 * @category utils
 * @since 0.1.0
 */
export const logProbOf = (token: number): number => -((token % 7) + 1) / 8
