/**
 * The fleet benchmark's fixed numbers (issue 27: fixed so that no one tunes them) and its
 * workload: multi-turn conversations in groups that share a system prompt.
 */

/** 4 coordinators x 2 engines. */
export const COORDINATORS = 4
export const ENGINES = 2
/** The engines' KV block, and their prefix caches (LRU). */
export const BLOCK_TOKENS = 64
export const CACHE_BLOCKS = 2048
/** Prefill of one uncached block; one decode step (one token) per millisecond; 64 tokens decoded. */
export const PREFILL_MS_PER_BLOCK = 0.1
export const STEP_MS = 1
export const DECODE_TOKENS = 64
/** 200 conversations x 8 turns, in groups of 10 sharing a 1,024-token system prompt. */
export const CONVERSATIONS = 200
export const TURNS = 8
export const GROUP = 10
export const SYSTEM_TOKENS = 1024
export const USER_TOKENS = 128
export const ASSISTANT_TOKENS = 128
export const IN_FLIGHT = 64

/** A deterministic stream of token ids in [1, 30000] for a seed. */
const tokens = (seed: number, count: number): Array<number> => {
  const out = new Array<number>(count)
  let x = (seed * 2654435761) >>> 0 || 1
  for (let i = 0; i < count; i++) {
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    out[i] = 1 + (x % 30000)
  }
  return out
}

/**
 * The prompt of `turn` (0-based) of conversation `conversation`: its group's system prompt, the
 * earlier turns (each a user message and an assistant reply), and this turn's user message.
 */
export const turnPrompt = (conversation: number, turn: number): Array<number> => {
  const group = Math.floor(conversation / GROUP)
  const prompt = tokens(1_000_000 + group, SYSTEM_TOKENS)
  for (let t = 0; t < turn; t++) {
    prompt.push(...tokens(2_000_000 + conversation * 64 + t, USER_TOKENS))
    prompt.push(...tokens(3_000_000 + conversation * 64 + t, ASSISTANT_TOKENS))
  }
  prompt.push(...tokens(2_000_000 + conversation * 64 + turn, USER_TOKENS))
  return prompt
}

/**
 * Issue 44's short chats: 40 conversations x 6 turns, no system prompt, each turn a user message
 * of 20-40 tokens after a chat template's 3-token opening (the same in every conversation), each
 * earlier turn followed by its 16-token answer.
 */
export const SHORT_CHATS = 40
export const SHORT_TURNS = 6
export const SHORT_ANSWER_TOKENS = 16
const OPENING = [151644, 872, 198]

/** The prompt of `turn` (0-based) of short chat `conversation`. */
export const shortChatPrompt = (conversation: number, turn: number): Array<number> => {
  const prompt = [...OPENING]
  for (let t = 0; t <= turn; t++) {
    prompt.push(...tokens(6_000_000 + conversation * 64 + t, 20 + ((conversation * 7 + t * 13) % 21)))
    if (t < turn) prompt.push(...tokens(7_000_000 + conversation * 64 + t, SHORT_ANSWER_TOKENS))
  }
  return prompt
}

/** `count` distinct prompts of `length` tokens. */
export const distinctPrompts = (count: number, length: number): Array<Array<number>> =>
  Array.from({ length: count }, (_, i) => tokens(5_000_000 + i, length))

/** The `q`-quantile of `values` (sorted in place). */
export const quantile = (values: Array<number>, q: number): number => {
  values.sort((a, b) => a - b)
  return values[Math.min(values.length - 1, Math.floor(q * values.length))] ?? NaN
}
