/**
 * The optional native block-hash chain (`native/block_hashes.c`), when it was built at install
 * and loads here.
 *
 * The addon is an accelerator, never a requirement: any failure to load it, and any wrong
 * answer to a known vector, leaves `chainNative` undefined and the pure chain in charge.
 *
 * @internal
 */
import { createRequire } from "node:module"
import type { TokenIds } from "./blockHashChainPure.ts"

/** The addon's only export: the whole chain in one call, `out.length` blocks. */
type NativeChain = (
  tokens: Exclude<TokenIds, ReadonlyArray<number>>,
  blockSizeTokens: number,
  parent: Uint8Array,
  out: BigUint64Array
) => void

/** Same path from `src/internal/` and from `dist/internal/`. */
const ADDON = "../../native/build/Release/block_hashes.node"

/** The Python peer's vector (test/fixtures): token `[0]`, blocks of 1, no media key. */
const KNOWN_ANSWER = 901630261472408622n

const load = (): NativeChain | undefined => {
  if (process.env["MCORE_EFFECT_NO_NATIVE"] === "1") return undefined
  try {
    const addon: unknown = createRequire(import.meta.url)(ADDON)
    const chain = (addon as { readonly chain?: unknown }).chain
    if (typeof chain !== "function") return undefined
    const out = new BigUint64Array(1)
    chain(new Uint32Array([0]), 1, new Uint8Array(32), out)
    return out[0] === KNOWN_ANSWER ? (chain as NativeChain) : undefined
  } catch {
    return undefined
  }
}

const nativeChain = load()

/**
 * Writes into `out` the hashes of its `out.length` first blocks, as `chainPure` does. JavaScript
 * arrays are copied into a Float64Array first: the addon reads typed arrays only, as reading
 * array elements through N-API one by one costs more than the copy.
 */
export const chainNative:
  | ((tokens: TokenIds, blockSizeTokens: number, parent: Uint8Array, out: BigUint64Array) => void)
  | undefined = nativeChain === undefined
    ? undefined
    : (tokens, blockSizeTokens, parent, out) => {
      if (out.length === 0) return
      const typed = isTypedArray(tokens) ? tokens : toFloat64(tokens, out.length * blockSizeTokens)
      nativeChain(typed, blockSizeTokens, parent, out)
    }

const isTypedArray = (tokens: TokenIds): tokens is Exclude<TokenIds, ReadonlyArray<number>> => ArrayBuffer.isView(tokens)

/** Arrays up to this many tokens are copied into one reused buffer: a fresh one per call costs page faults. */
const KEPT_TOKENS = 1 << 17
let kept: Float64Array = new Float64Array(0)

/** A plain loop, faster than `new Float64Array(array)` (PERFORMANCE.md#the-native-chain-srcinternalblockhashchainnativets). */
const toFloat64 = (tokens: ReadonlyArray<number>, count: number): Float64Array => {
  let copy: Float64Array
  if (count <= kept.length) {
    copy = kept.subarray(0, count)
  } else {
    copy = new Float64Array(count)
    if (count <= KEPT_TOKENS) kept = copy
  }
  for (let k = 0; k < count; k++) copy[k] = tokens[k] as number
  return copy
}
