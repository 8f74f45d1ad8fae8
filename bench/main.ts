// `pnpm bench`: runs every package's benchmark in turn. Each reports ratios against a baseline
// measured in the same run, never absolute thresholds. `pnpm bench <name> ...` runs those suites;
// flags (`--quick`) are left for the suites to read from `process.argv`.
const suites = process.argv.slice(2).filter((arg) => !arg.startsWith("--"))
const all: Record<string, () => Promise<unknown>> = {
  client: () => import("../packages/client/bench/client.bench.ts").then((m) => m.run()),
  fleet: () => import("../packages/client/bench/fleet.bench.ts").then((m) => m.run()),
  transport: () => import("../packages/client/bench/transport.bench.ts").then((m) => m.run()),
  // The client library in one process, then the server over it (its own processes).
  disaggregated: () =>
    import("../packages/client/bench/disaggregated.bench.ts").then((m) => m.run())
      .then(() => import("../packages/server/bench/disaggregated.bench.ts")).then((m) => m.run()),
  blockHashes: () => import("../packages/protocol/bench/blockHashes.bench.ts").then((m) => m.run()),
  submitEncode: () => import("../packages/protocol/bench/submitEncode.bench.ts").then((m) => m.run()),
  text: () => import("../packages/text/bench/text.bench.ts").then((m) => m.run()),
  server: () => import("../packages/server/bench/server.bench.ts").then((m) => m.run()),
  toolArguments: () => import("../packages/server/bench/toolArguments.bench.ts").then((m) => m.run()),
  // Beside Megatron-LM's coordinator: needs MEGATRON_GIT and Python with pyzmq (else one line).
  coordinator: () => import("../packages/coordinator/bench/coordinator.bench.ts").then((m) => m.run()),
  // mcore serve as the coordinator beside mcore serve over Megatron-LM's (the same needs).
  hosted: () => import("../packages/coordinator/bench/hosted.bench.ts").then((m) => m.run())
}
// Long runs rather than comparisons: only when named (`pnpm bench soak`).
const named: Record<string, () => Promise<unknown>> = {
  soak: () => import("../packages/client/bench/soak.ts").then((m) => m.run())
}
for (const [name, run] of Object.entries(all)) {
  if (suites.length === 0 || suites.includes(name)) await run()
}
for (const [name, run] of Object.entries(named)) {
  if (suites.includes(name)) await run()
}
