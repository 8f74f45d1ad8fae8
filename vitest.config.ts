import { defineConfig } from "vitest/config"

export default defineConfig({
  // Tests run against each package's TypeScript sources (the "source" export condition),
  // so `pnpm test` needs no build of the packages it imports.
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    include: ["packages/*/test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // The JSON report is what .ci/run counts; the default reporter is for people.
    reporters: ["default", ["json", { outputFile: "build/vitest-results.json" }]]
  }
})
