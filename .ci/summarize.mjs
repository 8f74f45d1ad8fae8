// Reads vitest's JSON report and prints "N passed, N failed"; exits non-zero when any test
// failed or none ran, so a silent or empty run can never look green. A test file that failed
// to load (no test inside it failed because none ran) counts as one failure.
import { existsSync, readFileSync } from "node:fs"

const file = process.argv[2]
if (!file || !existsSync(file)) {
  console.error(`no vitest JSON report at ${file}`)
  console.log("0 passed, 1 failed")
  process.exit(1)
}
const report = JSON.parse(readFileSync(file, "utf8"))
let passed = 0
let failed = 0
for (const suite of report.testResults ?? []) {
  const results = suite.assertionResults ?? []
  passed += results.filter((r) => r.status === "passed").length
  const failedHere = results.filter((r) => r.status === "failed").length
  failed += failedHere > 0 ? failedHere : suite.status === "failed" ? 1 : 0
}
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed > 0 || passed === 0 ? 1 : 0)
