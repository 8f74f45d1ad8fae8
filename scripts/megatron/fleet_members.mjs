// Issue 45's checks against Megatron-LM's real coordinators: members that come and go, and a
// rolling restart of `mcore serve` with nothing failed.
//
// Usage: node fleet_members.mjs ROOT --protocol NAME --coordinators A,B,C --stats F1,F2,F3 --work DIR
//          [--python PY --stage DIR --step-ms MS]   (the dns phase runs with these)
// Phases:
//   file     `mcore serve --coordinators-file F`, F listing A and B. 90 chats and completions (a
//            third streamed), 8 at a time; once 20 are answered, C is added to F; once 45 are,
//            A is removed. Every answer exact (0 lost); the engines' SUBMIT_REQUESTs over the
//            burst equal its requests (0 repeated); C's engines took some; the server sent A
//            nothing after it took the removal (it says A is leaving; its own count of requests
//            sent to A, the last value before A's series leave /metrics), and A's engines received
//            what it sent; the server says A left the fleet, and
//            300 ms later A's engines hold nothing. Closed only after its requests ended: a
//            request cut by A's close would have been submitted again elsewhere (a SUBMIT_REQUEST
//            more than requests) or failed.
//   dns      (with --python and --stage) two more coordinators on one port at 127.0.0.1 and
//            127.0.0.2, and `mcore serve --coordinator dns:coordinators.test:PORT --dns-servers`
//            the testkit's DNS server: the name's records gain 127.0.0.2 and lose 127.0.0.1, as
//            the file did; the same checks.
//   rolling  two `mcore serve` over A, B, C (--drain-delay 2s), and this script as their load
//            balancer: it sends each request to a server whose /ready is 200 (probed every
//            100 ms). A stream of requests, 6 at a time, for 6 s; after 1.5 s the first server is
//            sent SIGTERM. Every request answered exactly (0 failed), the first server's /ready
//            503 within its drain while it still answered, and it exits 143.
// Prints a line per phase, a JSON summary, and `holds: ...` or `short: ...`; exit 0 only when it
// holds.
import { spawn } from "node:child_process"
import { writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import net from "node:net"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import {
  expectedText,
  heldBy,
  makeRequest,
  openaiFor,
  problemLog,
  run,
  scriptArgs,
  serverCommand,
  showTally as show,
  sleep,
  startServer,
  submitsOf,
  tally,
  tokenizerDir
} from "./serve_kit.mjs"

const HERE = path.dirname(fileURLToPath(import.meta.url))
const { root, opt } = scriptArgs()
const coordinators = (opt.coordinators ?? "").split(",").filter(Boolean)
const statsFiles = (opt.stats ?? "").split(",").filter(Boolean)
if (!root || !opt.protocol || coordinators.length !== 3 || statsFiles.length !== 3 || !opt.work) {
  console.error("usage: node fleet_members.mjs ROOT --protocol NAME --coordinators A,B,C --stats F1,F2,F3 --work DIR")
  process.exit(2)
}
const { problem, problems, verdict } = problemLog()
const base = ["--protocol", opt.protocol, "--tokenizer", tokenizerDir(root), "--model", "harness", "--max-model-len", "4096"]
const summary = {}
const [A, B, C] = coordinators

/**
 * 90 requests 8 at a time through `server`; `add()` once 20 are answered, `remove()` once 45
 * are; `stats` are the stats files of every coordinator that may take requests (`stats[0]` the
 * one removed, `stats[added]` the one added), `removed` its address as the server names it.
 */
const membershipBurst = async (label, server, stats, added, removed, add, remove) => {
  const openai = await openaiFor(root, server.baseUrl)
  const before = stats.map(submitsOf)
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
  add()
  const addedAt = answered
  while (answered < 45) await sleep(5)
  remove()
  const removedAt = answered
  // Once the server has taken the removal (it says so; a DNS change is seen at the next
  // resolution), the removed one's engines' count and what they hold: what they may have at most
  // from then on.
  const leaving = `coordinator ${removed} is leaving the fleet`
  for (let waited = 0; !server.stderr().includes(leaving) && waited < 10_000; waited += 5) await sleep(5)
  // The server's own count of requests it sent there, exact where the engines' stats lag.
  const sentThere = async () => {
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text()
    const line = text.split("\n").find((l) => l.startsWith("mcore_client_requests_submitted{") && l.includes(`coordinator="${removed}"`))
    return Number(line?.split(" ").pop() ?? NaN)
  }
  const sentAtRemoval = await sentThere()
  // Its series leave /metrics once it has left: the last value seen is what was sent there.
  let sentLast = sentAtRemoval
  let polling = true
  const poller = (async () => {
    while (polling) {
      const now = await sentThere()
      if (Number.isNaN(now)) break
      sentLast = now
      await sleep(20)
    }
  })()
  // Watch for the server saying it left; what its engines hold 300 ms later (their stats are
  // rewritten every 50 ms).
  let heldWhenLeft
  const leftLine = `coordinator ${removed} left the fleet`
  const watching = (async () => {
    for (let waited = 0; waited < 60_000 && heldWhenLeft === undefined; waited += 20) {
      if (server.stderr().includes(leftLine)) {
        await sleep(300)
        heldWhenLeft = heldBy(stats[0])
      } else await sleep(20)
    }
  })()
  await running
  await watching
  await sleep(300)
  const t = tally(results)
  const after = stats.map((f, i) => submitsOf(f) - before[i])
  const total = after.reduce((a, b) => a + b, 0)
  polling = false
  await poller
  const sentAtEnd = sentLast
  const seriesGone = Number.isNaN(await sentThere())
  console.log(`phase ${label}: ${show(t)}; one added at ${addedAt} answered, one removed at ${removedAt}; SUBMIT_REQUEST per coordinator ${after.join(", ")} (total ${total} for ${requests.length} requests)`)
  console.log(`phase ${label}: requests the server sent the removed one: ${sentAtRemoval} when it took the removal, ${sentAtEnd} at the end (its engines received ${after[0]}); 300 ms after the server said it left, they held ${heldWhenLeft ?? "(it never said)"}; its series ${seriesGone ? "gone" : "still"} on /metrics`)
  for (const x of results.filter((x) => x.outcome !== "exact").slice(0, 3)) problem(`${label} #${x.r.i}: ${x.outcome}: ${x.detail}`)
  if (total !== requests.length) problem(`${label}: ${total} SUBMIT_REQUEST for ${requests.length} requests (lost or repeated)`)
  if (after[added] === 0) problem(`${label}: the coordinator added took no request`)
  if (!(sentAtEnd === sentAtRemoval)) problem(`${label}: the server sent the removed one ${sentAtEnd - sentAtRemoval} request(s) after taking its removal`)
  if (!seriesGone) problem(`${label}: the removed one's series are still on /metrics after it left`)
  if (after[0] !== sentAtEnd) problem(`${label}: the removed one's engines received ${after[0]}, the server sent ${sentAtEnd}`)
  if (heldWhenLeft !== 0) problem(`${label}: 300 ms after it left, its engines held ${heldWhenLeft ?? "(it never left)"}`)
  return { ...t, perCoordinator: after, addedAt, removedAt, sentAtRemoval, sentAtEnd, heldWhenLeft }
}

// --- file ----------------------------------------------------------------------------------------
{
  const file = path.join(opt.work, "coordinators")
  writeFileSync(file, `# fleet_members.mjs\n${A}\n${B}\n`)
  const server = await startServer(serverCommand(root, "--coordinators-file", [...base, "--coordinators-file", file, "--drain-delay", "0"]))
  summary.file = await membershipBurst("file", server, statsFiles, 2, A,
    () => writeFileSync(file, `${A}\n${B}\n${C}\n`),
    () => writeFileSync(file, `${B}\n${C}\n`))
  server.process.kill("SIGTERM")
  await new Promise((resolve) => server.process.on("exit", resolve))
}

// --- dns -----------------------------------------------------------------------------------------
// Two more coordinators on one port, at 127.0.0.1 and 127.0.0.2 (Megatron's binds its host), and
// the testkit's DNS server (from ROOT's build) answering for coordinators.test.
if (opt.python && opt.stage) {
  const port = await new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })
  const hosts = ["127.0.0.1", "127.0.0.2"]
  const statsOf = hosts.map((_, i) => path.join(opt.work, `dns${i}.stats.json`))
  const children = hosts.map((host, i) => spawn(opt.python, [
    path.join(HERE, "run_coordinator.py"), "--stage", opt.stage, "--engines", "2", "--step-ms", opt["step-ms"] ?? "20",
    "--host", host, "--port", String(port), "--stats", statsOf[i]
  ], { stdio: ["ignore", "pipe", "pipe"] }))
  const addresses = await Promise.all(children.map((child) => new Promise((resolve) => {
    let out = ""
    child.stdout.on("data", (c) => {
      out += c
      const lines = out.split("\n")
      if (lines[1] === "ready") resolve(lines[0])
    })
    child.on("exit", () => resolve(undefined))
  })))
  const wanted = hosts.map((h) => `tcp://${h}:${port}`)
  if (addresses.some((a, i) => a !== wanted[i])) {
    problem(`dns: the coordinators came up at ${addresses.join(", ")}, not ${wanted.join(", ")}`)
  } else {
    const fromRoot = createRequire(path.resolve(root, "packages/testkit/package.json"))
    const Effect = await import(pathToFileURL(fromRoot.resolve("effect/Effect")).href)
    const Scope = await import(pathToFileURL(fromRoot.resolve("effect/Scope")).href)
    const { TestDns } = await import(pathToFileURL(path.resolve(root, "packages/testkit/dist/index.js")).href)
    const scope = Effect.runSync(Scope.make())
    const zone = await Effect.runPromise(Scope.provide(scope)(TestDns.make({ "coordinators.test": [hosts[0]] })))
    const server = await startServer(serverCommand(root, "--dns-servers", [
      ...base, "--coordinator", `dns:coordinators.test:${port}`, "--dns-servers", zone.server, "--resolve-interval", "200ms", "--drain-delay", "0"
    ]))
    summary.dns = await membershipBurst("dns", server, statsOf, 1, wanted[0],
      () => zone.set("coordinators.test", hosts),
      () => zone.set("coordinators.test", [hosts[1]]))
    server.process.kill("SIGTERM")
    await new Promise((resolve) => server.process.on("exit", resolve))
    await Effect.runPromise(Scope.close(scope, (await import(pathToFileURL(fromRoot.resolve("effect/Exit")).href)).void))
  }
  for (const child of children) child.kill("SIGTERM")
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
console.log(verdict())
process.exit(problems.length === 0 ? 0 : 1)
