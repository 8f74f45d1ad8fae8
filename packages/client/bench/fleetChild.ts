/**
 * One coordinator and its engines in a process of its own, for the fleet benchmark: a test
 * cluster on a loopback port with the benchmark's fixed engines. Prints its address as one JSON
 * line, then answers JSON lines on stdin: `{ "id", "cached": tokens }` with the most leading
 * blocks of `tokens` any of its engines holds (the oracle's question), `{ "id", "stats": true }`
 * with its engines' prefix-cache hits and misses. Serves until killed.
 */
import { TestCluster } from "@mcore-effect/testkit"
import { Effect, References } from "effect"
import { createInterface } from "node:readline"
import { BLOCK_TOKENS, CACHE_BLOCKS, ENGINES, PREFILL_MS_PER_BLOCK, STEP_MS } from "./fleetWorkload.ts"

type Question = { readonly id: number; readonly cached: ReadonlyArray<number> } | { readonly id: number; readonly stats: true }

const program = Effect.gen(function*() {
  const cluster = yield* TestCluster.make({
    engines: ENGINES,
    protocol: "main",
    coordinator: { policy: "longest_prefix", blockSizeTokens: BLOCK_TOKENS },
    engine: { blockSizeTokens: BLOCK_TOKENS, prefixCacheBlocks: CACHE_BLOCKS, prefillMsPerBlock: PREFILL_MS_PER_BLOCK, stepMs: STEP_MS }
  })
  const answer = (question: Question) =>
    Effect.gen(function*() {
      if ("cached" in question) {
        let blocks = 0
        for (const engine of cluster.engines) blocks = Math.max(blocks, yield* engine.cachedBlocks(question.cached))
        return { id: question.id, blocks }
      }
      let hits = 0
      let misses = 0
      for (const engine of cluster.engines) {
        const snapshot = yield* engine.snapshot
        hits += snapshot.prefixCache.hits
        misses += snapshot.prefixCache.misses
      }
      return { id: question.id, hits, misses }
    })
  const run = Effect.runSyncWith(yield* Effect.context<never>())
  createInterface({ input: process.stdin }).on("line", (line) => {
    process.stdout.write(`${JSON.stringify(run(answer(JSON.parse(line) as Question)))}\n`)
  })
  process.stdout.write(`${JSON.stringify({ address: cluster.address })}\n`)
  yield* Effect.never
}).pipe(Effect.scoped, Effect.provideService(References.MinimumLogLevel, "Error"))

Effect.runFork(program)
