/**
 * `mcore serve --engines-listen` as a subprocess: the server is the coordinator. It prints its URL
 * and then where engines dial; engines of the `main` dialect dial it and register; chat is answered
 * plain and streamed; `mcore control` against the same address reaches the engines; a request
 * held while no engine is there and given up by its HTTP client does not hold the shutdown; the
 * options that cannot go with it are refused in one line each.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { TestEngine, WordTokenizer } from "@mcore-effect/testkit"
import { Effect, Exit, Scope } from "effect"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

const chat = (url: string, body: Record<string, unknown>, signal?: AbortSignal) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "the quick fox" }], ...body }),
      ...(signal === undefined ? {} : { signal })
    })
    return { status: response.status, text: await response.text() }
  })

/** Polls `effect` until `predicate` holds (real time, at most 10 s). */
const eventually = <A>(effect: Effect.Effect<A>, predicate: (a: A) => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 500; i++) {
      const value = yield* effect
      if (predicate(value)) return value
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.die(new Error("timed out"))
  })

/** `mcore serve --engines-listen` on loopback, 2 engines of main expected (and `more` flags): its URL and where engines dial. */
const serveHosting = (more: ReadonlyArray<string> = []) => Effect.gen(function*() {
  const tokenizer = yield* WordTokenizer.directory
  const process = yield* Mcore.start([
    "serve", "--engines-listen", "tcp://127.0.0.1:0", "--external-engines", "2", "--protocol", "main",
    "--tokenizer", tokenizer, "--port", "0", ...more
  ])
  const url = yield* process.line("the URL", (l) => l.startsWith("http://"))
  const engines = (yield* process.line("where engines dial", (l) => l.startsWith("engines "))).slice("engines ".length)
  return { engines, process, url }
})

describe("mcore serve --engines-listen", () => {
  it.live("engines dial the server; chat plain and streamed; mcore control on the same address; SIGTERM ends it", () =>
    Effect.gen(function*() {
      const { engines, process, url } = yield* serveHosting()
      expect(engines).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/)
      const ranks = []
      for (const rank of [0, 1]) ranks.push(yield* TestEngine.make({ coordinatorAddress: engines, protocol: "main", rank, stepMs: 0 }))

      const plain = yield* chat(url, { max_tokens: 4 })
      expect(plain.status).toBe(200)
      expect(JSON.parse(plain.text).choices[0].message.content.split(" ")).toHaveLength(4)
      const streamed = yield* chat(url, { max_tokens: 4, stream: true })
      const records = streamed.text.split("\n\n").filter((r) => r.startsWith("data: "))
      expect(records.at(-1)).toBe("data: [DONE]")
      const text = records.slice(0, -1).map((r) => JSON.parse(r.slice(6)).choices[0]?.delta?.content ?? "").join("")
      expect(text).toBe(JSON.parse(plain.text).choices[0].message.content)

      // A control signal from another process, on the address the engines dial.
      yield* Mcore.ok(["control", "pause", "-a", engines, "--protocol", "main"])
      yield* Mcore.ok(["control", "unpause", "-a", engines, "--protocol", "main"])
      for (const rank of ranks) {
        const seen = yield* Effect.gen(function*() {
          for (let i = 0; i < 200; i++) {
            const signals = (yield* rank.snapshot).signals
            if (signals.includes("UNPAUSE")) return signals
            yield* Effect.sleep("20 millis")
          }
          return (yield* rank.snapshot).signals
        })
        expect(seen).toEqual(["PAUSE", "UNPAUSE"])
      }
      expect((yield* chat(url, { max_tokens: 2 })).status).toBe(200)
      expect(process.stderr()).toContain("2 engine(s) registered (mp-coord-0, mp-coord-1), serving")
      // /metrics: the server's own, then its coordinator's page and the process's figures.
      const metrics = yield* Effect.promise(() => fetch(`${url}/metrics`).then((r) => r.text()))
      expect(metrics).toMatch(/^mcore_server_requests_total\{[^}]*route="\/v1\/chat\/completions"[^}]*status="200"[^}]*\} 3$/m)
      expect(metrics).toMatch(/^mcore_coordinator_engines 2$/m)
      expect(metrics).toMatch(/^mcore_coordinator_requests_routed_total 3$/m)
      expect(metrics).toMatch(/^mcore_coordinator_state\{state="RUNNING"\} 1$/m)
      expect(metrics).toMatch(/^process_cpu_seconds_total \d/m)
      // One family, one TYPE line: the pages do not repeat a name.
      const types = metrics.split("\n").filter((l) => l.startsWith("# TYPE ")).map((l) => l.split(" ")[2])
      expect(new Set(types).size).toBe(types.length)
      yield* process.kill("SIGTERM")
      expect((yield* process.exited(30_000)).code).toBe(143)
    }).pipe(Effect.scoped), 120_000)

  it.live("an engine lost mid-stream: its stream ends with an error record, the other's goes on; /health says which ranks are up", () =>
    Effect.gen(function*() {
      const { engines, process, url } = yield* serveHosting()
      const health = Effect.promise(async () => {
        const response = await fetch(`${url}/health`)
        return { status: response.status, body: await response.json() as Record<string, unknown> }
      })
      expect(yield* health).toMatchObject({ status: 503, body: { status: "no_engines", ready: false, engines: [], engines_expected: 2 } })
      const doomed = yield* Scope.make()
      const lost = yield* TestEngine.make({ coordinatorAddress: engines, protocol: "main", rank: 0, stepMs: 20 }).pipe(Scope.provide(doomed))
      const kept = yield* TestEngine.make({ coordinatorAddress: engines, protocol: "main", rank: 1, stepMs: 20 })
      yield* eventually(health, (h) => h.status === 200)
      expect((yield* health).body).toMatchObject({ status: "ok", ready: true, engines: ["mp-coord-0", "mp-coord-1"] })

      // One stream on each engine (least loaded first), each long enough to be cut.
      const streams = [0, 1].map(() => Effect.runPromise(chat(url, { max_tokens: 40, stream: true })))
      yield* eventually(Effect.all([lost.snapshot, kept.snapshot]), ([a, b]) => a.active.length === 1 && b.active.length === 1)
      yield* Scope.close(doomed, Exit.void)
      const ended = yield* Effect.promise(() => Promise.all(streams))
      const records = ended.map(({ text }) => text.split("\n\n").filter((r) => r.startsWith("data: ")).map((r) => r.slice(6)))
      const cut = records.find((r) => r.at(-1)!.startsWith(`{"error"`))
      const whole = records.find((r) => r.at(-1) === "[DONE]")
      // The lost engine's stream: what it had streamed, then one error record, no [DONE].
      expect(cut).toBeDefined()
      expect(JSON.parse(cut!.at(-1)!).error.message).toContain("engine mp-coord-0 was lost (its connection closed)")
      expect(cut!.slice(0, -1).every((r) => JSON.parse(r).object === "chat.completion.chunk")).toBe(true)
      // The other engine's stream: to its end, 40 tokens.
      expect(whole).toBeDefined()
      const chunks = whole!.slice(0, -1).map((r) => JSON.parse(r))
      expect(chunks.at(-1).choices[0].finish_reason).toBe("length")
      expect(chunks.map((c) => c.choices[0]?.delta?.content ?? "").join("").trim().split(" ")).toHaveLength(40)
      expect((yield* health).body).toMatchObject({ status: "ok", ready: true, engines: ["mp-coord-1"] })
      yield* process.kill("SIGTERM")
      expect((yield* process.exited(30_000)).code).toBe(143)
    }).pipe(Effect.scoped), 120_000)

  it.live("a request held for want of an engine and given up by its client: the shutdown does not wait for it", () =>
    Effect.gen(function*() {
      // No engine ever dials: the coordinator holds the request. Its client gives up; the server
      // aborts it. The coordinator answers that abort itself, else closing waited 30 s for it.
      const { process, url } = yield* serveHosting(["--shutdown-grace", "1s"])
      const given = new AbortController()
      const request = Effect.runPromise(chat(url, { max_tokens: 2 }, given.signal)).then(() => "answered", () => "given up")
      yield* Effect.sleep("300 millis")
      given.abort()
      expect(yield* Effect.promise(() => request)).toBe("given up")
      yield* process.kill("SIGTERM")
      // Far below the client's drainTimeout (30 s), which it waited before.
      expect((yield* process.exited(10_000)).code).toBe(143)
    }).pipe(Effect.scoped), 60_000)

  it.live("refused in one line: --workers above 1, with --coordinator, --policy without it; --protocol required", () =>
    Effect.gen(function*() {
      const tokenizer = yield* WordTokenizer.directory
      const base = ["serve", "--engines-listen", "tcp://127.0.0.1:0", "--tokenizer", tokenizer, "--port", "0"]
      const workers = yield* Mcore.run([...base, "--protocol", "main", "--workers", "2"])
      expect(workers.code).toBe(1)
      expect(workers.stderr).toMatch(/^mcore: --workers above 1 cannot go with --engines-listen: an engine has one coordinator[^\n]*\n$/)
      const both = yield* Mcore.run([...base, "--protocol", "main", "--coordinator", "tcp://127.0.0.1:5555"])
      expect(both.code).toBe(1)
      expect(both.stderr).toMatch(/^mcore: --engines-listen replaces --coordinator and --embedded[^\n]*\n$/)
      const policy = yield* Mcore.run(["serve", "--embedded", "--port", "0", "--policy", "load_balanced"])
      expect(policy.code).toBe(1)
      expect(policy.stderr).toMatch(/^mcore: --policy goes with --engines-listen\n$/)
      const noProtocol = yield* Mcore.run(base, { env: { MCORE_PROTOCOL: "" } })
      expect(noProtocol.code).toBe(2)
      expect(noProtocol.stderr).toContain("needed with --engines-listen")
    }).pipe(Effect.scoped), 60_000)
})
