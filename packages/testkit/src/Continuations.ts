/**
 * A script of chosen continuations for the test engines: for a prompt the script knows, an engine
 * generates the script's tokens (then finishes) instead of the deterministic stream of
 * `Generation`. This is how a test makes an engine "answer" with a given text (a tool call, a
 * `<think>` block) through a real tokenizer: it encodes the answer with that tokenizer and keys it
 * by something the prompt holds.
 *
 * Termination ids, stop words and `num_tokens_to_generate` still apply to a scripted request: the
 * script is what the model would sample, not what the engine returns.
 *
 * @since 0.1.0
 */

/**
 * The continuation of a prompt (its token ids), or `undefined` for the deterministic stream.
 *
 * @category models
 * @since 0.1.0
 */
export type Script = (promptTokens: ReadonlyArray<number>) => ReadonlyArray<number> | undefined

/** Whether `ids` holds `needle` as a contiguous run. */
const holds = (ids: ReadonlyArray<number>, needle: ReadonlyArray<number>): boolean => {
  if (needle.length === 0) return true
  outer: for (let i = 0; i + needle.length <= ids.length; i++) {
    for (let j = 0; j < needle.length; j++) if (ids[i + j] !== needle[j]) continue outer
    return true
  }
  return false
}

/**
 * A script from entries: the first entry whose `when` ids the prompt holds (as a contiguous run)
 * gives the continuation.
 *
 * @example
 * ```ts
 * import { Continuations, TestCluster, Vocabulary } from "@mcore-effect/testkit"
 *
 * const script = Continuations.whenPromptHolds([
 *   { when: Vocabulary.tokenize("weather"), then: Vocabulary.tokenize("sunny today") }
 * ])
 * const cluster = TestCluster.make({ engine: { continuations: script } })
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const whenPromptHolds = (
  entries: ReadonlyArray<{ readonly when: ReadonlyArray<number>; readonly then: ReadonlyArray<number> }>
): Script =>
(promptTokens) => {
  for (const entry of entries) if (holds(promptTokens, entry.when)) return entry.then
  return undefined
}
