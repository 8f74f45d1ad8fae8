// `pnpm bench`: runs every package's benchmark in turn. Each reports ratios against a baseline
// measured in the same run, never absolute thresholds.
const suites = process.argv.slice(2)
const all: Record<string, () => Promise<unknown>> = {
  blockHashes: () => import("../packages/protocol/bench/blockHashes.bench.ts").then((m) => m.run())
}
for (const [name, run] of Object.entries(all)) {
  if (suites.length === 0 || suites.includes(name)) await run()
}
