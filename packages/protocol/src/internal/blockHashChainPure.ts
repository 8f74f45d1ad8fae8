/**
 * The block-hash chain on `node:crypto` alone: always available, nothing to compile.
 *
 * One SHA-256 call per block is unavoidable from JavaScript (each block's input starts with
 * the previous block's digest), so the work is in making each call cheap:
 *
 * - `crypto.hash` one-shot, asking for the digest as a `"binary"` (latin1) string: allocating a
 *   Buffer, not hashing, dominates a small block.
 * - Each block's tokens are written as int64 straight into one reused message buffer
 *   `[parent | block]`: no allocation per call or per block but the digest string. Only the low
 *   32-bit word of each token is written: the high words stay zero.
 *
 * The measurements behind each choice, and the WebAssembly SHA-256 that lost, are in
 * PERFORMANCE.md#the-pure-chain-srcinternalblockhashchainpurets.
 *
 * @internal
 */
import * as Crypto from "node:crypto"
import type * as Prompt from "../Prompt.ts"

/** `BlockHashes.TokenIds`, declared here so that the chains do not import the module that loads them. */
export type TokenIds = Prompt.TokenIds | Uint8Array

/** `crypto.hash` arrived in Node 20.12; older runtimes pay for a Hash object per block. */
const sha256Binary: (data: Uint8Array) => string =
  typeof Crypto.hash === "function"
    ? (data) => Crypto.hash("sha256", data, "binary")
    : (data) => Crypto.createHash("sha256").update(data).digest("binary")

const TWO_32 = 4294967296

/** Messages up to this size reuse one buffer; a larger one (huge blocks) is not kept. */
const KEPT_MESSAGE_BYTES = 1 << 20
let kept = new Uint8Array(32 + 8 * 256)

const messageBuffer = (bytes: number): Uint8Array => {
  if (bytes <= kept.length) return kept
  const buffer = new Uint8Array(bytes)
  if (bytes <= KEPT_MESSAGE_BYTES) kept = buffer
  return buffer
}

const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1
const LOW_WORD = HOST_LITTLE_ENDIAN ? 0 : 4
const HIGH_WORD = 4 - LOW_WORD

/**
 * Stores `(x mod (2^63 - 1)) + 1` where `x = high * 2^32 + low`, as the `index`-th element of
 * the BigUint64Array behind `out`, in 32-bit halves: a BigInt per block would cost more than
 * the rest of the loop.
 */
export const storeHash = (out: DataView, index: number, low: number, high: number): void => {
  if (high < 0x80000000) {
    // x <= 2^63 - 1: x + 1, except x = 2^63 - 1 itself, which is 0 mod (2^63 - 1).
    if (high === 0x7fffffff && low === 0xffffffff) {
      high = 0
      low = 1
    } else if (low === 0xffffffff) {
      high += 1
      low = 0
    } else {
      low += 1
    }
  } else if (high === 0xffffffff && low >= 0xfffffffe) {
    // x = 2^64 - 2 or 2^64 - 1, that is 2 * (2^63 - 1) + 0 or + 1.
    high = 0
    low -= 0xfffffffd
  } else {
    // 2^63 <= x < 2^64 - 2: x - (2^63 - 1) + 1.
    high -= 0x80000000
    low += 2
    if (low >= TWO_32) {
      low -= TWO_32
      high += 1
    }
  }
  out.setUint32(index * 8 + LOW_WORD, low, HOST_LITTLE_ENDIAN)
  out.setUint32(index * 8 + HIGH_WORD, high, HOST_LITTLE_ENDIAN)
}

/**
 * Writes block `k0 / blockSizeTokens`'s tokens as int64 into `words` (the message as uint32
 * words, tokens from word 8 on): the low word only, for the high words stay zero between blocks.
 * Returns false at a token of 2^32 or more, for the caller's BigInt path.
 */
const writeLowWords = (tokens: ArrayLike<number>, k0: number, words: Uint32Array, end: number): boolean => {
  for (let w = 8, k = k0; w < end; w += 2, k++) {
    const token = tokens[k]!
    if (!(token >= 0 && token < TWO_32)) return false
    words[w] = token
  }
  return true
}

/**
 * Writes into `out` the hashes of its `out.length` first blocks of `blockSizeTokens` tokens,
 * the chain starting from the 32 bytes of `parent`.
 */
export const chainPure = (tokens: TokenIds, blockSizeTokens: number, parent: Uint8Array, out: BigUint64Array): void => {
  const blocks = out.length
  if (blocks === 0) return
  const messageBytes = 32 + 8 * blockSizeTokens
  const memory = messageBuffer(messageBytes)
  const view = new DataView(memory.buffer, memory.byteOffset, messageBytes)
  const message = memory.subarray(0, messageBytes)
  const hashes = new DataView(out.buffer, out.byteOffset, out.byteLength)
  memory.set(parent, 0)
  if (!HOST_LITTLE_ENDIAN) return chainAnyHost(tokens, blockSizeTokens, memory, view, message, hashes, blocks)
  // One store per token, not two: the high words are zeroed once, and again only after a
  // token of 2^32 or more wrote one. Arrays and typed arrays take separate copies of the same
  // loop, each seeing one kind of input (PERFORMANCE.md#the-pure-chain-srcinternalblockhashchainpurets).
  memory.fill(0, 32, messageBytes)
  const words = new Uint32Array(memory.buffer, memory.byteOffset, messageBytes >> 2)
  const end = messageBytes >> 2
  const isArray = Array.isArray(tokens)
  for (let b = 0; b < blocks; b++) {
    const k0 = b * blockSizeTokens
    const fits = isArray
      ? writeLowWords(tokens as ReadonlyArray<number>, k0, words, end)
      : writeLowWordsTyped(tokens as ArrayLike<number>, k0, words, end)
    if (!fits) {
      for (let w = 8, k = k0; w < end; w += 2, k++) view.setBigInt64(4 * w, BigInt(tokens[k]!), true)
    }
    const digest = sha256Binary(message)
    for (let i = 0; i < 32; i++) memory[i] = digest.charCodeAt(i)
    storeHash(hashes, b, words[0]!, words[1]!)
    if (!fits) memory.fill(0, 32, messageBytes)
  }
}

/** {@link writeLowWords} again, for typed arrays only (see {@link chainPure}). */
const writeLowWordsTyped = (tokens: ArrayLike<number>, k0: number, words: Uint32Array, end: number): boolean => {
  for (let w = 8, k = k0; w < end; w += 2, k++) {
    const token = tokens[k]!
    if (!(token >= 0 && token < TWO_32)) return false
    words[w] = token
  }
  return true
}

/** The chain on a big-endian host: every token written through the DataView. */
const chainAnyHost = (
  tokens: TokenIds,
  blockSizeTokens: number,
  memory: Uint8Array,
  view: DataView,
  message: Uint8Array,
  hashes: DataView,
  blocks: number
): void => {
  const messageBytes = message.length
  for (let b = 0, k = 0; b < blocks; b++) {
    for (let offset = 32; offset < messageBytes; offset += 8, k++) view.setBigInt64(offset, BigInt(tokens[k]!), true)
    const digest = sha256Binary(message)
    for (let i = 0; i < 32; i++) memory[i] = digest.charCodeAt(i)
    storeHash(hashes, b, view.getUint32(0, true), view.getUint32(4, true))
  }
}
