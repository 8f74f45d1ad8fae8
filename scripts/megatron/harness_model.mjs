// harness_model.py's model, for the JavaScript drivers (drive_ts.mjs, serve_check.mjs): a string
// prompt is one token per code point, and each generated token is a function of every prompt
// token and its position, so a reply for another request or a shifted stream shows.
export const codepoints = (s) => Array.from(s, (c) => c.codePointAt(0))
export const idsOf = (prompt) => (typeof prompt === "string" ? codepoints(prompt) : Array.from(prompt))
/** harness_model.py's prompt_seed: what the engines' stats record of each prompt (with its length). */
export const promptSeed = (ids) => ids.reduce((s, t, j) => (s + (j + 1) * t) % 1000003, 0)
/** The tokens the harness's engines generate for prompt `ids`, positions `from` to `n - 1`. */
export const expectedTokens = (ids, n, from = 0) => {
  const seed = promptSeed(ids)
  return Array.from({ length: n - from }, (_, k) => 3 + ((seed * 31 + (from + k) * 7919) % 50000))
}
