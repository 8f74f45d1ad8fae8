// The project's TypeScript InferenceClient, through its public API only, against Megatron-LM's
// real coordinator (run_coordinator.py: the staged DataParallelInferenceCoordinator and engine
// ranks speaking dynamic_engine.py's side of the wire).
//
// Usage: node drive_ts.mjs PROJECT_ROOT ADDRESS [--protocol NAME] [--stats FILE] [--only p1,p2]
//                          [--media on|off] [--timeout-ms N] [--shutdown]
//   --protocol    the client's dialect (InferenceClient.layer({ address, protocol })): reference,
//                 pr-6497, main, core_v0.19, core_v0.18, core_v0.17, core_v0.16. Default: the
//                 client's own default (the option is not passed). Also picks the phases and
//                 checks the dialect supports (FEATURES below, from packages/protocol/DIALECTS.md)
//   PROJECT_ROOT  a built checkout (packages/client/dist); imports resolve through its exports
//   ADDRESS       the coordinator's client-facing address (run_coordinator.py's first line)
//   --stats FILE  run_coordinator.py's stats file: gives block size / prefix caching / ref kind, and lets the
//                 checks that no reply can show (ABORT reached the engine, profiler and suspend
//                 reached every engine, the hand-off blocks were released) read the engines' side
//   --only        phases to run (default all, in this order): submit,stream,submitall,abort,
//                 control,kv,media,close; also nosubmit (everything but a plain SUBMIT_REQUEST)
//   --drain-ms N  the closing client's drainTimeout in the close phase (default 20000; 0 shows
//                 what a client that does not wait does to the coordinator)
//   --media on    send one image (raw bytes) and expect the text-only engine's FAILED reply;
//                 off (default) where the ref's coordinator protocol carries no media
//   --shutdown    end with SHUTDOWN (the coordinator must exit; run_coordinator's stats tell)
//
// Every reply is checked against harness_model.py's model, re-implemented here: the tokens
// are a function of every prompt token and the position, so a reply for another request or a
// shifted stream is caught. Prints per-phase lines, a JSON summary
// {requests, correct, wrong, errors, hung, phases, checks, first_problems} and, last,
// `holds: ...` or `short: ...`. Exit 0 only when it holds.
import { createHash } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import path from "node:path"
import { pathToFileURL } from "node:url"
import { expectedTokens, idsOf } from "./harness_model.mjs"

const argv = process.argv.slice(2)
const flag = (name, fallback) => {
  const i = argv.indexOf(name)
  if (i < 0) return fallback
  const v = argv[i + 1]
  argv.splice(i, 2)
  return v
}
const bool = (name) => {
  const i = argv.indexOf(name)
  if (i < 0) return false
  argv.splice(i, 1)
  return true
}
const statsFile = flag("--stats", undefined)
const only = flag("--only", undefined)
const media = flag("--media", "off") === "on"
const timeoutMs = Number(flag("--timeout-ms", "8000"))
const shutdown = bool("--shutdown")
const protocol = flag("--protocol", undefined)
const drainMs = Number(flag("--drain-ms", "20000"))
// What each dialect carries (packages/protocol/DIALECTS.md, "Features").
// promptTokens: SamplingParams.return_prompt_tokens (core_v0.19 on; the client refuses it before).
const FULL = { streaming: true, abort: true, kv: true, media: false, epoch: true, profiler: true, shutdown: true, pauseAck: false, promptTokens: true }
const FEATURES = {
  reference: { ...FULL, media: true },
  "pr-6497": FULL,
  main: { ...FULL, media: true },
  core_v0_19: { ...FULL, streaming: false, abort: false, kv: false },
  core_v0_18: { ...FULL, streaming: false, abort: false, kv: false, profiler: false, promptTokens: false },
  core_v0_16: { streaming: false, abort: false, kv: false, media: false, epoch: false, profiler: false, shutdown: false, pauseAck: true, promptTokens: false }
}
FEATURES.core_v0_17 = FEATURES.core_v0_18
const feat = FEATURES[(protocol ?? "reference").replaceAll(".", "_")]
if (!feat) {
  console.error(`drive_ts: unknown --protocol ${protocol}`)
  process.exit(2)
}
/** The single-frame release dialects: replies shaped by legacy_engine.py, not by dynamic_engine.py's methods. */
const LEGACY = (protocol ?? "").startsWith("core_v")
const [root, address] = argv
if (!root || !address) {
  console.error("usage: node drive_ts.mjs PROJECT_ROOT ADDRESS [--stats FILE] [--only p1,p2] [--media on|off] [--timeout-ms N] [--shutdown]")
  process.exit(2)
}
const ALL = ["submit", "stream", "submitall", "abort", "control", "kv", "media", "close"]
const NEEDS = { stream: "streaming", abort: "abort", kv: "kv", media: "media" }
const phases = only ? only.split(",") : ALL.filter((p) => (p !== "media" || media) && (!NEEDS[p] || feat[NEEDS[p]]))

// --- imports through the checkout's own package exports ------------------------------------------
const clientDir = path.resolve(root, "packages/client")
const pkg = JSON.parse(readFileSync(path.join(clientDir, "package.json"), "utf8"))
const exp = pkg.exports?.["."] ?? pkg.main
const entry = path.resolve(clientDir, typeof exp === "string" ? exp : exp.default ?? exp.import)
if (!existsSync(entry)) {
  console.error(`${entry} is missing: build the project first`)
  process.exit(2)
}
const { InferenceClient } = await import(pathToFileURL(entry).href)
const requireFromClient = createRequire(path.join(clientDir, "package.json"))
const { Cause, Effect, Exit, Fiber, Option, Stream } = await import(pathToFileURL(requireFromClient.resolve("effect")).href)

// --- the harness's model (harness_model.py) --------------------------------------------------------
const refHashes = (ids, bs) => { // inference_request.compute_block_hashes_batched
  const out = []
  let parent = Buffer.alloc(32)
  for (let i = 0; i + bs <= ids.length; i += bs) {
    const block = Buffer.alloc(bs * 8)
    for (let j = 0; j < bs; j++) block.writeBigInt64LE(BigInt(ids[i + j]), j * 8)
    const d = createHash("sha256").update(parent).update(block).digest()
    out.push((d.readBigUInt64LE(0) % (2n ** 63n - 1n)) + 1n)
    parent = d
  }
  return out
}
const readStats = () => {
  if (!statsFile) return undefined
  try {
    return JSON.parse(readFileSync(statsFile, "utf8"))
  } catch {
    return undefined
  }
}
const stats0 = readStats()
const BS = stats0?.block_size ?? 16
const PREFIX = stats0?.prefix_caching ?? true
// HEAD's coordinator detokenizes every finished request; the multipart refs' only those whose
// sampling params ask for it (detokenize_generations), as the engine flags them in frame 0
const ALWAYS_DETOK = stats0?.ref_kind === "single" || stats0?.ref_kind === "legacy"

// --- bookkeeping -----------------------------------------------------------------------------------
const show = (v) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? `${x}n` : x))?.slice(0, 140)
const eqList = (a, b) => Array.isArray(a) && a.length === b.length && a.every((x, i) => x === b[i])
const tally = () => ({ requests: 0, correct: 0, wrong: 0, errors: 0, hung: 0 })
const total = tally()
const perPhase = {}
const checks = {}
const problems = []
let phase = "?"
const note = (msg) => {
  if (problems.length < 40) problems.push(`${phase}: ${msg}`)
}
const count = (kind, msg) => {
  const p = (perPhase[phase] ??= { ...tally(), errorKinds: {} })
  p.requests++
  total.requests++
  p[kind]++
  total[kind]++
  if (msg) note(msg)
}
const reasonOf = (exit) => {
  if (Cause.hasInterruptsOnly(exit.cause)) return "Interrupted"
  const e = Cause.squash(exit.cause)
  return e?.reason?._tag ?? e?._tag ?? String(e)
}
const messageOf = (exit) => String(Cause.squash(exit.cause)?.message ?? Cause.pretty(exit.cause)).slice(0, 240)
const recordFailure = (label, exit) => {
  const kind = reasonOf(exit)
  const p = (perPhase[phase] ??= { ...tally(), errorKinds: {} })
  p.errorKinds[kind] = (p.errorKinds[kind] ?? 0) + 1
  count(kind === "RequestTimeout" || kind === "DriverTimeout" ? "hung" : "errors", `${label}: ${kind}: ${messageOf(exit)}`)
}
const check = (name, ok, detail) => {
  checks[name] = !!ok
  if (!ok) note(`check ${name} failed${detail ? `: ${detail}` : ""}`)
}

/** What a finished request must look like (DynamicInferenceRequest.serialize(), then the client's latency). */
const problemsOf = (r, spec) => {
  const bad = []
  const ids = idsOf(spec.prompt)
  const gen = expectedTokens(ids, spec.n)
  if (!r || typeof r !== "object") return [`reply is ${show(r)}`]
  // core_v0.16: the reply is the engine's record, {requests: [request, ...], ...}
  if (Array.isArray(r.requests) && r.requests.length > 0 && !("status" in r)) r = { ...r.requests.at(-1), latency: r.latency }
  if (LEGACY) return legacyProblemsOf(r, spec, ids, gen, bad)
  if (r.status !== "COMPLETED") bad.push(`status ${show(r.status)}`)
  if (!eqList(r.generated_tokens, gen)) bad.push(`generated_tokens ${show(r.generated_tokens)} != ${show(gen)}`)
  if (r.generated_length !== spec.n) bad.push(`generated_length ${show(r.generated_length)} != ${spec.n}`)
  if (r.prompt_length !== ids.length) bad.push(`prompt_length ${show(r.prompt_length)} != ${ids.length}`)
  const wantPrompt = typeof spec.prompt === "string" ? spec.prompt : null
  if (r.prompt !== wantPrompt) bad.push(`prompt ${show(r.prompt)} != ${show(wantPrompt)}`)
  if (spec.returnPromptTokens) {
    if (!(Array.isArray(r.prompt_tokens) && r.prompt_tokens[0] === "tensor" && eqList(r.prompt_tokens[1], ids))) {
      bad.push(`prompt_tokens ${show(r.prompt_tokens)}`)
    }
  } else if (r.prompt_tokens !== null) bad.push(`prompt_tokens ${show(r.prompt_tokens)} (not asked for)`)
  const wantText = spec.detok || ALWAYS_DETOK ? String.fromCodePoint(...gen) : null
  if (r.generated_text !== wantText) bad.push(`generated_text ${show(r.generated_text)} != ${show(wantText)}`)
  if (r.sampling_params?.num_tokens_to_generate !== spec.n) bad.push(`sampling_params.num_tokens_to_generate ${show(r.sampling_params?.num_tokens_to_generate)}`)
  if (spec.logProbs && !(Array.isArray(r.generated_log_probs) && r.generated_log_probs.length === spec.n)) {
    bad.push(`generated_log_probs ${show(r.generated_log_probs)}`)
  }
  if (!Number.isSafeInteger(r.request_id)) bad.push(`request_id ${show(r.request_id)}`)
  if (typeof r.latency !== "number" || !(r.latency >= 0)) bad.push(`latency ${show(r.latency)}`)
  if (spec.minLatency !== undefined && !(r.latency >= spec.minLatency)) bad.push(`latency ${r.latency} < ${spec.minLatency}`)
  const types = Array.isArray(r.events) ? r.events.map((e) => e?.type) : null
  if (!types || types[0] !== "ADD_ENGINE" || types.at(-1) !== "FINISH") bad.push(`events ${show(types)}`)
  if (PREFIX && !spec.skipHashes) {
    const want = refHashes(ids, BS)
    const got = r.precomputed_block_hashes
    if (!(Array.isArray(got) && got.length === want.length && got.every((h, i) => BigInt(h) === want[i]))) {
      bad.push(`precomputed_block_hashes ${show(got)} != ${show(want)}`)
    }
  }
  if (spec.epoch !== undefined) {
    for (const k of ["policy_epoch", "kv_cache_epoch"]) {
      if (!(Array.isArray(r[k]) && r[k].length === 1 && eqList(r[k][0], [0, spec.epoch]))) bad.push(`${k} ${show(r[k])}`)
    }
  }
  if (spec.extra) bad.push(...spec.extra(r))
  return bad
}
/** The checks a legacy_engine.py reply can answer: no events, block hashes or kv_cache_epoch there. */
const legacyProblemsOf = (r, spec, ids, gen, bad) => {
  if (r.status !== "COMPLETED") bad.push(`status ${show(r.status)}`)
  if (!eqList(r.generated_tokens, gen)) bad.push(`generated_tokens ${show(r.generated_tokens)} != ${show(gen)}`)
  // core_v0.16..0.18's coordinator detokenizes a token prompt into `prompt`
  const okPrompt = typeof spec.prompt === "string" ? [spec.prompt] : [null, String.fromCodePoint(...ids)]
  if (!okPrompt.includes(r.prompt)) bad.push(`prompt ${show(r.prompt)}`)
  if (r.generated_text !== String.fromCodePoint(...gen)) bad.push(`generated_text ${show(r.generated_text)}`)
  if (r.sampling_params?.num_tokens_to_generate !== spec.n) bad.push(`sampling_params.num_tokens_to_generate ${show(r.sampling_params?.num_tokens_to_generate)}`)
  if (!Number.isSafeInteger(r.request_id)) bad.push(`request_id ${show(r.request_id)}`)
  if (spec.epoch !== undefined && "policy_epoch" in r && !(Array.isArray(r.policy_epoch) && eqList(r.policy_epoch[0], [0, spec.epoch]))) {
    bad.push(`policy_epoch ${show(r.policy_epoch)}`)
  }
  if (spec.extra) bad.push(...spec.extra(r))
  return bad
}
const judge = (label, r, spec) => {
  const bad = problemsOf(r, spec)
  if (bad.length) count("wrong", `${label}: ${bad.join("; ")}`)
  else count("correct")
}
/** An effect with the driver's own deadline on top of the client's. */
const bounded = (eff, ms = timeoutMs + 2000) =>
  Effect.exit(eff.pipe(Effect.timeoutOption(`${ms} millis`))).pipe(
    Effect.map((exit) =>
      Exit.isSuccess(exit) && Option.isNone(exit.value)
        ? Exit.fail({ _tag: "DriverTimeout", message: `no answer within ${ms} ms` })
        : Exit.isSuccess(exit) ? Exit.succeed(exit.value.value) : exit
    )
  )
const waitStats = (pred, ms = 3000) =>
  Effect.gen(function*() {
    const t0 = Date.now()
    while (Date.now() - t0 < ms) {
      const s = readStats()
      if (s && pred(s)) return true
      yield* Effect.sleep("50 millis")
    }
    return false
  })
const reqOpts = { timeout: `${timeoutMs} millis` }

// --- the phases ------------------------------------------------------------------------------------
const textPrompt = (i) => `request ${i}: héllo wörld ✓ 🙂 ${"abcdefghij".repeat(1 + (i % 4))}`
const tokenPrompt = (i, len = 10 + (i % 40)) => Array.from({ length: len }, (_, j) => 2 + ((i * 7919 + j * 104729) % 49000))

const runSubmits = (client) =>
  Effect.gen(function*() {
    const specs = Array.from({ length: 200 }, (_, i) => {
      const prompt = i % 2 === 0 ? textPrompt(i) : i % 6 === 1 ? Int32Array.from(tokenPrompt(i)) : tokenPrompt(i)
      const n = 1 + (i % 12)
      const sp = { num_tokens_to_generate: n, temperature: 0.7, top_k: 5 }
      const spec = { prompt, n }
      if (i % 5 === 1 && feat.promptTokens) (sp.return_prompt_tokens = true), (spec.returnPromptTokens = true)
      if (i % 5 === 2) (sp.extra = { detokenize_generations: true }), (spec.detok = true)
      if (i % 7 === 3) (sp.return_log_probs = true), (sp.skip_prompt_log_probs = true), (spec.logProbs = true)
      return { prompt, sp, spec }
    })
    yield* Effect.forEach(specs, ({ prompt, sp, spec }, i) =>
      bounded(client.submit(prompt, sp, reqOpts)).pipe(
        Effect.map((exit) => (Exit.isSuccess(exit) ? judge(`submit ${i}`, exit.value, spec) : recordFailure(`submit ${i}`, exit)))
      ), { concurrency: "unbounded", discard: true })
  })

const streamOnce = (client, label, prompt, n, options = {}) =>
  Effect.gen(function*() {
    const stream = options.kv
      ? client.streamWithKvHandoff(prompt, { num_tokens_to_generate: n }, options.kv.kvMeta, options.kv.blockIds, reqOpts)
      : client.stream(prompt, { num_tokens_to_generate: n }, reqOpts)
    const exit = yield* bounded(Stream.runCollect(stream))
    if (Exit.isFailure(exit)) return recordFailure(label, exit)
    const events = exit.value
    const tokens = events.filter((e) => e._tag === "Tokens")
    const finals = events.filter((e) => e._tag === "Final")
    const got = tokens.flatMap((e) => Array.from(e.newTokens))
    const ids = idsOf(prompt)
    // dynamic_engine: a partial after every step but the one that finishes the request, whose
    // token arrives only in the final; a decode hand-off sends its first (prefill-sampled)
    // token as a partial on admission, then one per step likewise: n - 1 partials either way
    const want = expectedTokens(ids, n).slice(0, n - 1)
    const bad = []
    if (!(finals.length === 1 && events.at(-1)?._tag === "Final")) bad.push(`${finals.length} finals, last ${events.at(-1)?._tag}`)
    if (!eqList(got, want)) bad.push(`partial tokens ${show(got)} != ${show(want)}`)
    if (tokens.length !== n - 1) bad.push(`${tokens.length} partials, expected ${n - 1}`)
    if (new Set(tokens.map((e) => e.requestId)).size > 1) bad.push("partials carry different request ids")
    const spec = { prompt, n, extra: () => bad }
    judge(label, finals[0]?.reply, spec)
  })

const runStreams = (client) =>
  Effect.forEach(Array.from({ length: 20 }, (_, i) => i), (i) =>
    streamOnce(client, `stream ${i}`, i % 2 ? textPrompt(1000 + i) : tokenPrompt(1000 + i), 8 + (i % 9)),
    { concurrency: "unbounded", discard: true })

const runSubmitAll = (client) =>
  Effect.gen(function*() {
    const specs = Array.from({ length: 1000 }, (_, i) => {
      const prompt = i % 10 === 0 ? textPrompt(2000 + i) : tokenPrompt(2000 + i, 8 + (i % 24))
      return { prompt, n: 1 + (i % 8) }
    })
    const seen = new Set()
    const exit = yield* bounded(
      client.submitAll(specs.map(({ prompt, n }) => ({ prompt, samplingParams: { num_tokens_to_generate: n } })), {
        concurrency: 256
      }).pipe(
        Stream.runForEach((b) =>
          Effect.sync(() => {
            if (seen.has(b.index)) return count("wrong", `submitAll: index ${b.index} delivered twice`)
            seen.add(b.index)
            judge(`submitAll[${b.index}]`, b.reply, specs[b.index])
          })
        )
      ),
      timeoutMs * 3
    )
    if (Exit.isFailure(exit)) {
      const missing = specs.length - seen.size
      const kind = reasonOf(exit)
      for (let k = 0; k < missing; k++) {
        recordFailure(k === 0 ? `submitAll (${missing} never answered)` : "submitAll", exit)
      }
      note(`submitAll stream ended with ${kind} after ${seen.size} replies`)
    }
  })

const runAbort = (client) =>
  Effect.gen(function*() {
    // 1. a stream dropped after three partials: the client must send ABORT_REQUEST, the engine
    //    must cut the request short (stats), and the client must go on serving
    const prompt = tokenPrompt(3001)
    const exit = yield* bounded(Stream.runCollect(client.stream(prompt, { num_tokens_to_generate: 3000 }, reqOpts).pipe(Stream.take(3))))
    if (Exit.isFailure(exit)) recordFailure("abort stream", exit)
    else {
      const got = exit.value.flatMap((e) => (e._tag === "Tokens" ? Array.from(e.newTokens) : []))
      const want = expectedTokens(idsOf(prompt), got.length)
      if (exit.value.length === 3 && eqList(got, want)) count("correct")
      else count("wrong", `abort stream: ${show(exit.value.map((e) => e._tag))} ${show(got)}`)
    }
    if (statsFile) {
      check("abort_reached_engine_and_cut_request", yield* waitStats((s) =>
        s.engines.some((e) => e.aborted.some(([, made, asked]) => asked === 3000 && made < asked))))
    }
    // 2. submitWithId, then abort(requestId): the reply fails with RequestAborted
    const sub = yield* Effect.exit(client.submitWithId(tokenPrompt(3002), { num_tokens_to_generate: 3000 }, reqOpts))
    if (Exit.isFailure(sub)) recordFailure("submitWithId", sub)
    else {
      yield* Effect.sleep("100 millis")
      yield* client.abort(sub.value.requestId)
      const r = yield* bounded(sub.value.reply)
      if (Exit.isFailure(r) && reasonOf(r) === "RequestAborted") count("correct")
      else if (Exit.isFailure(r)) recordFailure("abort(requestId)", r)
      else count("wrong", "abort(requestId): the reply still arrived")
    }
    // 3. still serving, nothing left pending
    const prompt3 = textPrompt(3003)
    const after = yield* bounded(client.submit(prompt3, { num_tokens_to_generate: 5 }, reqOpts))
    if (Exit.isSuccess(after)) judge("after abort", after.value, { prompt: prompt3, n: 5 })
    else recordFailure("after abort", after)
    yield* Effect.sleep("300 millis")
    check("nothing_pending_after_abort", (yield* client.pendingCount) === 0, `pendingCount ${yield* client.pendingCount}`)
  })

const runControl = (client) =>
  Effect.gen(function*() {
    // PAUSE: a request sent while paused is admitted but finishes only after UNPAUSE
    yield* client.pauseEngines()
    yield* Effect.sleep("150 millis")
    const prompt = textPrompt(4001)
    const sub = yield* Effect.exit(client.submitWithId(prompt, { num_tokens_to_generate: 4 }, { timeout: "20 seconds" }))
    yield* Effect.sleep("150 millis")
    // core_v0.16: a second PAUSE before UNPAUSE kills the coordinator, so UNPAUSE comes first there
    if (feat.pauseAck) yield* client.unpauseEngines()
    yield* client.suspendEngines() // PAUSED -> SUSPENDED
    yield* Effect.sleep("150 millis")
    yield* client.resumeEngines() // SUSPENDED -> PAUSED
    yield* Effect.sleep("150 millis")
    if (!feat.pauseAck) yield* client.unpauseEngines()
    if (Exit.isFailure(sub)) recordFailure("paused submit", sub)
    else {
      const r = yield* bounded(sub.value.reply)
      if (Exit.isSuccess(r)) judge("paused submit", r.value, { prompt, n: 4, minLatency: feat.pauseAck ? 0.1 : 0.4 })
      else recordFailure("paused submit", r)
    }
    if (statsFile && LEGACY) {
      check("suspend_resume_on_every_engine", yield* waitStats((s) =>
        s.engines.every((e) => e.suspend_calls >= 1 && e.resume_calls >= 1)))
    } else if (statsFile) {
      const want = ["RUNNING", "PAUSING", "PAUSED", "SUSPENDING", "SUSPENDED", "RESUMING", "PAUSED", "UNPAUSING", "RUNNING"]
      check("pause_suspend_resume_unpause_on_every_engine", yield* waitStats((s) =>
        s.engines.every((e) => eqList(e.states.slice(-want.length), want) && e.suspend_calls >= 1 && e.resume_calls >= 1)))
    }
    if (!feat.epoch) return
    // SET_GENERATION_EPOCH: stamped into every request admitted afterwards
    yield* client.setGenerationEpoch(7)
    yield* Effect.sleep("100 millis")
    yield* Effect.forEach([0, 1, 2, 3], (i) => {
      const p = tokenPrompt(4100 + i)
      return bounded(client.submit(p, { num_tokens_to_generate: 3 }, reqOpts)).pipe(
        Effect.map((r) => (Exit.isSuccess(r) ? judge(`epoch ${i}`, r.value, { prompt: p, n: 3, epoch: 7 }) : recordFailure(`epoch ${i}`, r)))
      )
    }, { concurrency: "unbounded", discard: true })
    if (!feat.profiler) return
    // profiler: no reply shows it; every engine must have called cudaProfilerStart/Stop
    yield* client.startCudaProfiler()
    yield* client.stopCudaProfiler()
    if (statsFile) {
      check("profiler_start_stop_on_every_engine", yield* waitStats((s) =>
        s.cuda_profiler.start === s.engines.length && s.cuda_profiler.stop === s.engines.length))
    }
  })

const runKv = (client) =>
  Effect.gen(function*() {
    const prompt = tokenPrompt(5001, 40) // 3 blocks of 16 (the last partial)
    const pre = yield* bounded(client.submit(prompt, { num_tokens_to_generate: 1, do_kv_handoff: true }, reqOpts))
    if (Exit.isFailure(pre)) return recordFailure("kv prefill", pre)
    const dp = pre.value.disaggregated_params
    const nBlocks = Math.ceil(prompt.length / BS)
    judge("kv prefill", pre.value, {
      prompt, n: 1,
      extra: (r) => (dp && Array.isArray(dp.block_ids) && dp.block_ids.length === nBlocks && dp.request_id === r.request_id &&
          eqList(dp.kv_meta?.resume_tokens, r.generated_tokens)
        ? []
        : [`disaggregated_params ${show(dp)}`])
    })
    if (!dp?.kv_meta) return
    const n = 7
    const dec = yield* bounded(client.submitWithKvHandoff(prompt, { num_tokens_to_generate: n }, dp.kv_meta, dp.block_ids, reqOpts))
    if (Exit.isSuccess(dec)) {
      judge("kv decode", dec.value, { prompt, n, extra: (r) => (r.num_cached_tokens === prompt.length ? [] : [`num_cached_tokens ${r.num_cached_tokens}`]) })
    } else recordFailure("kv decode", dec)
    yield* streamOnce(client, "kv decode stream", prompt, n, { kv: { kvMeta: dp.kv_meta, blockIds: dp.block_ids } })
    yield* client.releaseKvHandoff(dp.request_id)
    if (statsFile) {
      check("release_kv_freed_the_prefill_blocks", yield* waitStats((s) =>
        s.engines.some((e) => e.released_ids.includes(dp.request_id)) &&
        s.engines.every((e) => e.pinned_now === 0)))
    }
  })

const runMedia = (client) =>
  Effect.gen(function*() {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4])
    const r = yield* bounded(client.submit([1, 2, 3, 4], { num_tokens_to_generate: 2 }, { ...reqOpts, multiModalData: { image: png } }))
    if (Exit.isFailure(r)) return recordFailure("image", r)
    // the harness's engines are text-only (no image preprocessing): the real add path refuses the
    // image and _fail_submission answers FAILED; the bytes must have reached the engine intact
    if (r.value.status === "FAILED") count("correct")
    else count("wrong", `image: status ${show(r.value.status)}`)
    if (statsFile) {
      check("image_bytes_reached_an_engine", yield* waitStats((s) =>
        s.engines.some((e) => e.media.some((m) => eqList(m.image ?? [], [png.length])))))
    }
  })

// Everything but a plain SUBMIT_REQUEST: the control signals (seen on the engines' side) and a
// KV hand-off decode whose prefill metadata is made up here the way a prefill engine reports it
// (resume_tokens = the first sampled token, one block id per started block). Not in the default
// run: it tells, where SUBMIT_REQUEST is not understood, whether the rest of the wire is.
const runNoSubmit = (client) =>
  Effect.gen(function*() {
    yield* client.pauseEngines()
    yield* Effect.sleep("150 millis")
    yield* client.suspendEngines()
    yield* Effect.sleep("150 millis")
    yield* client.resumeEngines()
    yield* Effect.sleep("150 millis")
    yield* client.unpauseEngines()
    yield* client.setGenerationEpoch(3)
    yield* client.startCudaProfiler()
    yield* client.stopCudaProfiler()
    if (statsFile && LEGACY) {
      check("suspend_resume_on_every_engine", yield* waitStats((s) =>
        s.engines.every((e) => e.suspend_calls >= 1 && e.resume_calls >= 1)))
    } else if (statsFile) {
      const want = ["RUNNING", "PAUSING", "PAUSED", "SUSPENDING", "SUSPENDED", "RESUMING", "PAUSED", "UNPAUSING", "RUNNING"]
      check("signals_reached_every_engine", yield* waitStats((s) =>
        s.engines.every((e) => eqList(e.states.slice(-want.length), want) && (e.recv.SET_GENERATION_EPOCH ?? 0) >= 1) &&
        s.cuda_profiler.start === s.engines.length && s.cuda_profiler.stop === s.engines.length))
    }
    const prompt = tokenPrompt(6001, 40)
    const kvMeta = { agent_name: "made-up-prefill", resume_tokens: expectedTokens(prompt, 1) }
    const blockIds = Array.from({ length: Math.ceil(prompt.length / BS) }, (_, i) => 100 + i)
    const n = 6
    const dec = yield* bounded(client.submitWithKvHandoff(prompt, { num_tokens_to_generate: n }, kvMeta, blockIds, reqOpts))
    if (Exit.isSuccess(dec)) judge("kv decode (made-up prefill)", dec.value, { prompt, n, epoch: 3 })
    else recordFailure("kv decode (made-up prefill)", dec)
    yield* streamOnce(client, "kv decode stream (made-up prefill)", prompt, n, { kv: { kvMeta, blockIds } })
    yield* client.releaseKvHandoff(424242)
    if (statsFile) {
      check("release_kv_broadcast_to_every_engine", yield* waitStats((s) => s.engines.every((e) => (e.recv.RELEASE_KV ?? 0) >= 1)))
    }
  })

// A second client closes with a request in flight (the engines paused, so that it cannot finish
// first). Megatron-LM's coordinator (core_v0.17 on, main, PR 6497) exits when it routes a reply
// to a closed client (EHOSTUNREACH); the client waits for what it is owed (drainTimeout, here
// --drain-ms), so the coordinator must still be serving afterwards. `--drain-ms 0` shows the
// coordinator dying without the wait.
const runClose = (client) =>
  Effect.gen(function*() {
    yield* client.pauseEngines()
    yield* Effect.sleep("150 millis")
    const prompt = textPrompt(7001)
    const closing = yield* Effect.forkChild(Effect.exit(Effect.scoped(Effect.gen(function*() {
      const other = yield* InferenceClient.make({ address, ...(protocol === undefined ? {} : { protocol }), drainTimeout: `${drainMs} millis` })
      yield* Effect.forkChild(other.submit(prompt, { num_tokens_to_generate: 4 }))
      yield* Effect.sleep("200 millis")
      // the scope closes here: the request fails ClientClosed, and the client drains
    }))))
    yield* Effect.sleep("500 millis")
    yield* client.unpauseEngines()
    const closed = yield* Fiber.join(closing)
    if (Exit.isFailure(closed)) recordFailure("second client", closed)
    yield* Effect.sleep("500 millis")
    const after = yield* bounded(client.submit(textPrompt(7002), { num_tokens_to_generate: 3 }, reqOpts))
    if (Exit.isSuccess(after)) judge("after a client closed mid-request", after.value, { prompt: textPrompt(7002), n: 3 })
    else recordFailure("after a client closed mid-request", after)
    check("coordinator_survives_a_client_closing_mid_request", Exit.isSuccess(after))
  })

const RUN = { nosubmit: runNoSubmit, close: runClose, submit: runSubmits, stream: runStreams, submitall: runSubmitAll, abort: runAbort, control: runControl, kv: runKv, media: runMedia }

// --- main ------------------------------------------------------------------------------------------
const program = Effect.gen(function*() {
  const client = yield* InferenceClient.InferenceClient
  for (const name of phases) {
    phase = name
    const t0 = Date.now()
    const exit = yield* Effect.exit(RUN[name](client))
    if (Exit.isFailure(exit)) { // an operation outside any one request failed (a control signal)
      const p = (perPhase[phase] ??= { ...tally(), errorKinds: {} })
      p.aborted = `${reasonOf(exit)}: ${messageOf(exit)}`
      recordFailure(`phase ${name} stopped`, exit)
    }
    const p = perPhase[name] ?? tally()
    const connected = yield* client.connected
    console.log(`phase ${name}: ${p.correct}/${p.requests} correct, ${p.wrong} wrong, ${p.errors} errors, ${p.hung} hung` +
      `${p.errorKinds && Object.keys(p.errorKinds).length ? ` ${show(p.errorKinds)}` : ""} (${Date.now() - t0} ms; connected ${connected})`)
  }
  if (shutdown && feat.shutdown) {
    phase = "shutdown"
    yield* client.shutdownCoordinator()
    yield* Effect.sleep("300 millis")
  }
})

// `protocol` is passed only when asked for, so the driver also runs a client without dialects.
const layer = InferenceClient.layer({
  address,
  ...(protocol === undefined ? {} : { protocol }),
  connectTimeout: "10 seconds",
  requestTimeout: `${timeoutMs} millis`,
  heartbeatInterval: "500 millis",
  heartbeatTimeout: "3 seconds"
})
const exit = await Effect.runPromiseExit(Effect.scoped(program.pipe(Effect.provide(layer))))
if (Exit.isFailure(exit)) {
  problems.push(`client: ${reasonOf(exit)}: ${messageOf(exit)}`)
  total.errors++
}
const checkList = Object.entries(checks)
const failedChecks = checkList.filter(([, ok]) => !ok).map(([k]) => k)
const holds = total.requests > 0 && total.wrong === 0 && total.errors === 0 && total.hung === 0 && failedChecks.length === 0 &&
  Exit.isSuccess(exit)
for (const p of problems.slice(0, 12)) console.log("PROBLEM " + p)
console.log(JSON.stringify({ ...total, phases: perPhase, checks, first_problems: problems.slice(0, 5) }))
const figure = `${total.correct}/${total.requests} replies correct (${total.wrong} wrong, ${total.errors} errors, ${total.hung} hung), ` +
  `${checkList.length - failedChecks.length}/${checkList.length} engine-side checks`
console.log(holds ? `holds: ${figure}` : `short: ${figure}${problems[0] ? `; first: ${problems[0].slice(0, 200)}` : ""}`)
process.exit(holds ? 0 : 1)
