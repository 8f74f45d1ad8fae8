/**
 * The top log probs of one token as vLLM gives them: the token itself first, with its own log
 * prob, then the engine's most likely tokens at that step (`generated_top_n_logprobs`, by text),
 * without the token again, `max` in all. Every token that has a log prob gets an entry, whether
 * or not the engine sent alternatives for it (the testkit's engines send none; Megatron's send
 * `top_n_logprobs` of them): clients index `top_logprobs` by token, so its length must be the
 * tokens'.
 *
 * vLLM's completions take `logprobs + 1` entries (the sampled token and the top `logprobs`,
 * OpenAI's definition), its chats `top_logprobs` entries (`_create_completion_logprobs`,
 * `_get_top_logprobs` in vLLM's serving code).
 *
 * @since 0.1.0
 */

/**
 * The entries of one token, in order: `[token, logprob]` first, then the engine's `top`
 * alternatives in the order it sent them, at most `max` in all.
 *
 * @example
 * ```ts
 * import * as TopLogprobs from "./TopLogprobs.ts"
 *
 * TopLogprobs.entries(" fox", -0.5, { " fox": -0.5, " dog": -1.2 }, 2) // [[" fox", -0.5], [" dog", -1.2]]
 * TopLogprobs.entries(" fox", -0.5, undefined, 2) // [[" fox", -0.5]]
 * ```
 *
 * @since 0.1.0
 */
export const entries = (
  token: string,
  logprob: number,
  top: Readonly<Record<string, number>> | null | undefined,
  max: number
): Array<readonly [string, number]> => {
  if (max <= 0) return []
  const out: Array<readonly [string, number]> = [[token, logprob]]
  if (top == null) return out
  for (const key in top) {
    if (out.length >= max) break
    if (key !== token && Object.hasOwn(top, key)) out.push([key, top[key]!])
  }
  return out
}

/**
 * {@link entries} as a completions choice's `top_logprobs` item (an object by token text).
 *
 * @since 0.1.0
 */
export const record = (
  token: string,
  logprob: number,
  top: Readonly<Record<string, number>> | null | undefined,
  max: number
): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const [key, value] of entries(token, logprob, top, max)) out[key] = value
  return out
}
