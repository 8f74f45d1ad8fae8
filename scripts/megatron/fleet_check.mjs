// Issue 27's check against Megatron-LM's real coordinators: one server over a fleet of them
// (`mcore serve --coordinator A --coordinator B ...`, or lib_serve.mjs's `Fleet.layer` while the
// CLI has no --routing), called with the `openai` SDK, every answer checked token for token
// (harness_model.mjs), then one coordinator process SIGKILLed mid-burst.
//
// Usage: node fleet_check.mjs ROOT --protocol NAME --coordinators A,B,C --stats F1,F2,F3
//          [--kill INDEX] [--routing POLICY] [--burst N] [--kill-burst N] [--kill-tokens T]
//          [--kill-delay-ms MS]
//          [--rejoin MS --python PY --stage DIR --step-ms MS --runner-pids R0,R1,R2 --work DIR]
// Fi is coordinator i's run_coordinator.py --stats file (its coordinator pid, engines' counts).
// Phases:
//   all-up  a burst of chats and completions (a quarter of each streamed), all concurrent:
//           every answer exact; how many each coordinator's engines received
//   chats   (issue 44) 40 chats x 6 turns, all at once, no system prompt, each turn a user
//           message of 20-40 tokens after the answer to the last: every answer exact; where each
//           turn went (the engines' stats record each prompt's seed and length): the mean share
//           of a chat's turns on its most-used coordinator >= 0.95; then the same with a
//           `prompt_cache_key` per chat, its turns taking turns between this server and a second
//           one over the same coordinators (sharing nothing): 1.0; then 120 distinct chats'
//           first turns at once: no coordinator over 1.25x the mean
//   kill    a longer burst; once coordinator INDEX's engines hold requests, and MS (200) later
//           (its streams under way), its coordinator process is SIGKILLed: every unstreamed request must be answered exactly (by the
//           survivors: re-submitted there if it had produced nothing); a stream may end with an
//           error only if what it delivered is a prefix of its answer (nothing repeated, nothing
//           wrong); a stream that ends must be exact
//   after   the killed process is gone, the survivors' processes alive and their stats say so;
//           one request to each survivor directly (the project's InferenceClient) exact; one
//           more burst through the server, exact; /health 200; the fleet's /metrics lines
//   rejoin  (with --rejoin MS) the killed coordinator's harness (runner pid Ri) stopped and a new
//           one started on its port whose engines register MS after the bind: the fleet rejoins
//           it; a burst through the server all exact, the rejoined one taking requests and alive
// Prints a line per phase, a JSON summary line, and `holds: ...` or `short: ...`; exit 0 only
// when it holds.
import path from "node:path"
import { pathToFileURL } from "node:url"
import { expectedTokens, promptSeed } from "./harness_model.mjs"
import {
  expectedText,
  heldBy,
  makeRequest,
  openaiFor,
  pidAlive,
  post,
  problemLog,
  readStats,
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

const { root, opt } = scriptArgs()
const coordinators = (opt.coordinators ?? "").split(",").filter(Boolean)
const statsFiles = (opt.stats ?? "").split(",").filter(Boolean)
if (!root || !opt.protocol || coordinators.length < 2 || statsFiles.length !== coordinators.length) {
  console.error("usage: node fleet_check.mjs ROOT --protocol NAME --coordinators A,B,C --stats F1,F2,F3 [--kill INDEX]")
  process.exit(2)
}
const victim = Number(opt.kill ?? coordinators.length - 1)
const burst = Number(opt.burst ?? 48)
const killBurst = Number(opt["kill-burst"] ?? 90)
const killTokens = Number(opt["kill-tokens"] ?? 40)
// After the victim holds requests, this long more, so that some of its streams are under way.
const killDelayMs = Number(opt["kill-delay-ms"] ?? 200)

const { problem, problems, verdict } = problemLog()

const args = ["--protocol", opt.protocol, "--tokenizer", tokenizerDir(root), "--model", "harness", "--max-model-len", "4096"]
for (const address of coordinators) args.push("--coordinator", address)
if (opt.routing) args.push("--routing", opt.routing)
const command = serverCommand(root, "--routing", args)
console.log(`server: ${command.kind}, ${coordinators.length} coordinators, routing ${opt.routing ?? "default (prefix)"}`)
const server = await startServer(command)
const openai = await openaiFor(root, server.baseUrl)

/** A burst: request i is a chat when i % 4 < 2, streamed when i % 2 == 1. */
const shapes = (n, from, maxTokens) =>
  Array.from({ length: n }, (_, k) => {
    const i = from + k
    return makeRequest(i, { kind: i % 4 < 2 ? "chat" : "completion", stream: i % 2 === 1, maxTokens: maxTokens(i) })
  })
const withWants = async (requests) => Promise.all(requests.map(async (r) => ({ r, want: await expectedText(server.baseUrl, r) })))
const firstDetails = (results, outcome) => results.filter((x) => x.outcome === outcome).slice(0, 3).map((x) => `#${x.r.i} (${x.r.kind}${x.r.stream ? ", streamed" : ""}): ${x.detail}`)
const summary = { server: command.kind, coordinators: coordinators.length, routing: opt.routing ?? "prefix" }

// --- all-up --------------------------------------------------------------------------------------
{
  const before = statsFiles.map(submitsOf)
  const planned = await withWants(shapes(burst, 0, (i) => 4 + (i % 7)))
  const results = await Promise.all(planned.map(({ r, want }) => run(openai, r, want)))
  const t = tally(results)
  const spread = statsFiles.map((f, i) => submitsOf(f) - before[i])
  console.log(`phase all-up: ${show(t)}; engines' SUBMIT_REQUEST per coordinator: ${spread.join(", ")}`)
  for (const d of [...firstDetails(results, "wrong"), ...firstDetails(results, "error")]) problem(`all-up ${d}`)
  summary.allUp = { ...t, perCoordinator: spread }
}

// --- chats (issue 44) ----------------------------------------------------------------------------
{
  const CHATS = 40
  const TURNS = 6
  const ANSWER = 8
  /** Each engine's recorded prompts ([seed, length]) of coordinator `file`. */
  const promptsOf = (file) => (readStats(file)?.engines ?? []).map((e) => e.prompts ?? [])
  /** A user message of 20-40 characters (one token each here), distinct per chat, turn and run. */
  const userText = (run, c, t) => {
    const words = ["engine", "route", "block", "cache", "prefix", "token", "queue", "batch", "rank", "step"]
    let text = `${run}${c}.${t}`
    for (let k = 0; text.length < 20 + ((c * 7 + t * 13) % 21); k++) text += ` ${words[(c * 3 + t * 5 + k) % words.length]}`
    return text.slice(0, 20 + ((c * 7 + t * 13) % 21))
  }
  // A second server over the same coordinators: keyed turns alternate between the two.
  const second = await startServer(command)
  const openaiSecond = await openaiFor(root, second.baseUrl)
  const chatRun = async (run, keyed) => {
    const before = statsFiles.map((f) => promptsOf(f).map((p) => p.length))
    const turns = []
    const outcomes = { exact: 0, wrong: 0, error: 0 }
    await Promise.all(Array.from({ length: CHATS }, async (_, c) => {
      const messages = []
      for (let t = 0; t < TURNS; t++) {
        messages.push({ role: "user", content: userText(run, c, t) })
        const { body: tokenized } = await post(server.baseUrl, "/tokenize", { model: "harness", messages })
        const ids = tokenized.tokens
        const { body: detok } = await post(server.baseUrl, "/detokenize", { model: "harness", tokens: expectedTokens(ids, ANSWER) })
        let content = ""
        try {
          const reply = await (keyed && t % 2 === 1 ? openaiSecond : openai).chat.completions.create({
            model: "harness",
            messages,
            max_tokens: ANSWER,
            ...(keyed ? { prompt_cache_key: `${run}-chat-${c}` } : {})
          })
          content = reply.choices[0].message.content
          if (content === detok.prompt) outcomes.exact++
          else (outcomes.wrong++, problem(`chats ${run} chat ${c} turn ${t}: ${JSON.stringify(content)} != ${JSON.stringify(detok.prompt)}`))
        } catch (e) {
          outcomes.error++
          problem(`chats ${run} chat ${c} turn ${t}: ${String(e).slice(0, 160)}`)
        }
        turns.push({ c, t, key: `${promptSeed(ids)}:${ids.length}` })
        messages.push({ role: "assistant", content })
      }
    }))
    await sleep(300) // the stats files are rewritten as the engines go
    const where = new Map()
    statsFiles.forEach((f, i) => {
      for (const [seed, length] of promptsOf(f).flatMap((p, e) => p.slice(before[i][e] ?? 0))) {
        const key = `${seed}:${length}`
        where.set(key, where.has(key) && where.get(key) !== i ? -1 : i)
      }
    })
    let unplaced = 0
    const shares = Array.from({ length: CHATS }, (_, c) => {
      const counts = new Array(coordinators.length).fill(0)
      for (const turn of turns.filter((x) => x.c === c)) {
        const i = where.get(turn.key)
        if (i === undefined || i < 0) unplaced++
        else counts[i]++
      }
      return Math.max(...counts) / TURNS
    })
    const mean = shares.reduce((a, b) => a + b, 0) / shares.length
    const onOne = shares.filter((x) => x === 1).length
    return { ...outcomes, mean, onOne, unplaced }
  }
  const plain = await chatRun("a", false)
  console.log(`phase chats: ${CHATS} chats x ${TURNS} turns, no key: ${plain.exact}/${CHATS * TURNS} exact; mean share of a chat's turns on its most-used coordinator ${plain.mean.toFixed(3)} (${plain.onOne} of ${CHATS} on one); turns not found in the engines' stats ${plain.unplaced}`)
  if (plain.mean < 0.95) problem(`chats: mean share ${plain.mean.toFixed(3)} < 0.95`)
  const keyed = await chatRun("b", true)
  console.log(`phase chats: the same with a prompt_cache_key each, turns alternating between two servers: ${keyed.exact}/${CHATS * TURNS} exact; mean share ${keyed.mean.toFixed(3)} (${keyed.onOne} of ${CHATS} on one); not found ${keyed.unplaced}`)
  second.process.kill("SIGTERM")
  if (keyed.mean < 1) problem(`chats: with prompt_cache_key, mean share ${keyed.mean.toFixed(3)} < 1`)
  if (plain.unplaced + keyed.unplaced > 0) problem(`chats: ${plain.unplaced + keyed.unplaced} turn(s) not found in the engines' stats`)
  const before = statsFiles.map(submitsOf)
  await Promise.all(Array.from({ length: 120 }, (_, c) =>
    openai.chat.completions.create({ model: "harness", messages: [{ role: "user", content: userText("d", c, 0) }], max_tokens: ANSWER })))
  await sleep(300)
  const spread = statsFiles.map((f, i) => submitsOf(f) - before[i])
  const ratio = Math.max(...spread) / (spread.reduce((a, b) => a + b, 0) / spread.length)
  console.log(`phase chats: 120 distinct first turns at once: SUBMIT_REQUEST per coordinator ${spread.join(", ")}, max / mean ${ratio.toFixed(3)}`)
  if (ratio > 1.25) problem(`chats: distinct prompts' max / mean load ${ratio.toFixed(3)} > 1.25`)
  summary.chats = { plain, keyed, distinct: { perCoordinator: spread, ratio } }
}

// --- kill ----------------------------------------------------------------------------------------
{
  const stats = readStats(statsFiles[victim])
  const pid = stats?.coordinator?.pid
  const before = statsFiles.map(submitsOf)
  const planned = await withWants(shapes(killBurst, 1000, (i) => killTokens - (i % 5)))
  const started = Date.now()
  const running = Promise.all(planned.map(({ r, want }) => run(openai, r, want)))
  // Mid-burst: once the victim's engines hold at least a few requests (or after 2 s).
  let held = 0
  while (Date.now() - started < 2000) {
    held = heldBy(statsFiles[victim])
    if (held >= 5) break
    await sleep(20)
  }
  await sleep(killDelayMs)
  held = heldBy(statsFiles[victim])
  const atKill = statsFiles.map((f, i) => submitsOf(f) - before[i])
  process.kill(pid, "SIGKILL")
  const killedAfterMs = Date.now() - started
  console.log(`phase kill: SIGKILL coordinator ${victim} (${coordinators[victim]}, pid ${pid}) ${killedAfterMs} ms into the burst, its engines holding ${held} request(s) unfinished; SUBMIT_REQUEST per coordinator so far: ${atKill.join(", ")}`)
  if (held === 0) problem(`kill: coordinator ${victim} held no request when killed: not mid-burst`)
  const results = await running
  const tookMs = Date.now() - started
  const t = tally(results)
  const after = statsFiles.map((f, i) => submitsOf(f) - before[i])
  console.log(`phase kill: ${show(t)}; ${t.streamed?.error ?? 0} stream(s) ended with an error; burst answered in ${tookMs} ms; SUBMIT_REQUEST per coordinator: ${after.join(", ")}`)
  const errorKinds = {}
  for (const x of results.filter((x) => x.outcome === "error")) {
    const kind = x.detail.slice(0, 120)
    errorKinds[kind] = (errorKinds[kind] ?? 0) + 1
  }
  for (const [kind, n] of Object.entries(errorKinds)) console.log(`     error x${n}: ${kind}`)
  const streamedErrors = results.filter((x) => x.outcome === "error" && x.r.stream)
  if (streamedErrors.length) {
    console.log(`     streams that ended with an error had delivered ${streamedErrors.map((x) => x.text.length).join(", ")} chars (each a prefix of its answer)`)
  }
  if ((t.unstreamed?.exact ?? 0) !== (t.unstreamed?.requests ?? 0)) problem(`kill: unstreamed ${t.unstreamed?.exact}/${t.unstreamed?.requests} exact`)
  if ((t.streamed?.wrong ?? 0) > 0) problem(`kill: ${t.streamed.wrong} stream(s) wrong`)
  for (const d of [...firstDetails(results, "wrong"), ...firstDetails(results.filter((x) => !x.r.stream), "error")]) problem(`kill ${d}`)
  summary.kill = { ...t, victim, victimPid: pid, victimHeldAtKill: held, killedAfterMs, burstMs: tookMs, perCoordinatorAtKill: atKill, perCoordinator: after, errors: errorKinds }
}

// --- after ---------------------------------------------------------------------------------------
{
  await sleep(300)
  const fates = statsFiles.map((f, i) => {
    const s = readStats(f)
    const c = s?.coordinator ?? {}
    return { index: i, pid: c.pid, processAlive: pidAlive(c.pid), statsAlive: c.alive, exception: c.exception ?? null }
  })
  for (const f of fates) {
    const expectAlive = f.index !== victim
    console.log(`coordinator ${f.index}: process ${f.processAlive ? "alive" : "gone"} (stats: ${f.statsAlive ? "alive" : "not alive"}${f.exception ? `, ${f.exception}` : ""})`)
    if (expectAlive && !(f.processAlive && f.statsAlive && !f.exception)) problem(`after: survivor ${f.index} not alive: ${JSON.stringify(f)}`)
    if (!expectAlive && f.processAlive) problem(`after: the killed coordinator ${f.index} is still running`)
  }
  // One request to each survivor directly, over the project's own client.
  const load = async (pkg) => import(pathToFileURL(path.resolve(root, `packages/${pkg}/dist/index.js`)).href)
  const { InferenceClient } = await load("client")
  const { createRequire } = await import("node:module")
  const fromServer = createRequire(path.resolve(root, "packages/server/package.json"))
  const Effect = await import(pathToFileURL(fromServer.resolve("effect/Effect")).href)
  const direct = []
  for (let i = 0; i < coordinators.length; i++) {
    if (i === victim) continue
    const ids = Array.from(`survivor ${i} still serving`, (c) => c.codePointAt(0))
    const exit = await Effect.runPromiseExit(Effect.scoped(Effect.gen(function*() {
      const client = yield* InferenceClient.make({ address: coordinators[i], protocol: opt.protocol })
      return yield* client.submit(ids, { num_tokens_to_generate: 6 })
    })).pipe(Effect.timeout("15 seconds")))
    const got = exit._tag === "Success" ? exit.value.generated_tokens : undefined
    const ok = got !== undefined && JSON.stringify(Array.from(got)) === JSON.stringify(expectedTokens(ids, 6))
    direct.push(ok)
    console.log(`survivor ${i} (${coordinators[i]}), one request directly: ${ok ? "exact" : `not exact: ${exit._tag === "Success" ? JSON.stringify(got) : String(exit.cause).slice(0, 200)}`}`)
    if (!ok) problem(`after: survivor ${i}'s direct request not exact`)
  }
  const planned = await withWants(shapes(24, 2000, (i) => 4 + (i % 7)))
  const results = await Promise.all(planned.map(({ r, want }) => run(openai, r, want)))
  const t = tally(results)
  console.log(`phase after: through the server: ${show(t)}`)
  for (const d of [...firstDetails(results, "wrong"), ...firstDetails(results, "error")]) problem(`after ${d}`)
  const health = await fetch(`${server.baseUrl}/health`)
  console.log(`/health: ${health.status}`)
  if (health.status !== 200) problem(`after: /health ${health.status}`)
  const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text()
  for (const line of metrics.split("\n").filter((l) => /^mcore_fleet/.test(l))) console.log(`     ${line}`)
  summary.after = { fates, direct: `${direct.filter(Boolean).length}/${direct.length}`, ...t, health: health.status }
}

// --- rejoin (with --rejoin MS) ------------------------------------------------------------------
// The killed coordinator's harness (its engines) is stopped and a new one started on the same
// port, whose engines register MS after the coordinator has bound: the window in which Megatron's
// coordinator takes the first data_parallel_size messages of any content as engine registrations
// (coordinator.py:176-179). The fleet must rejoin it (a fresh identity after a swallowed
// CONNECT) and the coordinator must then serve: a burst through the server, all exact, with the
// rejoined coordinator's engines taking part, and the coordinator alive after it.
let rejoinChild
if (opt.rejoin !== undefined) {
  const { spawn } = await import("node:child_process")
  const { writeFileSync } = await import("node:fs")
  const runnerPid = Number((opt["runner-pids"] ?? "").split(",")[victim])
  const port = coordinators[victim].split(":").pop()
  const statsFile = `${opt.work}/rejoin.stats.json`
  process.kill(runnerPid, "SIGTERM")
  for (let k = 0; k < 100 && pidAlive(runnerPid); k++) await sleep(50)
  const started = Date.now()
  let out = ""
  let err = ""
  rejoinChild = spawn(opt.python, [
    path.join(path.dirname(new URL(import.meta.url).pathname), "run_coordinator.py"),
    "--stage", opt.stage, "--engines", "2", "--step-ms", opt["step-ms"] ?? "20", "--port", port,
    "--register-delay-ms", opt.rejoin, "--stats", statsFile
  ], { stdio: ["ignore", "pipe", "pipe"] })
  writeFileSync(`${opt.work}/restarted.pid`, String(rejoinChild.pid)) // fleet.sh's clean-up stops it should this script end early
  rejoinChild.stdout.on("data", (c) => (out += c))
  rejoinChild.stderr.on("data", (c) => (err += c))
  const upMetric = () =>
    fetch(`${server.baseUrl}/metrics`).then((r) => r.text()).then((t) =>
      t.split("\n").find((l) => l.startsWith(`mcore_fleet_coordinator_up{coordinator="${coordinators[victim]}"}`))?.split(" ").pop())
  let up
  while (Date.now() - started < 60_000) {
    up = await upMetric().catch(() => undefined)
    if (up === "1" && out.includes("ready")) break
    await sleep(100)
  }
  const address = out.split("\n")[0]
  const joinedMs = Date.now() - started
  console.log(`phase rejoin: harness restarted on port ${port} (${address || "no address"}; engines registering ${opt.rejoin} ms after the bind); the fleet's up gauge for it: ${up} after ${joinedMs} ms`)
  if (address !== coordinators[victim]) problem(`rejoin: the restarted coordinator is at ${address}, not ${coordinators[victim]}`)
  if (up !== "1") problem(`rejoin: the fleet did not rejoin the restarted coordinator within 60 s (up ${up})`)
  const before = readStats(statsFile)
  const planned = await withWants(shapes(48, 3000, (i) => 4 + (i % 7)))
  const results = await Promise.all(planned.map(({ r, want }) => run(openai, r, want)))
  await sleep(300)
  const t = tally(results)
  const s = readStats(statsFile)
  const took = submitsOf(statsFile)
  const c = s?.coordinator ?? {}
  const alive = c.alive && !c.exception && pidAlive(c.pid)
  console.log(`phase rejoin: a burst through the server: ${show(t)}; the rejoined coordinator's engines received ${took} SUBMIT_REQUEST; it is ${alive ? "alive" : `dead: ${c.exception ?? `exit ${c.exitcode}`}`}`)
  const coordinatorLines = err.split("\n").filter((l) => /Error|error|warning|WARNING|Traceback/.test(l)).slice(0, 6)
  for (const l of coordinatorLines) console.log(`     restarted coordinator: ${l.slice(0, 240)}`)
  if (c.exception) console.log(`     its traceback ends: ${String(c.traceback ?? "").trim().split("\n").slice(-3).join(" | ").slice(0, 400)}`)
  for (const d of [...firstDetails(results, "wrong"), ...firstDetails(results, "error")]) problem(`rejoin ${d}`)
  if (!alive) problem(`rejoin: the restarted coordinator died: ${c.exception ?? `exit ${c.exitcode}`}`)
  if (took === 0) problem("rejoin: the restarted coordinator took no request")
  summary.rejoin = { registerDelayMs: Number(opt.rejoin), joinedMs, up, ...t, restartedTook: took, restartedAlive: alive, exception: c.exception ?? null, before: before?.engines?.length }
  writeFileSync(`${opt.work}/rejoin.err`, err)
}

server.process.kill("SIGTERM")
await Promise.race([new Promise((resolve) => server.process.on("exit", resolve)), sleep(10_000)])
if (rejoinChild) rejoinChild.kill("SIGTERM")
console.log(JSON.stringify(summary))
console.log(verdict())
process.exit(problems.length === 0 ? 0 : 1)
