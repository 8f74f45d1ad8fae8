// Issue 45's checks against Megatron-LM's real coordinators: members that come and go, and a
// rolling restart of `mcore serve` with nothing failed.
//
// Usage: node fleet_members.mjs ROOT --protocol NAME --coordinators A,B,C --stats F1,F2,F3 --work DIR
// Phases:
//   file     `mcore serve --coordinators-file F`, F listing A and B. 90 chats and completions (a
//            third streamed), 8 at a time; once 20 are answered, C is added to F; once 45 are,
//            A is removed. Every answer exact (0 lost); the engines' SUBMIT_REQUESTs over the
//            burst equal its requests (0 repeated); C's engines took some; A's engines took none
//            after its removal beyond what they held then; the server says A left the fleet, and
//            300 ms later A's engines hold nothing. Closed only after its requests ended: a
//            request cut by A's close would have been submitted again elsewhere (a SUBMIT_REQUEST
//            more than requests) or failed.
//   rolling  two `mcore serve` over A, B, C (--drain-delay 2s), and this script as their load
//            balancer: it sends each request to a server whose /ready is 200 (probed every
//            100 ms). A stream of requests, 6 at a time, for 6 s; after 1.5 s the first server is
//            sent SIGTERM. Every request answered exactly (0 failed), the first server's /ready
//            503 within its drain while it still answered, and it exits 143.
// Prints a line per phase, a JSON summary, and `holds: ...` or `short: ...`; exit 0 only when it
// holds.
import { writeFileSync } from "node:fs"
import path from "node:path"
import {
  expectedText,
  makeRequest,
  openaiFor,
  readStats,
  run,
  serverCommand,
  sleep,
  startServer,
  tally,
  tokenizerDir
} from "./serve_kit.mjs"

const argv = process.argv.slice(2)
const root = argv.shift()
const opt = {}
for (let i = 0; i < argv.length; i += 2) opt[argv[i].replace(/^--/, "")] = argv[i + 1]
const coordinators = (opt.coordinators ?? "").split(",").filter(Boolean)
const statsFiles = (opt.stats ?? "").split(",").filter(Boolean)
if (!root || !opt.protocol || coordinators.length !== 3 || statsFiles.length !== 3 || !opt.work) {
  console.error("usage: node fleet_members.mjs ROOT --protocol NAME --coordinators A,B,C --stats F1,F2,F3 --work DIR")
  process.exit(2)
}
const problems = []
const problem = (text) => (problems.push(text), console.log(`PROBLEM ${text}`))
const submitsOf = (file) => (readStats(file)?.engines ?? []).reduce((n, e) => n + (e.recv?.SUBMIT_REQUEST ?? 0), 0)
const heldBy = (file) =>
  (readStats(file)?.engines ?? []).reduce((n, e) => n + (e.recv?.SUBMIT_REQUEST ?? 0) - (e.finished ?? 0) - (e.aborted?.length ?? 0), 0)
const show = (t) => Object.entries(t).map(([k, v]) => `${k} ${v.exact}/${v.requests} exact, ${v.wrong} wrong, ${v.error} error`).join("; ")
const base = ["--protocol", opt.protocol, "--tokenizer", tokenizerDir(root), "--model", "harness", "--max-model-len", "4096"]
const summary = {}
const [A, B, C] = coordinators

// --- file ----------------------------------------------------------------------------------------
{
  const file = path.join(opt.work, "coordinators")
  writeFileSync(file, `# fleet_members.mjs\n${A}\n${B}\n`)
  const server = await startServer(serverCommand(root, "--coordinators-file", [...base, "--coordinators-file", file, "--drain-delay", "0"]))
  const openai = await openaiFor(root, server.baseUrl)
  const before = statsFiles.map(submitsOf)
  const requests = Array.from({ length: 90 }, (_, i) =>
    makeRequest(5000 + i, { kind: i % 2 ? "chat" : "completion", stream: i % 3 === 0, maxTokens: 20 + (i % 11) }))
  const planned = await Promise.all(requests.map(async (r) => ({ r, want: await expectedText(server.baseUrl, r) })))
  // Eight at a time, each sent as one ends: requests keep coming while the set changes.
  let answered = 0
  let next = 0
  const results = []
  const running = Promise.all(Array.from({ length: 8 }, async () => {
    while (next < planned.length) {
      const { r, want } = planned[next++]
      results.push(await run(openai, r, want))
      answered++
    }
  }))
  while (answered < 20) await sleep(5)
  writeFileSync(file, `${A}\n${B}\n${C}\n`)
  const addedAt = answered
  while (answered < 45) await sleep(5)
  // A's engines' count and what they hold at the removal: what they may receive at most after it.
  const aBefore = submitsOf(statsFiles[0])
  const aHeld = heldBy(statsFiles[0])
  writeFileSync(file, `${B}\n${C}\n`)
  const removedAt = answered
  // Watch for the server saying A left; what A's engines hold 300 ms later (their stats are
  // rewritten every 50 ms).
  let heldWhenLeft
  const leftLine = `coordinator ${A} left the fleet`
  const watching = (async () => {
    for (let waited = 0; waited < 60_000 && heldWhenLeft === undefined; waited += 20) {
      if (server.stderr().includes(leftLine)) {
        await sleep(300)
        heldWhenLeft = heldBy(statsFiles[0])
      } else await sleep(20)
    }
  })()
  await running
  await watching
  await sleep(300)
  const t = tally(results)
  const after = statsFiles.map((f, i) => submitsOf(f) - before[i])
  const total = after.reduce((a, b) => a + b, 0)
  const aAfterRemoval = submitsOf(statsFiles[0]) - aBefore
  console.log(`phase file: ${show(t)}; C added at ${addedAt} answered, A removed at ${removedAt}; SUBMIT_REQUEST per coordinator ${after.join(", ")} (total ${total} for ${requests.length} requests)`)
  console.log(`phase file: A's engines after its removal: ${aAfterRemoval} more SUBMIT_REQUEST (they held ${aHeld} then); 300 ms after the server said A left, A's engines held ${heldWhenLeft ?? "(it never said)"}`)
  for (const x of results.filter((x) => x.outcome !== "exact").slice(0, 3)) problem(`file #${x.r.i}: ${x.outcome}: ${x.detail}`)
  if (total !== requests.length) problem(`file: ${total} SUBMIT_REQUEST for ${requests.length} requests (lost or repeated)`)
  if (after[2] === 0) problem("file: the coordinator added took no request")
  if (aAfterRemoval > aHeld) problem(`file: A's engines received ${aAfterRemoval} after its removal, holding ${aHeld} then`)
  if (heldWhenLeft !== 0) problem(`file: 300 ms after A left, its engines held ${heldWhenLeft ?? "(it never left)"}`)
  summary.file = { ...t, perCoordinator: after, addedAt, removedAt, aAfterRemoval, aHeld, heldWhenLeft }
  server.process.kill("SIGTERM")
  await new Promise((resolve) => server.process.on("exit", resolve))
}

// --- rolling -------------------------------------------------------------------------------------
{
  const args = [...base, ...coordinators.flatMap((a) => ["--coordinator", a]), "--drain-delay", "2s"]
  const command = serverCommand(root, "--drain-delay", args)
  const servers = [await startServer(command), await startServer(command)]
  const clients = await Promise.all(servers.map((s) => openaiFor(root, s.baseUrl)))
  // The balancer's view: which servers' /ready is 200.
  const ready = servers.map(() => true)
  const readyLog = servers.map(() => [])
  let probing = true
  const probe = (async () => {
    while (probing) {
      await Promise.all(servers.map(async (s, i) => {
        const status = await fetch(`${s.baseUrl}/ready`, { signal: AbortSignal.timeout(500) }).then((r) => r.status, () => 0)
        ready[i] = status === 200
        readyLog[i].push([Date.now(), status])
      }))
      await sleep(100)
    }
  })()
  const started = Date.now()
  const results = []
  const answeredBy = servers.map(() => 0)
  let next = 0
  let signalledAt
  const worker = async () => {
    while (Date.now() - started < 6_000) {
      const i = next++
      const target = ready[0] && ready[1] ? i % 2 : ready[0] ? 0 : ready[1] ? 1 : -1
      if (target < 0) {
        await sleep(20)
        continue
      }
      const r = makeRequest(8000 + i, { kind: i % 2 ? "chat" : "completion", stream: i % 3 === 0, maxTokens: 8 + (i % 7) })
      const want = await expectedText(servers[target].baseUrl, r)
      const x = await run(clients[target], r, want)
      answeredBy[target]++
      results.push({ ...x, server: target, at: Date.now() - started })
    }
  }
  const workers = Array.from({ length: 6 }, worker)
  await sleep(1_500)
  signalledAt = Date.now() - started
  servers[0].process.kill("SIGTERM")
  const exited = new Promise((resolve) => servers[0].process.on("exit", (code, signal) => resolve(code ?? signal)))
  await Promise.all(workers)
  const code = await Promise.race([exited, sleep(20_000).then(() => "still running")])
  probing = false
  await probe
  const t = tally(results)
  const failed = results.filter((x) => x.outcome !== "exact")
  const firstNotReady = readyLog[0].find(([at, status]) => at - started >= signalledAt && status !== 200)
  const afterSignal = results.filter((x) => x.server === 0 && x.at > signalledAt)
  console.log(`phase rolling: ${show(t)}; SIGTERM to server 1 at ${signalledAt} ms; its /ready ${firstNotReady ? `${firstNotReady[1]} at ${firstNotReady[0] - started} ms` : "never not 200"}; it answered ${afterSignal.length} request(s) after the signal; answered per server ${answeredBy.join(", ")}; it exited ${code}`)
  for (const x of failed.slice(0, 3)) problem(`rolling #${x.r.i} (server ${x.server + 1}): ${x.outcome}: ${x.detail}`)
  if (failed.length > 0) problem(`rolling: ${failed.length} request(s) failed`)
  if (firstNotReady?.[1] !== 503) problem(`rolling: server 1's /ready after SIGTERM: ${firstNotReady?.[1]}`)
  if (code !== 143) problem(`rolling: server 1 exited ${code}`)
  if (answeredBy[1] === 0) problem("rolling: the second server answered nothing")
  summary.rolling = { ...t, signalledAt, answeredBy, afterSignal: afterSignal.length, code }
  servers[1].process.kill("SIGTERM")
  await Promise.race([new Promise((resolve) => servers[1].process.on("exit", resolve)), sleep(15_000)])
}

console.log(JSON.stringify(summary))
console.log(problems.length === 0 ? "holds: every check" : `short: ${problems.length} problem(s); first: ${problems[0]}`)
process.exit(problems.length === 0 ? 0 : 1)
