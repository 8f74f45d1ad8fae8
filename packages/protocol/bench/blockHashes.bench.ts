/**
 * `pnpm bench blockHashes`: block-hash throughput for a 32,768-token prompt.
 *
 * Throughput is MB/s of the prompt's int64 token bytes (32768 * 8). Every figure is also given
 * as a ratio of one-shot SHA-256 over those same bytes (`crypto.hash`, measured in the same
 * run, interleaved with each path): the chain can never beat hashing the bytes in one call,
 * so that is the ceiling, and a ratio stays comparable across machines where MB/s does not.
 * The Python columns are Megatron-LM's reference chain (hashlib per block) as a ratio of its own
 * one-shot ceiling (hashlib, the same OpenSSL), measured in this run by `py_block_hashes.py`
 * (`python3`, or `$PYTHON`; the columns say n/a without one): "list in" is Python's work per
 * prompt (a token list packed, then hashed), "bytes ready" the chain alone over bytes packed
 * beforehand, Python's best case. The pure path starts from an Array of numbers, as "list in".
 *
 * Times are CPU time of this process (see `secondsPer`). `--quick` takes fewer samples.
 */
import { spawnSync } from "node:child_process"
import { hash } from "node:crypto"
import { fileURLToPath } from "node:url"
import { Timing } from "@mcore-effect/testkit"
import { blockHashImplementation, blockHashesNative, blockHashesPure, type BlockHasher, type TokenIds } from "../src/BlockHashes.ts"

const { median, repeatsFor, secondsPer } = Timing

const TOKENS = 32_768
const BLOCK_SIZES = [16, 64, 256] as const
const SAMPLES = process.argv.includes("--quick") ? 7 : 31
/** Each timed sample repeats its function for at least this long. */
const SAMPLE_MS = 10
const timing = { sampleMs: SAMPLE_MS, warmMs: 200, minRuns: 20 }

/** Deterministic token ids with a realistic spread (a 150k vocabulary). */
const prompt = (): Array<number> => {
  let state = 0x9e3779b9
  return Array.from({ length: TOKENS }, () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    return state % 150_000
  })
}

const int64Bytes = (tokens: ReadonlyArray<number>): Buffer => {
  const bytes = Buffer.alloc(tokens.length * 8)
  tokens.forEach((token, i) => bytes.writeUInt32LE(token, i * 8))
  return bytes
}

/**
 * The straightforward port of the Python reference, for scale: one `crypto.hash` per block
 * returning a Buffer, over bytes converted beforehand (the conversion is not timed).
 */
const naiveOver =
  (bytes: Buffer): BlockHasher =>
  (tokens, blockSizeTokens) => {
    const out = new BigUint64Array(Math.floor(tokens.length / blockSizeTokens))
    const blockBytes = blockSizeTokens * 8
    const message = Buffer.alloc(32 + blockBytes)
    for (let b = 0; b < out.length; b++) {
      bytes.copy(message, 32, b * blockBytes, (b + 1) * blockBytes)
      const digest = hash("sha256", message, "buffer")
      digest.copy(message, 0)
      out[b] = (digest.readBigUInt64LE(0) % 0x7fffffffffffffffn) + 1n
    }
    return out
  }

interface PythonRatios {
  readonly python: string
  readonly list_in: Record<string, number>
  readonly bytes_ready: Record<string, number>
}

/** Python's ratios, measured now by `py_block_hashes.py`, or why not. */
const measurePython = (): PythonRatios | string => {
  const script = fileURLToPath(new URL("./py_block_hashes.py", import.meta.url))
  const python = process.env["PYTHON"] ?? "python3"
  const args = process.argv.includes("--quick") ? [script, "--quick"] : [script]
  const run = spawnSync(python, args, { encoding: "utf8", timeout: 600_000 })
  if (run.status !== 0) return `${python} ${run.error?.message ?? run.stderr.trim().split("\n").pop() ?? "failed"}`
  return JSON.parse(run.stdout) as PythonRatios
}

interface Measurement {
  readonly mbPerSecond: number
  readonly ratio: number
}

/** Median throughput and median ratio to the ceiling, each sample paired with a ceiling sample taken just before. */
const measure = (f: () => unknown, ceiling: () => unknown, bytes: number): Measurement => {
  const repeats = repeatsFor(f, timing)
  const ceilingRepeats = repeatsFor(ceiling, timing)
  const throughputs: Array<number> = []
  const ratios: Array<number> = []
  for (let i = 0; i < SAMPLES; i++) {
    const ceilingSeconds = secondsPer(ceiling, ceilingRepeats)
    const seconds = secondsPer(f, repeats)
    throughputs.push(bytes / seconds / 1e6)
    ratios.push(ceilingSeconds / seconds)
  }
  return { mbPerSecond: median(throughputs), ratio: median(ratios) }
}

const percent = (ratio: number): string => `${(ratio * 100).toFixed(1)}%`

export const run = async (): Promise<void> => {
  const tokens = prompt()
  const int32 = Int32Array.from(tokens)
  const bytes = int64Bytes(tokens)
  const ceiling = () => hash("sha256", bytes, "buffer")
  const naive = naiveOver(bytes)

  const paths: Array<readonly [string, BlockHasher, TokenIds]> = [
    ["naive: crypto.hash per block", naive, tokens],
    ["pure (Array)", blockHashesPure, tokens],
    ["pure (Int32Array)", blockHashesPure, int32]
  ]
  if (blockHashesNative !== undefined) {
    paths.push(["native (Array)", blockHashesNative, tokens], ["native (Int32Array)", blockHashesNative, int32])
  }

  // Benchmarking a wrong answer is worthless: every path must agree first.
  for (const size of BLOCK_SIZES) {
    const expected = String(naive(tokens, size))
    for (const [name, hasher, input] of paths) {
      if (String(hasher(input, size)) !== expected) throw new Error(`${name} disagrees with the naive chain at block size ${size}`)
    }
  }

  // First, alone: the two runtimes would otherwise share the machine's cores while measuring.
  const python = measurePython()
  const ceilingMb = bytes.length / median(Array.from({ length: SAMPLES }, () => secondsPer(ceiling, repeatsFor(ceiling, timing)))) / 1e6
  console.log(`\nblockHashes: ${TOKENS} tokens (${bytes.length} int64 bytes), median of ${SAMPLES} samples`)
  console.log(`ceiling: one-shot crypto.hash over the same bytes, ${ceilingMb.toFixed(0)} MB/s`)
  console.log(`blockHashes uses: ${blockHashImplementation}${blockHashesNative === undefined ? " (native addon not built or not loadable)" : ""}`)
  console.log(
    typeof python === "string"
      ? `python: not measured (${python})`
      : `python ${python.python}: Megatron's chain in hashlib, measured in this run (CPU time), as a ratio of hashlib's one-shot SHA-256`
  )
  const pythonRatio = (column: "list_in" | "bytes_ready", size: number): number | undefined =>
    typeof python === "string" ? undefined : python[column][String(size)]
  const vs = (ratio: number, py: number | undefined): string => (py === undefined ? "n/a" : `${(ratio / py).toFixed(2)}x`)
  const rows: Array<Record<string, string>> = []
  for (const size of BLOCK_SIZES) {
    for (const [name, hasher, input] of paths) {
      const { mbPerSecond, ratio } = measure(() => hasher(input, size), ceiling, bytes.length)
      const listIn = pythonRatio("list_in", size)
      const bytesReady = pythonRatio("bytes_ready", size)
      rows.push({
        "block size": String(size),
        path: name,
        "MB/s": mbPerSecond.toFixed(0),
        "of ceiling": percent(ratio),
        "python, list in": listIn === undefined ? "n/a" : percent(listIn),
        "vs python": vs(ratio, listIn),
        "python, bytes ready": bytesReady === undefined ? "n/a" : percent(bytesReady),
        "vs bytes ready": vs(ratio, bytesReady)
      })
    }
  }
  console.table(rows)
}
