// The prefix table's memory per hash: N hashes (63-bit, as Megatron's block hashes are) assigned
// in rows of 8 to four engines, the heap measured after a full GC before and after. Run after
// `pnpm build`:
//
//   node --expose-gc packages/coordinator/bench/prefix-table-memory.mjs [N]
import { PrefixTable } from "../dist/PrefixTable.js"

if (typeof global.gc !== "function") {
  console.error("run with node --expose-gc")
  process.exit(2)
}
const n = Number(process.argv[2] ?? 100_000)
global.gc()
const before = process.memoryUsage().heapUsed
const table = new PrefixTable(n)
for (let i = 0; i < n; i += 8) {
  const hashes = Array.from({ length: 8 }, (_, k) => (BigInt(i + k) * 0x9e3779b97f4a7c15n) & 0x7fffffffffffffffn)
  table.assign(`mp-coord-${(i / 8) % 4}`, hashes)
}
global.gc()
const after = process.memoryUsage().heapUsed
console.log(JSON.stringify({
  hashes: table.size,
  heapBeforeMB: +(before / 1e6).toFixed(1),
  heapAfterMB: +(after / 1e6).toFixed(1),
  bytesPerHash: Math.round((after - before) / table.size)
}))
