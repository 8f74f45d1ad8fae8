/**
 * The fleet router's own block hashes of a prompt: one key per complete block, each naming the
 * whole prefix up to the end of its block (chained), so two prompts share the first `k` keys
 * exactly when they share their first `k` blocks (up to collisions).
 *
 * Not Megatron's block hashes (`BlockHashes`, SHA-256 per block, what a coordinator's engines
 * are routed by): these only decide which coordinator a request goes to and never reach the
 * wire, so they can be cheap: two 32-bit multiply-xor lanes, combined into a 52-bit integer
 * that is an exact JavaScript number (a `Map` key without a `bigint`), over at most
 * {@link SAMPLES_PER_BLOCK} evenly spaced tokens of each block (hashing all 2,048 tokens of a
 * prompt cost 5 µs, over the budget of the whole routing decision). Two prompts that differ
 * only in tokens left out share a key: a collision, which costs a cache miss on the coordinator
 * it sends them to, never a wrong answer. Measured in the package's PERFORMANCE.md ("Fleet
 * routing").
 *
 * Text prompts are hashed by UTF-16 code unit, in blocks of `4 * blockSizeTokens` characters
 * (about four characters a token in English BPE vocabularies): text that shares a prefix shares
 * keys, as tokens would.
 *
 * A prompt shorter than a block has no block key. {@link shortKeys} names its prefixes of every
 * length instead, each token read (there are fewer than a block's): what lets the next turn of a
 * conversation that started short find where it went (`Router`). {@link keyOfString} makes a
 * caller's routing key (a session, a user) a key of the same kind.
 *
 * @internal
 */
import type { Prompt } from "@mcore-effect/protocol"

/** Characters a block of text holds per token of `blockSizeTokens`. */
export const CHARS_PER_TOKEN = 4

/** Tokens (or characters) of each block that enter its key, evenly spaced, the last included. */
export const SAMPLES_PER_BLOCK = 16

const LANE_A = 0x9e3779b1
const LANE_B = 0x85ebca77

/**
 * Writes the keys of `prompt`'s first `into.length` complete blocks (at most) into `into` and
 * returns how many: 0 for a prompt shorter than a block. The caller's buffer is reused from
 * request to request (allocating a `Float64Array` per request cost more than hashing).
 */
export const routingKeys = (prompt: Prompt.Prompt, blockSizeTokens: number, into: Float64Array): number =>
  typeof prompt === "string"
    ? keysOfText(prompt, blockSizeTokens * CHARS_PER_TOKEN, into)
    : keysOfTokens(prompt as ArrayLike<number>, blockSizeTokens, into)

const keysOfTokens = (tokens: ArrayLike<number>, blockSize: number, keys: Float64Array): number => {
  // Not a prompt (the client refuses it after routing): no keys.
  const length = unitsOf(tokens as Prompt.Prompt)
  const blocks = Math.min(Math.floor(length / blockSize), keys.length)
  const stride = Math.max(1, Math.floor(blockSize / SAMPLES_PER_BLOCK))
  let a = LANE_A | 0
  let b = LANE_B | 0
  for (let block = 0; block < blocks; block++) {
    const last = (block + 1) * blockSize - 1
    for (let k = last; k > last - blockSize; k -= stride) {
      const x = tokens[k]! | 0
      a = Math.imul(a ^ x, 0x5bd1e995)
      a ^= a >>> 13
      b = Math.imul(b + x, 0x27d4eb2d) ^ (b >>> 15)
    }
    keys[block] = (a >>> 0) * 0x100000 + (b >>> 12)
  }
  return blocks
}

const keysOfText = (text: string, blockSize: number, keys: Float64Array): number => {
  const blocks = Math.min(Math.floor(text.length / blockSize), keys.length)
  const stride = Math.max(1, Math.floor(blockSize / SAMPLES_PER_BLOCK))
  let a = LANE_A | 0
  let b = LANE_B | 0
  for (let block = 0; block < blocks; block++) {
    const last = (block + 1) * blockSize - 1
    for (let k = last; k > last - blockSize; k -= stride) {
      const x = text.charCodeAt(k)
      a = Math.imul(a ^ x, 0x5bd1e995)
      a ^= a >>> 13
      b = Math.imul(b + x, 0x27d4eb2d) ^ (b >>> 15)
    }
    keys[block] = (a >>> 0) * 0x100000 + (b >>> 12)
  }
  return blocks
}

/** The short keys' lanes: another function than the block keys', so the two never name the same prefix. */
const SHORT_A = 0x27d4eb2f
const SHORT_B = 0x165667b1

/** The units {@link routingKeys} reads of `prompt`: tokens, or UTF-16 code units of a text (0 for what is not a prompt). */
export const unitsOf = (prompt: Prompt.Prompt): number =>
  typeof prompt === "string" ? prompt.length : Array.isArray(prompt) || ArrayBuffer.isView(prompt) ? (prompt as ArrayLike<number>).length : 0

/**
 * Writes the keys of `prompt`'s first `count` prefixes into `into`: `into[p - 1]` names its first
 * `p` units, every one of them read. `count` is at most the prompt's units and `into.length`.
 */
export const shortKeys = (prompt: Prompt.Prompt, count: number, into: Float64Array): void => {
  let a = SHORT_A | 0
  let b = SHORT_B | 0
  if (typeof prompt === "string") {
    for (let p = 0; p < count; p++) {
      const x = prompt.charCodeAt(p)
      a = Math.imul(a ^ x, 0x5bd1e995)
      a ^= a >>> 13
      b = Math.imul(b + x, 0x27d4eb2d) ^ (b >>> 15)
      into[p] = (a >>> 0) * 0x100000 + (b >>> 12)
    }
    return
  }
  const tokens = prompt as ArrayLike<number>
  for (let p = 0; p < count; p++) {
    const x = tokens[p]! | 0
    a = Math.imul(a ^ x, 0x5bd1e995)
    a ^= a >>> 13
    b = Math.imul(b + x, 0x27d4eb2d) ^ (b >>> 15)
    into[p] = (a >>> 0) * 0x100000 + (b >>> 12)
  }
}

/** A caller's routing key (a session id, a user) as a key {@link rendezvousScore} ranks members by. */
export const keyOfString = (text: string): number => {
  let a = LANE_A | 0
  let b = LANE_B | 0
  for (let i = 0; i < text.length; i++) {
    const x = text.charCodeAt(i)
    a = Math.imul(a ^ x, 0x5bd1e995)
    a ^= a >>> 13
    b = Math.imul(b + x, 0x27d4eb2d) ^ (b >>> 15)
  }
  // A last mix, so that keys differing only in their last character differ in every bit of `a`.
  a = Math.imul(a ^ (a >>> 16), 0x85ebca6b)
  a ^= a >>> 13
  return (a >>> 0) * 0x100000 + (b >>> 12)
}

/**
 * Rendezvous (highest random weight) score of `key` for the member whose seed is `seed`: every
 * process ranks the members of a key the same way, with nothing shared.
 */
export const rendezvousScore = (key: number, seed: number): number => {
  let h = (key % 0x100000000) ^ seed
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b)
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35)
  h ^= Math.floor(key / 0x100000000) * 0x9e3779b1
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d)
  return (h ^ (h >>> 15)) >>> 0
}

/** A member's rendezvous seed, from its address: the same in every process. */
export const seedOf = (address: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < address.length; i++) h = Math.imul(h ^ address.charCodeAt(i), 0x01000193)
  return h >>> 0
}
