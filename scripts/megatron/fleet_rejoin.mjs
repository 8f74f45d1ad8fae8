// Issue 27's "rejoin without harm" against a real coordinator, with two `mcore serve` processes
// over one fleet (which the issue asks to work without shared state). A restarting Megatron
// coordinator takes the first data_parallel_size messages of any content as engine
// registrations (coordinator.py:176-179): a client's CONNECT that arrives then is swallowed and
// its identity becomes an "engine" the coordinator routes requests to.
//
// Usage: node fleet_rejoin.mjs ROOT --protocol NAME --coordinators A,B,C --stats F1,F2,F3
//          --runner-pids R1,R2,R3 --python PY --stage DIR --work DIR [--register-delay-ms MS]
//          [--step-ms MS]
// Server X: --connect-timeout 20s --rejoin-backoff 100ms (dials back at once, and a swallowed
// dial waits 20 s for its CONNECT_ACK); server Y: --rejoin-backoff 5s (dials back after the
// engines registered: it joins); X_FLAGS / Y_FLAGS in the environment replace these. Both --routing round-robin --request-timeout 20s. The last
// coordinator is SIGKILLed and its harness restarted on its port, engines registering MS (3000)
// after the bind. Once Y has rejoined it, a burst of 30 requests through Y (while X's swallowed
// dial still waits); once X has too (or 60 s), a burst of 30 through X: every answer must be exact (a request the coordinator routes to X's swallowed identity
// while X's dial still waits is delivered to X's socket, which no engine answers).
// Prints what it saw, a JSON summary, `holds: ...` or `short: ...`.
import { spawn } from "node:child_process"
import path from "node:path"
import { fileURLToPath } from "node:url"
import {
  expectedText,
  makeRequest,
  openaiFor,
  pidAlive,
  problemLog,
  readStats,
  run,
  scriptArgs,
  showTally as show,
  sleep,
  startServer,
  submitsOf,
  tally,
  tokenizerDir
} from "./serve_kit.mjs"

const HERE = path.dirname(fileURLToPath(import.meta.url))
const { root, opt } = scriptArgs()
const coordinators = opt.coordinators.split(",")
const statsFiles = opt.stats.split(",")
const runners = opt["runner-pids"].split(",").map(Number)
const victim = coordinators.length - 1
const delay = opt["register-delay-ms"] ?? "3000"
const { problem, problems, verdict } = problemLog()
const cli = path.resolve(root, "packages/cli/dist/main.js")
const common = ["serve", "--protocol", opt.protocol, "--tokenizer", tokenizerDir(root), "--model", "harness", "--port", "0",
  "--max-model-len", "4096", "--routing", "round-robin", "--request-timeout", "20s", ...coordinators.flatMap((a) => ["--coordinator", a])]
// X_FLAGS / Y_FLAGS (space-separated) replace each server's own flags.
const flagsOf = (name, fallback) => (process.env[`${name}_FLAGS`] ?? fallback).split(" ").filter(Boolean)
const servers = {
  X: await startServer({ argv: [cli, ...common, ...flagsOf("X", "--connect-timeout 20s --rejoin-backoff 100ms")] }),
  Y: await startServer({ argv: [cli, ...common, ...flagsOf("Y", "--rejoin-backoff 5s")] })
}
console.log(`X: ${flagsOf("X", "--connect-timeout 20s --rejoin-backoff 100ms").join(" ") || "(defaults)"}; Y: ${flagsOf("Y", "--rejoin-backoff 5s").join(" ") || "(defaults)"}`)
const clients = { X: await openaiFor(root, servers.X.baseUrl), Y: await openaiFor(root, servers.Y.baseUrl) }
const burst = async (name, from, n) => {
  const requests = Array.from({ length: n }, (_, k) => makeRequest(from + k, { kind: k % 2 ? "chat" : "completion", stream: k % 3 === 0, maxTokens: 6 + (k % 5) }))
  const planned = await Promise.all(requests.map(async (r) => ({ r, want: await expectedText(servers[name].baseUrl, r) })))
  const results = await Promise.all(planned.map(({ r, want }) => run(clients[name], r, want)))
  for (const x of results.filter((x) => x.outcome !== "exact").slice(0, 3)) problem(`server ${name} #${x.r.i}: ${x.outcome}: ${x.detail}`)
  return tally(results)
}
const up = async (name) => {
  const text = await (await fetch(`${servers[name].baseUrl}/metrics`)).text()
  return text.split("\n").find((l) => l.startsWith(`mcore_fleet_coordinator_up{coordinator="${coordinators[victim]}"}`))?.split(" ").pop()
}
const summary = {}

for (const name of ["X", "Y"]) {
  const t = await burst(name, name === "X" ? 0 : 100, 12)
  console.log(`warm-up through ${name}: ${show(t)}`)
}
const pid = readStats(statsFiles[victim]).coordinator.pid
process.kill(pid, "SIGKILL")
process.kill(runners[victim], "SIGTERM")
for (let k = 0; k < 100 && pidAlive(runners[victim]); k++) await sleep(50)
const port = coordinators[victim].split(":").pop()
let err = ""
let out = ""
const restarted = spawn(opt.python, [path.join(HERE, "run_coordinator.py"), "--stage", opt.stage, "--engines", "2", "--step-ms", opt["step-ms"] ?? "20",
  "--port", port, "--register-delay-ms", delay, "--stats", `${opt.work}/restarted.stats.json`], { stdio: ["ignore", "pipe", "pipe"] })
// fleet.sh's clean-up stops it should this script end early
;(await import("node:fs")).writeFileSync(`${opt.work}/restarted.pid`, String(restarted.pid))
restarted.stdout.on("data", (c) => (out += c))
restarted.stderr.on("data", (c) => (err += c))
const t0 = Date.now()
console.log(`SIGKILL coordinator ${victim} (pid ${pid}); its harness restarted on port ${port}, engines registering ${delay} ms after the bind`)
// Each server's gauge for the restarted coordinator, watched from the restart on: when it first
// showed 1, and every change (it may join and lose it again).
const joined = {}
const gauges = { X: [], Y: [] }
let watching = true
const watch = (async () => {
  while (watching) {
    for (const name of ["X", "Y"]) {
      const g = await up(name).catch(() => undefined)
      const last = gauges[name].at(-1)
      if (last?.[1] !== g) gauges[name].push([Date.now() - t0, g])
      if (g === "1" && joined[name] === undefined) joined[name] = Date.now() - t0
    }
    await sleep(50)
  }
})()
const waitJoin = async (name) => {
  while (Date.now() - t0 < 60_000 && joined[name] === undefined) await sleep(50)
}
// Y joins first (X's first dial, swallowed, waits 20 s for its CONNECT_ACK): Y's burst then,
// while X's swallowed identity is still connected, then X's once X has joined too.
await waitJoin("Y")
const xWhileY = await up("X").catch(() => undefined)
console.log(`Y rejoined after ${joined.Y ?? "-"} ms (X's gauge for it then: ${xWhileY}); a burst through Y`)
const results = []
results[1] = await burst("Y", 2000, 30)
console.log(`burst through Y: ${show(results[1])} (${Date.now() - t0} ms after the restart)`)
await waitJoin("X")
console.log(`X rejoined after ${joined.X ?? "-"} ms; a burst through X`)
results[0] = await burst("X", 1000, 30)
console.log(`burst through X: ${show(results[0])}`)
for (const name of ["X", "Y"]) if (joined[name] === undefined) problem(`server ${name} did not rejoin the restarted coordinator within 60 s`)
await sleep(300)
watching = false
await watch
for (const name of ["X", "Y"]) console.log(`${name}'s up gauge for it (ms after the restart: value): ${gauges[name].map(([t, g]) => `${t}: ${g}`).join(", ")}`)
summary.gauges = gauges
const s = readStats(`${opt.work}/restarted.stats.json`)
const took = submitsOf(`${opt.work}/restarted.stats.json`)
console.log(`the restarted coordinator: ${s?.coordinator?.alive && !s?.coordinator?.exception ? "alive" : `dead: ${s?.coordinator?.exception}`}; its engines received ${took} SUBMIT_REQUEST`)
for (const l of err.split("\n").filter((l) => /WARNING|ERROR|Error|Traceback/.test(l)).slice(0, 8)) console.log(`     restarted coordinator: ${l.slice(0, 240)}`)
if (s?.coordinator?.exception) {
  const frames = String(s.coordinator.traceback ?? "").split("\n").filter((l) => l.trim().startsWith("File ")).slice(-4)
  for (const f of frames) console.log(`     its traceback: ${f.trim().replace(/^File ".*\/(megatron\/core\/[^"]+)"/, "$1")}`)
}
if (!(s?.coordinator?.alive && !s?.coordinator?.exception)) problem(`the restarted coordinator died: ${s?.coordinator?.exception}`)
summary.joinedMs = joined
summary.X = results[0]
summary.Y = results[1]
summary.restartedTook = took
summary.warnings = err.split("\n").filter((l) => /WARNING|ERROR/.test(l))
for (const name of ["X", "Y"]) servers[name].process.kill("SIGTERM")
restarted.kill("SIGTERM")
await sleep(500)
console.log(JSON.stringify(summary))
console.log(verdict())
process.exit(problems.length === 0 ? 0 : 1)
