/**
 * What the server benchmarks share (`server.bench.ts`, `disaggregated.bench.ts`, the heap
 * diagnostic `heap.ts`): their forked processes spoken to over IPC (`Child`, `spawn`), the
 * coordinator stand-in (`startStandIn`), autocannon runs with the server's CPU time (`load`),
 * time to first token, open streams, and the figures' medians and formatting. Its own module,
 * so that no benchmark imports another's entry point.
 */
import { type ChildProcess, fork } from "node:child_process"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { ChatTemplate, Tokenizer } from "@mcore-effect/text"
import { Effect } from "effect"
import { chatBody, distinctChatBody, generatedTokens, messages, qwen3Directory, standInBodies } from "./fixture.ts"
import { Timing } from "@mcore-effect/testkit"

/** The median of `values` (of a figure's rounds). */
export const { median } = Timing

interface AutocannonResult {
  readonly requests: { readonly total: number }
  readonly latency: { readonly p50: number; readonly p99: number }
  readonly duration: number
  readonly errors: number
  readonly non2xx: number
}
type Autocannon = (options: Record<string, unknown>) => Promise<AutocannonResult>
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon

export type Reply = Record<string, any>

/** A forked process spoken to over IPC: `{ id, op }` in, `{ id, ... }` out. */
export class Child {
  private nextId = 0
  private readonly waiting = new Map<number, (reply: Reply) => void>()
  private readonly first: Promise<Reply>

  constructor(readonly name: string, readonly process: ChildProcess) {
    let ready!: (reply: Reply) => void
    this.first = new Promise((resolve, reject) => {
      ready = resolve
      process.once("exit", (code) => reject(new Error(`${name} exited (${code}) during start-up`)))
    })
    process.on("message", (message: Reply) => {
      if (typeof message.id !== "number") return ready(message)
      const resolve = this.waiting.get(message.id)
      this.waiting.delete(message.id)
      if (typeof message.error === "string") throw new Error(`${name}: ${message.error}`)
      resolve?.(message)
    })
  }

  ready(): Promise<Reply> {
    return this.first
  }

  call(op: string, fields: Record<string, unknown> = {}): Promise<Reply> {
    return new Promise((resolve) => {
      const id = this.nextId++
      this.waiting.set(id, resolve)
      this.process.send({ id, op, ...fields })
    })
  }

  async stop(): Promise<void> {
    if (this.process.exitCode !== null) return
    const gone = new Promise<void>((resolve) => this.process.once("exit", () => resolve()))
    if (this.process.connected) this.process.disconnect()
    const timer = setTimeout(() => this.process.kill("SIGKILL"), 3_000)
    await gone
    clearTimeout(timer)
  }
}

/**
 * Forks `file`. The server and the bare client run the packages' compiled `dist` (what `mcore
 * serve` runs; `pnpm bench` builds first), not their sources through tsx: tsx names every
 * closure (esbuild's `keepNames`), which measured 3.7 KB more heap per open stream and moves
 * CPU figures too. The subject files themselves still go through tsx.
 */
export const spawn = (name: string, file: string, args: ReadonlyArray<string>): Child => {
  const flags = process.execArgv.filter((flag) => flag !== "--expose-gc" && !flag.startsWith("--conditions"))
  return new Child(
    name,
    fork(fileURLToPath(new URL(file, import.meta.url)), [...args], {
      execArgv: [...flags, "--expose-gc"],
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
  )
}


/** `value` with thousands separators and `digits` decimals; `n/a` when not finite. */
export const fmt = (value: number, digits = 0): string =>
  Number.isFinite(value) ? value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }) : "n/a"

let distinctCount = 0

/**
 * One autocannon run against the server, with the server's CPU time over it. `distinct`: every
 * request with a user message of its own ({@link distinctChatBody}), not streamed. `rate`: at
 * most this many requests a second in all (autocannon's `overallRate`), for comparing servers at
 * the same load (CPU per request falls as the load rises, more work batched per wake-up).
 */
export const load = async (
  server: Child,
  url: string,
  connections: number,
  stream: boolean,
  seconds: number,
  distinct = false,
  rate?: number
) => {
  const before = (await server.call("cpu")).cpuUs as number
  const result = await autocannon({
    url: `${url}/v1/chat/completions`,
    method: "POST",
    headers: { "content-type": "application/json" },
    ...(distinct
      ? { requests: [{ setupRequest: (request: object) => ({ ...request, body: distinctChatBody(distinctCount++) }) }] }
      : { body: chatBody(stream) }),
    connections,
    duration: seconds,
    ...(rate !== undefined ? { overallRate: rate } : {})
  })
  const cpuUs = ((await server.call("cpu")).cpuUs as number) - before
  const requests = result.requests.total
  if (result.errors > 0 || result.non2xx > 0) {
    console.error(`  (autocannon: ${result.errors} errors, ${result.non2xx} non-2xx responses)`)
  }
  return { requests, perSecond: requests / seconds, p50: result.latency.p50, p99: result.latency.p99, cpuUs }
}

/** Time to first content chunk, one stream at a time, read by hand. */
export const firstTokens = async (url: string, count: number): Promise<number> => {
  const times: Array<number> = []
  for (let i = 0; i < count; i++) {
    const t0 = performance.now()
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: chatBody(true)
    })
    const at = await Timing.firstContentAt(response)
    if (at !== undefined) times.push(at - t0)
  }
  return median(times)
}

/**
 * Opens `count` streamed chat requests, each read up to its first bytes; `undefined` when one
 * did not open. The controllers close them.
 */
export const openStreams = async (url: string, count: number): Promise<Array<AbortController> | undefined> => {
  const controllers = Array.from({ length: count }, () => new AbortController())
  const opened = await Promise.all(
    controllers.map((controller) =>
      fetch(`${url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: chatBody(true),
        signal: controller.signal
      }).then((response) => response.body!.getReader().read().then(() => true), () => false)
    )
  )
  return opened.every(Boolean) ? controllers : undefined
}

/** Closes streams opened by {@link openStreams}, and gives the server half a second to let them go. */
export const closeStreams = async (controllers: ReadonlyArray<AbortController>): Promise<void> => {
  for (const controller of controllers) controller.abort()
  await new Promise((resolve) => setTimeout(resolve, 500))
}

/** The coordinator stand-in, given the workload's bodies (Qwen3's tokens); its port once bound. */
export const startStandIn = async (): Promise<{ readonly standIn: Child; readonly port: number }> => {
  const tokenizer = await Effect.runPromise(Tokenizer.fromDirectory(qwen3Directory))
  const template = await Effect.runPromise(ChatTemplate.fromTokenizer(tokenizer))
  const promptLength = tokenizer.encode(
    await Effect.runPromise(template.render(messages, { addGenerationPrompt: true })),
    { addSpecialTokens: false }
  ).length
  const standIn = spawn("coordinator stand-in", "./standIn.ts", [])
  standIn.process.send({ op: "init", ...standInBodies(generatedTokens(tokenizer), promptLength) })
  const { port } = await standIn.ready()
  return { standIn, port }
}
