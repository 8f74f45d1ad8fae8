import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { createHash } from "node:crypto"
import { readFileSync } from "node:fs"
import { execFileSync } from "node:child_process"
import * as BlockHashes from "../src/BlockHashes.ts"
import { storeHash } from "../src/internal/blockHashChainPure.ts"

interface Vector {
  readonly block_size_tokens: number
  readonly tokens: ReadonlyArray<number>
  readonly media_cache_key: string | null
  readonly hashes: ReadonlyArray<string>
}

const vectors = (
  JSON.parse(readFileSync(new URL("./fixtures/block_hashes.json", import.meta.url), "utf8")) as {
    readonly cases: ReadonlyArray<Vector>
  }
).cases

const MAX_HASH = (1n << 63n) - 1n
const decimal = (hashes: BigUint64Array): ReadonlyArray<string> => Array.from(hashes, String)

/** Every array type a caller may pass that can hold the case's tokens. */
const tokenForms = (tokens: ReadonlyArray<number>): ReadonlyArray<readonly [string, BlockHashes.TokenIds]> => {
  const max = Math.max(0, ...tokens)
  const forms: Array<readonly [string, BlockHashes.TokenIds]> = [
    ["Array", tokens],
    ["Float64Array", new Float64Array(tokens)]
  ]
  if (max < 2 ** 31) forms.push(["Int32Array", new Int32Array(tokens)])
  if (max < 2 ** 32) forms.push(["Uint32Array", new Uint32Array(tokens)])
  if (max < 2 ** 15) forms.push(["Int16Array", new Int16Array(tokens)])
  if (max < 2 ** 16) forms.push(["Uint16Array", new Uint16Array(tokens)])
  if (max < 2 ** 8) forms.push(["Uint8Array", new Uint8Array(tokens)])
  return forms
}

/** The protocol's algorithm written the obvious way (BigInt, a Hash per block): the oracle. */
const reference = (tokens: ReadonlyArray<number>, blockSize: number, key: string | null): ReadonlyArray<string> => {
  const bytes = Buffer.alloc(tokens.length * 8)
  tokens.forEach((token, i) => bytes.writeBigInt64LE(BigInt(token), i * 8))
  let parent = key === null ? Buffer.alloc(32) : Buffer.from(key, "hex")
  const hashes: Array<string> = []
  for (let start = 0; start + blockSize <= tokens.length; start += blockSize) {
    parent = createHash("sha256").update(parent).update(bytes.subarray(start * 8, (start + blockSize) * 8)).digest()
    hashes.push(String((parent.readBigUInt64LE(0) % MAX_HASH) + 1n))
  }
  return hashes
}

const implementations: ReadonlyArray<readonly [string, BlockHashes.BlockHasher | undefined]> = [
  ["pure", BlockHashes.blockHashesPure],
  ["native", BlockHashes.blockHashesNative]
]

describe("BlockHashes", () => {
  it("the fixture holds the 36 vectors of the shared spec", () => {
    expect(vectors.length).toBe(36)
  })

  for (const [name, hasher] of implementations) {
    describe(name, () => {
      it.runIf(hasher !== undefined)("reproduces every vector exactly, from every token array type", () => {
        for (const vector of vectors) {
          for (const [form, tokens] of tokenForms(vector.tokens)) {
            const hashes = hasher!(tokens, vector.block_size_tokens, vector.media_cache_key)
            expect({ form, hashes: decimal(hashes) }).toEqual({ form, hashes: vector.hashes })
          }
        }
      })

      it.runIf(hasher !== undefined)("throws a RangeError for a block size that is not a positive integer", () => {
        for (const size of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
          expect(() => hasher!([1, 2, 3], size)).toThrow(RangeError)
        }
      })

      it.runIf(hasher !== undefined)("throws a RangeError for a media cache key that is not 64 lowercase hex", () => {
        for (const key of ["", "ab", "AB".repeat(32), "g".repeat(64), "a".repeat(63), "a".repeat(65)]) {
          expect(() => hasher!([1, 2, 3], 1, key)).toThrow(RangeError)
        }
      })

      it.runIf(hasher !== undefined)("hashes only complete blocks, and tokens beyond 2^32 as int64", () => {
        expect(hasher!([], 4).length).toBe(0)
        expect(hasher!([1, 2, 3], 4).length).toBe(0)
        const big = [2 ** 32, 2 ** 40 + 7, Number.MAX_SAFE_INTEGER, 0, 1]
        expect(decimal(hasher!(big, 2))).toEqual(reference(big, 2, null))
        expect(decimal(hasher!(new Float64Array(big), 1, "cd".repeat(32)))).toEqual(reference(big, 1, "cd".repeat(32)))
        // Small tokens in the blocks after a large one: its high word must not linger.
        const mixed = [5, 6, 2 ** 40 + 1, 7, 8, 9, 10, 2 ** 33, 11, 12]
        for (const size of [1, 2, 3]) expect(decimal(hasher!(mixed, size))).toEqual(reference(mixed, size, null))
        expect(decimal(hasher!(new Float64Array(mixed), 2))).toEqual(reference(mixed, 2, null))
      })
    })
  }

  it("blockHashes uses the native path exactly when it loaded", () => {
    expect(BlockHashes.blockHashImplementation).toBe(BlockHashes.blockHashesNative === undefined ? "pure" : "native")
    expect(BlockHashes.blockHashes).toBe(BlockHashes.blockHashesNative ?? BlockHashes.blockHashesPure)
  })

  it("MCORE_EFFECT_NO_NATIVE=1 forces the pure path", () => {
    const script = `import("./src/BlockHashes.ts").then((m) => console.log(m.blockHashImplementation, m.blockHashesNative === undefined))`
    const run = (env: NodeJS.ProcessEnv): string =>
      execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
        cwd: new URL("..", import.meta.url),
        env: { ...process.env, ...env },
        encoding: "utf8"
      }).trim()
    expect(run({ MCORE_EFFECT_NO_NATIVE: "1" })).toBe("pure true")
    // The control: in this environment, without the variable, the addon loads.
    if (BlockHashes.blockHashesNative !== undefined) expect(run({ MCORE_EFFECT_NO_NATIVE: "0" })).toBe("native false")
  })

  it("reduces the digest's first 8 bytes mod 2^63 - 1, plus 1, at the edges", () => {
    const edges = [0n, 1n, MAX_HASH - 1n, MAX_HASH, MAX_HASH + 1n, 1n << 63n, (1n << 64n) - 3n, (1n << 64n) - 2n, (1n << 64n) - 1n, 0xffffffffn, 0x1ffffffffn, (1n << 63n) + 0xfffffffen]
    for (const x of edges) {
      const out = new BigUint64Array(1)
      storeHash(new DataView(out.buffer), 0, Number(x & 0xffffffffn), Number(x >> 32n))
      expect(out[0]).toBe((x % MAX_HASH) + 1n)
    }
  })

  describe("properties", () => {
    const token = fc.oneof(
      { weight: 9, arbitrary: fc.integer({ min: 0, max: 2 ** 31 - 1 }) },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }) }
    )
    const input = fc.record({
      tokens: fc.array(token, { maxLength: 200 }),
      blockSize: fc.integer({ min: 1, max: 40 }),
      key: fc.option(fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("hex")))
    })

    it("one hash per complete block, each in [1, 2^63 - 1], as the reference computes", () => {
      fc.assert(
        fc.property(input, ({ blockSize, key, tokens }) => {
          const hashes = BlockHashes.blockHashesPure(tokens, blockSize, key)
          expect(hashes.length).toBe(Math.floor(tokens.length / blockSize))
          for (const hash of hashes) expect(hash >= 1n && hash <= MAX_HASH).toBe(true)
          expect(decimal(hashes)).toEqual(reference(tokens, blockSize, key))
        })
      )
    })

    it.runIf(BlockHashes.blockHashesNative !== undefined)("pure and native agree", () => {
      fc.assert(
        fc.property(input, ({ blockSize, key, tokens }) => {
          const pure = BlockHashes.blockHashesPure(tokens, blockSize, key)
          expect(decimal(BlockHashes.blockHashesNative!(tokens, blockSize, key))).toEqual(decimal(pure))
          expect(decimal(BlockHashes.blockHashesNative!(new Float64Array(tokens), blockSize, key))).toEqual(decimal(pure))
        })
      )
    })

    it("a prefix of the tokens gives a prefix of the hashes", () => {
      fc.assert(
        fc.property(input, fc.nat(), ({ blockSize, key, tokens }, cut) => {
          const prefix = tokens.slice(0, cut % (tokens.length + 1))
          const all = decimal(BlockHashes.blockHashes(tokens, blockSize, key))
          expect(decimal(BlockHashes.blockHashes(prefix, blockSize, key))).toEqual(all.slice(0, Math.floor(prefix.length / blockSize)))
        })
      )
    })

    it("a media cache key changes every hash", () => {
      const key = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString("hex"))
      fc.assert(
        fc.property(input, key, ({ blockSize, tokens }, mediaCacheKey) => {
          const plain = BlockHashes.blockHashes(tokens, blockSize)
          const salted = BlockHashes.blockHashes(tokens, blockSize, mediaCacheKey)
          plain.forEach((hash, i) => expect(salted[i]).not.toBe(hash))
        })
      )
    })
  })
})
