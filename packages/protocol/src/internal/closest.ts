/**
 * "Did you mean ...?" for a misspelt name: the candidate a name most resembles, if any resembles
 * it closely enough to be worth saying. Only error paths call it, so it favours clarity over
 * speed (a table per call; the candidate lists are a few dozen short names).
 *
 * @since 0.1.0
 * @internal
 */

/** Case and separators do not count: `topK`, `top-k`, `TOP_K` are all `top_k`. */
const normalize = (name: string): string => name.toLowerCase().replace(/[_\-\s]/g, "")

/** Levenshtein distance (insertions, deletions, substitutions), two rows at a time. */
const distance = (a: string, b: string): number => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)
      )
    }
    previous = current
  }
  return previous[b.length]!
}

/**
 * The candidate `name` most resembles, or null: an alias the caller knows for it (another API's
 * name for the same thing, such as OpenAI's `max_tokens`), else a candidate equal to it up to case
 * and separators, else the nearest by edit distance when at most 2 edits and under a third of the
 * name (so `tk` suggests nothing, while `temprature` suggests `temperature`). Ties go to the
 * earlier candidate.
 *
 * @since 0.1.0
 * @internal
 */
export const closest = (
  name: string,
  candidates: ReadonlyArray<string>,
  aliases: Readonly<Record<string, string>> = {}
): string | null => {
  const key = normalize(name)
  for (const alias of Object.keys(aliases)) {
    if (normalize(alias) === key) return aliases[alias]!
  }
  let best: string | null = null
  let bestDistance = Math.min(2, Math.ceil(key.length / 3) - 1)
  for (const candidate of candidates) {
    const d = distance(key, normalize(candidate))
    if (d === 0) return candidate
    if (d <= bestDistance && (best === null || d < bestDistance)) {
      best = candidate
      bestDistance = d
    }
  }
  return best
}
