// The routing comparison of routing.sh: one request sequence sent to a coordinator whose engines
// never finish a request while it runs, and where each request went, read from the engines'
// stats; then two such runs (Megatron's coordinator, ours) compared request by request.
//
//   node routing_check.mjs ROOT --address ADDR --stats FILE --engines N --block-size B --out FILE
//       [--protocol NAME] [--requests K] [--seed S] [--short 0]
//   node routing_check.mjs ROOT --compare MEGATRON.json,OURS.json
//
// With --address: N probes first (distinct one-block prompts: with nothing held and every engine idle,
// the n-th goes to the coordinator's engine n, lowest index first on ties), which name the
// coordinator's engine order whatever order the ranks registered in; then K requests over 5
// prompt families (each 8 blocks long): a family's first 1-8 blocks, then 0-4 blocks and 1 to B-1
// tokens of its own, so that requests share prefixes of every depth, deep prompts sometimes
// share only a shallow one (a match that weighs little against free capacity), and some are
// shorter than a block (no hashes: least loaded). Each asks for 2,000 tokens, so that none finishes during the run and
// the loads only grow (each engine's step must make that hold: 20 ms gives 40 s). Sent one after
// another over one client, in order. Writes { engines: [rank of coordinator index i], route:
// [coordinator index of each request] }.
// --compare: the two routes, request by request; prints `holds: ...` or `short: ...` (the first
// requests that went elsewhere) and exits 0 or 1.
import { readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import path from "node:path"
import { pathToFileURL } from "node:url"
import { promptSeed } from "./harness_model.mjs"
import { scriptArgs } from "./serve_kit.mjs"

const { root, opt } = scriptArgs()

if (opt.compare !== undefined) {
  const [a, b] = opt.compare.split(",").map((file) => JSON.parse(readFileSync(file, "utf8")))
  const differ = []
  for (let i = 0; i < a.route.length; i++) if (a.route[i] !== b.route[i]) differ.push(i)
  const spread = (route) => route.reduce((counts, e) => (counts[e]++, counts), Array(a.engines.length).fill(0)).join("/")
  console.log(`megatron: ${a.route.length} requests, per engine ${spread(a.route)}; ours: ${b.route.length}, per engine ${spread(b.route)}`)
  if (a.route.length !== b.route.length || differ.length > 0) {
    const shown = differ.slice(0, 5).map((i) => `#${i} ${a.requests[i]}: megatron ${a.route[i]}, ours ${b.route[i]}`)
    console.log(`short: ${differ.length} of ${a.route.length} routed differently; first: ${shown.join("; ")}`)
    process.exit(1)
  }
  console.log(`holds: ${a.route.length}/${a.route.length} requests routed to the same engine`)
  process.exit(0)
}

const address = opt.address
const engines = Number(opt.engines)
const block = Number(opt["block-size"])
const requests = Number(opt.requests ?? 120)

// A deterministic generator (the same sequence for both coordinators).
let state = Number(opt.seed ?? 7) >>> 0
const next = (n) => {
  state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0
  return state % n
}
const tokens = (n, base) => Array.from({ length: n }, (_, i) => 100 + ((base * 7_919 + i * 104_729 + next(50_000)) % 60_000))
const probes = Array.from({ length: engines }, (_, i) => tokens(block, 1_000 + i))
const families = Array.from({ length: 5 }, (_, f) => tokens(8 * block, f))
const workload = Array.from({ length: requests }, (_, i) => {
  const family = next(families.length)
  const depth = 1 + next(8)
  // Blocks of its own after the family's: a deep prompt that shares only a shallow prefix, whose
  // match then weighs little against an engine's free capacity.
  const own = next(5)
  // The tail (1 to B-1 tokens) makes each prompt its own: its seed names it in the engines' stats.
  const tail = 1 + next(block - 1)
  return {
    label: `family ${family}, ${depth} block(s) + ${own} of its own + ${tail}`,
    ids: [...families[family].slice(0, depth * block), ...tokens(own * block + tail, 10_000 + i)]
  }
})
// Some prompts shorter than a block (unless --short 0): no hashes, so the least-loaded engine
// (core_v0.16 to 0.18: the next in turn).
if (opt.short !== "0") for (let i = 5; i < workload.length; i += 17) workload[i] = { label: `short (${block - 3} tokens)`, ids: tokens(block - 3, 20_000 + i) }
const sequence = [...probes.map((ids, i) => ({ label: `probe ${i}`, ids })), ...workload]
const seeds = sequence.map(({ ids }) => promptSeed(ids))
if (new Set(seeds).size !== seeds.length) throw new Error("two prompts share a seed: change --seed")

const load = async (pkg) => import(pathToFileURL(path.resolve(root, `packages/${pkg}/dist/index.js`)).href)
const { InferenceClient } = await load("client")
const fromServer = createRequire(path.resolve(root, "packages/server/package.json"))
const Effect = await import(pathToFileURL(fromServer.resolve("effect/Effect")).href)
await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const client = yield* InferenceClient.make({ address, protocol: opt.protocol ?? "main", drainTimeout: "0 millis" })
  for (const { ids } of sequence) {
    yield* client.start({ prompt: ids, samplingParams: { num_tokens_to_generate: 2000 } })
  }
  // Every request at an engine: the engines' stats list each prompt's seed as it arrives.
  const deadline = Date.now() + 30_000
  for (;;) {
    const stats = JSON.parse(readFileSync(opt.stats, "utf8"))
    const arrived = stats.engines.reduce((n, e) => n + (e.prompts?.length ?? 0), 0)
    if (arrived >= sequence.length) break
    if (Date.now() > deadline) throw new Error(`only ${arrived} of ${sequence.length} requests reached an engine in 30 s`)
    yield* Effect.sleep("200 millis")
  }
})))

const stats = JSON.parse(readFileSync(opt.stats, "utf8"))
const rankOf = new Map()
stats.engines.forEach((e, rank) => {
  for (const [seed] of e.prompts ?? []) rankOf.set(seed, rank)
})
const ranks = seeds.map((seed) => rankOf.get(seed))
const order = ranks.slice(0, engines)
if (new Set(order).size !== engines || order.some((r) => r === undefined)) {
  throw new Error(`the ${engines} probes did not go to ${engines} distinct engines: ranks ${JSON.stringify(order)}`)
}
const route = ranks.slice(engines).map((rank) => order.indexOf(rank))
writeFileSync(opt.out, JSON.stringify({ engines: order, route, requests: workload.map((w) => w.label) }))
console.log(`drove ${sequence.length} requests; engine order (ranks) ${order.join(",")}`)
process.exit(0)
