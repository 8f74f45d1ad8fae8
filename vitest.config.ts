import { defineConfig } from "vitest/config"

// vitest 5's summary calls Map.groupBy (Node 21+) when a test fails; on Node 20 that crash would
// hide the failure report. Supply it here, in the process that runs the reporters.
if (typeof (Map as { groupBy?: unknown }).groupBy !== "function") {
  Object.defineProperty(Map, "groupBy", {
    configurable: true,
    writable: true,
    value: <K, V>(items: Iterable<V>, key: (item: V, index: number) => K): Map<K, Array<V>> => {
      const groups = new Map<K, Array<V>>()
      let index = 0
      for (const item of items) {
        const k = key(item, index++)
        const group = groups.get(k)
        if (group === undefined) groups.set(k, [item])
        else group.push(item)
      }
      return groups
    }
  })
}

export default defineConfig({
  // Tests run against each package's TypeScript sources (the "source" export condition),
  // so `pnpm test` needs no build of the packages it imports.
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts"],
    // eventsource-parser (under the AI SDK, a server test's dev dependency) exports its own
    // TypeScript sources under "source" too, which Node cannot load when it imports it: Vite
    // transforms it, and every AI SDK package on the way to it, instead.
    server: { deps: { inline: ["eventsource-parser", /@ai-sdk\//, "ai"] } },
    // Under CI=true, fast-check's properties start from one fixed seed (FC_SEED overrides).
    setupFiles: ["./vitest.fastCheck.ts"],
    testTimeout: 60_000,
    // A passing run is quiet: what a test prints (the Effect logs of tests that inject faults on
    // purpose, ~114 WARN/INFO lines) is kept per test and shown only with that test's failure.
    // `vitest run --silent=false` shows everything.
    silent: "passed-only",
    hookTimeout: 30_000,
    // The JSON report is what .ci/run counts; the default reporter is for people.
    reporters: ["default", ["json", { outputFile: "build/vitest-results.json" }]]
  }
})
