// Issue 28's check against Megatron-LM's real coordinators: one server over a prefill coordinator
// P and a decode coordinator D (`mcore serve --prefill-coordinator P --decode-coordinator D`, or
// lib_serve.mjs's `Disaggregated.layer` while the CLI lacks the flags), the harness's engines
// doing the hand-off as Megatron main's do (fake_engine.py), called with the `openai` SDK.
//
// Usage: node disagg_check.mjs ROOT --protocol NAME --prefill P[,P2...] --decode D[,D2...]
//          --prefill-stats F[,F2...] --decode-stats F[,F2...] [--requests N] [--tokens T]
//          [--kill-decode D_PID --decode-grace GRACE_S]
// Phases:
//   plain       completions and chats, half of each streamed, all concurrent: every answer exact
//   disconnect  chats and completions of T tokens, half streamed; a quarter are streams aborted by
//               the SDK (AbortController) after 1-3 content chunks, a quarter unstreamed ones (2T tokens)
//               aborted 5, 150 or 400 ms after they are sent (before the decode's first output, which for
//               an unstreamed request is its final): every finished answer exact, every aborted
//               stream's text a prefix of its answer
//   books       once P's engines hold no pin (at most 20 s): on P's engines blocks pinned ==
//               released, none pinned now, every pin released once (the coordinator broadcasts
//               RELEASE_KV: each engine receives one per pin, the others' are no-ops there); on D's engines no pin and every import's key a pin of
//               P's; for every pin that D imported, its release reached P's engine after D's engine
//               sent the decode's first output (the timeline in fake_engine.py's stats, one clock);
//               both coordinators and all four engines alive
//   decode-lost (with --kill-decode) the (first) decode coordinator SIGKILLed mid-burst: every request ends,
//               and the books again, those D never answered released GRACE s after the loss
// Prints a line per phase, a JSON summary, and `holds: ...` or `short: ...`; exit 0 only if it holds.
import {
  expectedText,
  makeRequest,
  openaiFor,
  problemLog,
  readStats,
  run,
  scriptArgs,
  serverCommand,
  sleep,
  startServer,
  tally,
  tokenizerDir
} from "./serve_kit.mjs"

const { root, opt } = scriptArgs()
if (!root || !opt.protocol || !opt.prefill || !opt.decode || !opt["prefill-stats"] || !opt["decode-stats"]) {
  console.error("usage: node disagg_check.mjs ROOT --protocol NAME --prefill P --decode D --prefill-stats F --decode-stats F")
  process.exit(2)
}
const prefillStats = opt["prefill-stats"].split(",")
const decodeStats = opt["decode-stats"].split(",")
const n = Number(opt.requests ?? 32)
const tokens = Number(opt.tokens ?? 30)
const { problem, problems, verdict } = problemLog()

const args = [
  "--protocol", opt.protocol, "--tokenizer", tokenizerDir(root), "--model", "harness", "--max-model-len", "4096",
  ...opt.prefill.split(",").flatMap((a) => ["--prefill-coordinator", a]),
  ...opt.decode.split(",").flatMap((a) => ["--decode-coordinator", a]),
  ...(opt["kill-decode"] !== undefined ? ["--decode-grace", `${opt["decode-grace"] ?? 2}s`] : [])
]
const command = serverCommand(root, "--prefill-coordinator", args)
console.log(`server: ${command.kind}`)
const server = await startServer(command)
const openai = await openaiFor(root, server.baseUrl)
const withWants = async (requests) => Promise.all(requests.map(async (r) => ({ r, want: await expectedText(server.baseUrl, r) })))
const show = (t) => Object.entries(t).map(([k, v]) => `${k} ${v.exact}/${v.requests} exact, ${v.aborted} aborted by us, ${v.wrong} wrong, ${v.error} error`).join("; ")
const details = (results) => results.filter((x) => x.outcome === "wrong" || x.outcome === "error").slice(0, 4).map((x) => `#${x.r.i} (${x.r.kind}${x.r.stream ? ", streamed" : ""}${x.r.abortAfterChunks ? `, abort after ${x.r.abortAfterChunks}` : ""}): ${x.outcome}: ${x.detail}`)
const summary = { server: command.kind }
let sent = 0

// --- plain ---------------------------------------------------------------------------------------
{
  const requests = Array.from({ length: n }, (_, i) =>
    makeRequest(i, { kind: i % 4 < 2 ? "chat" : "completion", stream: i % 2 === 1, maxTokens: 4 + (i % 9) }))
  const planned = await withWants(requests)
  const results = await Promise.all(planned.map(({ r, want }) => run(openai, r, want)))
  sent += results.length
  const t = tally(results)
  console.log(`phase plain: ${show(t)}`)
  for (const d of details(results)) problem(`plain ${d}`)
  summary.plain = t
}

// --- disconnect ----------------------------------------------------------------------------------
{
  const requests = Array.from({ length: n }, (_, k) => {
    const i = 1000 + k
    // Half streamed: of those, every other one aborted after 1-3 content chunks (after D's first
    // output). Of the unstreamed half, every other one aborted on a timer (5, 150 or 400 ms, with 2T
    // tokens to generate: while P prefills, or D decodes before its first output, which for an
    // unstreamed request is its final reply): the paths where the release must wait for D.
    const stream = k % 2 === 0
    const aborted = k % 4 < 2
    return makeRequest(i, {
      kind: k % 8 < 4 ? "chat" : "completion",
      stream,
      maxTokens: !stream && aborted ? 2 * tokens : tokens - (k % 5),
      abortAfterChunks: stream && aborted ? 1 + (k % 3) : undefined,
      abortAfterMs: !stream && aborted ? [5, 150, 400][k % 3] : undefined
    })
  })
  const planned = await withWants(requests)
  const results = await Promise.all(planned.map(({ r, want }) => run(openai, r, want)))
  sent += results.length
  const t = tally(results)
  console.log(`phase disconnect: ${show(t)}`)
  for (const d of details(results)) problem(`disconnect ${d}`)
  summary.disconnect = t
}

// --- books ---------------------------------------------------------------------------------------
const sum = (engines, f) => engines.reduce((s, e) => s + f(e), 0)
/**
 * The engines' books, cumulative. `decodeLost` (seconds, time.time()): D's coordinator was
 * killed then; a pin D imported and never answered may then be released without D's output, but
 * only `grace` seconds after the kill (`decodeGrace`), and D is expected dead.
 */
/** The pool's stats files read as one: every coordinator's engines, and the coordinators. */
const pool = (files) => {
  const all = files.map(readStats)
  if (all.some((x) => x === undefined)) return undefined
  return { engines: all.flatMap((x) => x.engines), coordinators: all }
}
const books = async (label, { decodeLost, grace, settleMs = 20_000 } = {}) => {
let p, d
const settleStart = Date.now()
while (true) {
  p = pool(prefillStats)
  d = pool(decodeStats)
  if (p && sum(p.engines, (e) => e.pinned_now) === 0) break
  if (Date.now() - settleStart > settleMs) break
  await sleep(100)
}
await sleep(300) // a last stats rewrite
p = pool(prefillStats)
d = pool(decodeStats)
const settledMs = Date.now() - settleStart
{
  const pinned = sum(p.engines, (e) => e.pinned_blocks)
  const released = sum(p.engines, (e) => e.released_blocks)
  const pinnedNow = sum(p.engines, (e) => e.pinned_now)
  // Megatron's coordinator broadcasts a RELEASE_KV to every engine (handlers.py
  // handle_release_kv): each engine must see one per pin of the coordinator's, and every one
  // that is not its own is a no-op there; more means a repeated or foreign release.
  const noop = sum(p.engines, (e) => e.release_noop)
  const releaseMessages = p.engines.map((e) => e.recv?.RELEASE_KV ?? 0)
  const pinsOf = (c) => c.engines.reduce((n, e) => n + Object.keys(e.handoff_pins ?? {}).length, 0)
  // per engine, the pins of its own coordinator: what each must receive
  const wantMessages = p.coordinators.flatMap((c) => c.engines.map(() => pinsOf(c)))
  const wantNoop = p.coordinators.reduce((n, c) => n + (c.engines.length - 1) * pinsOf(c), 0)
  const pins = Object.assign({}, ...p.engines.map((e) => e.handoff_pins ?? {}))
  const imports = Object.assign({}, ...d.engines.map((e) => e.handoff_imports ?? {}))
  const pinKeys = Object.keys(pins)
  const releasedIds = p.engines.flatMap((e, i) => e.released_ids.map((id) => `${i}:${id}`))
  const releasedTwice = releasedIds.length - new Set(releasedIds).size
  const unreleased = pinKeys.filter((k) => pins[k].released_at === null)
  const foreign = Object.keys(imports).filter((k) => !(k in pins))
  const imported = pinKeys.filter((k) => k in imports)
  const notImported = pinKeys.filter((k) => !(k in imports))
  // D lost before its output (none, or sent by D's engine after its coordinator died, which no
  // client can have seen): released after the grace, counted apart; the release must not come
  // before loss + grace. Any other pin without D's output is a problem.
  const onKilled = new Set(decodeLost === undefined ? [] : d.coordinators[0].engines.flatMap((e) => Object.keys(e.handoff_imports ?? {})))
  const unseen = imported.filter((k) => onKilled.has(k) && (imports[k].first_output_at === null || imports[k].first_output_at >= decodeLost))
  const afterGrace = unseen.filter((k) => pins[k].released_at !== null && pins[k].released_at >= decodeLost + grace * 0.95)
  const beforeGrace = unseen.filter((k) => !afterGrace.includes(k))
  const silent = imported.filter((k) => imports[k].first_output_at === null || unseen.includes(k))
  const noOutput = imported.filter((k) => imports[k].first_output_at === null && !unseen.includes(k))
  const early = imported.filter((k) => !unseen.includes(k) && pins[k].released_at !== null && imports[k].first_output_at !== null && pins[k].released_at <= imports[k].first_output_at)
  const margins = imported
    .filter((k) => !unseen.includes(k) && pins[k].released_at !== null && imports[k].first_output_at !== null)
    .map((k) => (pins[k].released_at - imports[k].first_output_at) * 1000)
    .sort((a, b) => a - b)
  const q = (f) => (margins.length ? margins[Math.min(margins.length - 1, Math.floor(f * margins.length))].toFixed(2) : "-")
  const decodePins = sum(d.engines, (e) => e.pinned_blocks)
  const prefillImports = sum(p.engines, (e) => e.kv_imports ?? 0)
  const decodeAborts = sum(d.engines, (e) => e.abort_ids.length)
  const abortedOnD = new Set(d.engines.flatMap((e) => e.abort_ids))
  // Pins whose decode D's engine was told to ABORT before it sent any output (the caller gone
  // before D's first output): the path where the release must wait for D's answer to the ABORT.
  const abortAt = Object.assign({}, ...d.engines.map((e) => e.abort_at ?? {}))
  const abortedBeforeOutput = imported.filter((k) => {
    const at = abortAt[String(imports[k].request_id)]
    return at !== undefined && (imports[k].first_output_at === null || at < imports[k].first_output_at)
  })
  console.log(`phase ${label} (settled ${settledMs} ms after the last answer): P's engines: ${pinKeys.length} pins, blocks pinned ${pinned} == released ${released}: ${pinned === released}; pinned now ${pinnedNow}; RELEASE_KV per engine ${releaseMessages.join(", ")} (broadcast; want ${wantMessages.join(", ")}), no-ops ${noop} (want ${wantNoop}); ids released twice ${releasedTwice}; unreleased pins ${unreleased.length}`)
  console.log(`phase ${label}: D's engines: ${Object.keys(imports).length} imports (${foreign.length} of no pin of P's), ${decodeAborts} ABORT(s) received (${abortedBeforeOutput.length} before the decode's first output); pins never imported ${notImported.length}; imported pins released after D's first output: ${imported.length - early.length - silent.length}/${imported.length} (${early.length} before, ${noOutput.length} with no output${decodeLost === undefined ? "" : `; of the ${unseen.length} whose output D's coordinator never delivered (D lost first), ${afterGrace.length} released ${grace} s or more after the loss, ${beforeGrace.length} sooner`}); release minus first output: min ${q(0)} ms, p50 ${q(0.5)} ms, max ${q(1)} ms`)
  if (pinKeys.length !== sent) problem(`${label}: ${pinKeys.length} pins for ${sent} requests sent`)
  if (pinned !== released) problem(`${label}: blocks pinned ${pinned} != released ${released}`)
  if (pinnedNow !== 0) problem(`${label}: ${pinnedNow} blocks still pinned`)
  if (releaseMessages.some((m, i) => m !== wantMessages[i])) problem(`${label}: RELEASE_KV per engine ${releaseMessages.join(", ")}, want ${wantMessages.join(", ")} (repeated, foreign or missing releases)`)
  if (noop !== wantNoop) problem(`${label}: ${noop} RELEASE_KV no-ops on P's engines, want ${wantNoop} (a repeated or foreign release)`)
  if (releasedTwice !== 0) problem(`${label}: ${releasedTwice} ids released twice`)
  if (unreleased.length) problem(`${label}: unreleased pins ${unreleased.slice(0, 5).join(", ")}`)
  if (foreign.length) problem(`${label}: imports of no pin: ${foreign.slice(0, 5).join(", ")}`)
  if (early.length) problem(`${label}: ${early.length} release(s) before D's first output, e.g. ${early.slice(0, 3).map((k) => `${k} (P id ${pins[k].request_id}, D id ${imports[k].request_id}${abortedOnD.has(imports[k].request_id) ? ", ABORTed on D" : ""}: released ${((pins[k].released_at - imports[k].first_output_at) * 1000).toFixed(2)} ms after D's first output; imported ${((imports[k].imported_at - pins[k].pinned_at) * 1000).toFixed(2)} ms after the pin)`).join(", ")}`)
  if (beforeGrace.length) problem(`${label}: ${beforeGrace.length} pin(s) D never delivered output for released before the grace, e.g. ${beforeGrace.slice(0, 3).map((k) => `${k} ${((pins[k].released_at - decodeLost) * 1000).toFixed(0)} ms after the loss`).join(", ")}`)
  if (noOutput.length) problem(`${label}: ${noOutput.length} imported pin(s) released with no output from D, e.g. ${noOutput.slice(0, 3).join(", ")}`)
  if (decodePins !== 0 || prefillImports !== 0) problem(`${label}: roles mixed: D's engines pinned ${decodePins} blocks, P's imported ${prefillImports}`)
  const fates = [...p.coordinators.map((c, i) => [`P${i}`, c]), ...d.coordinators.map((c, i) => [`D${i}`, c])].map(([name, s]) => {
    const alive = s.coordinator.alive && !s.coordinator.exception
    const engines = s.engines.map((e) => (e.alive && !e.error ? "alive" : `dead (${e.error})`))
    console.log(`coordinator ${name}: ${alive ? "alive" : `not alive: ${s.coordinator.exception ?? `exit ${s.coordinator.exitcode}`}`}; engines: ${engines.join(", ")}`)
    const killed = name === "D0" && decodeLost !== undefined
    if (killed ? alive : !alive || engines.some((e) => e !== "alive")) problem(`${label}: ${name} ${killed ? "still alive after its SIGKILL" : "or one of its engines died"}`)
    return { name, alive, engines }
  })
  summary[label] = {
    requests: sent, pins: pinKeys.length, pinnedBlocks: pinned, releasedBlocks: released, pinnedNow, releaseKvPerEngine: releaseMessages, releaseNoop: noop,
    releasedTwice, imports: Object.keys(imports).length, decodeAbortsBeforeOutput: abortedBeforeOutput.length, notImported: notImported.length, releasedAfterOutput: imported.length - early.length - silent.length, lostBeforeOutput: unseen.length, releasedAfterGrace: afterGrace.length, releasedBeforeGrace: beforeGrace.length,
    releasedBefore: early.length, marginMs: { min: q(0), p50: q(0.5), max: q(1) }, decodeAborts, fates
  }
}
}
await books("books")

// --- decode-lost (with --kill-decode) -------------------------------------------------------------
// A burst (half streamed, unstreamed ones of 2T tokens), and once D's engines hold requests D's
// coordinator process is SIGKILLed: every request must end (exact, or an error; a stream's text
// a prefix of its answer), P alive, and the pins settle: those D answered released after its
// output, those it never answered released decodeGrace after the loss (the server's
// --decode-grace, GRACE s), none left pinned, none twice.
if (opt["kill-decode"] !== undefined) {
  const grace = Number(opt["decode-grace"] ?? 2)
  const requests = Array.from({ length: n }, (_, k) =>
    makeRequest(5000 + k, { kind: k % 4 < 2 ? "chat" : "completion", stream: k % 2 === 1, maxTokens: k % 2 ? tokens : 2 * tokens }))
  const planned = await withWants(requests)
  const started = Date.now()
  const running = Promise.all(planned.map(({ r, want }) => run(openai, r, want)))
  const dStats = () => readStats(decodeStats[0]) // the first decode coordinator is killed
  const importsOn = (x) => sum(x?.engines ?? [], (e) => Object.keys(e.handoff_imports ?? {}).length)
  const baseline = importsOn(dStats())
  let held = 0
  while (Date.now() - started < 3000) {
    const s = dStats()
    held = importsOn(s) - baseline
    if (held >= n / (4 * decodeStats.length)) break
    await sleep(10)
  }
  const pid = dStats().coordinator.pid
  const decodeLost = Date.now() / 1000
  process.kill(pid, "SIGKILL")
  console.log(`phase decode-lost: SIGKILL ${decodeStats.length > 1 ? "the first decode coordinator" : "D's coordinator"} (pid ${pid}) ${Date.now() - started} ms into a burst of ${n}, ${held} imports on D's engines by then`)
  const results = await running
  sent += results.length
  const t = tally(results)
  console.log(`phase decode-lost: ${show(t)}; every request ended ${Date.now() - started} ms into the burst`)
  const kinds = {}
  for (const x of results.filter((x) => x.outcome === "error")) kinds[x.detail.slice(0, 140)] = (kinds[x.detail.slice(0, 140)] ?? 0) + 1
  for (const [k, v] of Object.entries(kinds)) console.log(`     error x${v}: ${k}`)
  for (const x of results.filter((x) => x.outcome === "wrong").slice(0, 3)) problem(`decode-lost #${x.r.i}: ${x.detail}`)
  summary.decodeLost = { ...t, errors: kinds }
  await books("decode-lost books", { decodeLost, grace, settleMs: (grace + 20) * 1000 })
}

const metrics = await (await fetch(`${server.baseUrl}/metrics`)).text().catch(() => "")
for (const line of metrics.split("\n").filter((l) => /handoff|pinned/.test(l) && !l.startsWith("#"))) console.log(`     /metrics ${line}`)
server.process.kill("SIGTERM")
await Promise.race([new Promise((resolve) => server.process.on("exit", resolve)), sleep(15_000)])
const serverBooks = server.stderr().split("\n").filter((l) => l.startsWith("books ")).pop()
if (serverBooks) console.log(`server's books at its end: ${serverBooks.slice(6)}`)
console.log(JSON.stringify(summary))
console.log(verdict())
process.exit(problems.length === 0 ? 0 : 1)
