/**
 * `mcore serve` as a subprocess, as a person would start it: `--embedded` answers OpenAI requests
 * over plain HTTP seconds after a fresh clone, `--workers 2` shares the port between processes,
 * SIGTERM ends everything, and a missing coordinator is one line, not a stack trace.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { TestCluster, WordTokenizer } from "@mcore-effect/testkit"
import { Effect, Schedule } from "effect"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

const completion = (url: string, maxTokens = 4) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "the quick fox" }], max_tokens: maxTokens })
    })
    return { status: response.status, body: await response.json() as any }
  })

/** The pids of `count` distinct workers answering /health (excluding `not`), within 30 s (a replacement starts in seconds). */
const workerPids = (url: string, count: number, not?: number) =>
  Effect.promise(async () => {
    const seen = new Set<number>()
    const deadline = Date.now() + 30_000
    while (seen.size < count && Date.now() < deadline) {
      try {
        const response = await fetch(`${url}/health`, {
          headers: { connection: "close" },
          signal: AbortSignal.timeout(2_000)
        })
        const { pid } = await response.json() as { pid: number }
        if (pid !== not) seen.add(pid)
      } catch {
        // a connection handed to the worker just killed
      }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    return [...seen]
  })

describe("mcore serve", () => {
  it.live("--embedded: prints its URL first, answers chat completions, ends on SIGTERM", () =>
    Effect.gen(function*() {
      const process = yield* Mcore.start(["serve", "--embedded", "--port", "0", "--step-ms", "0"])
      const url = yield* process.line("the URL", (l) => l.startsWith("http://"))
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const { body, status } = yield* completion(url)
      expect(status).toBe(200)
      expect(body.model).toBe("embedded")
      expect(body.choices[0].message.content.split(" ")).toHaveLength(4)
      // The embedded context length (4096): a request past it is refused by name.
      const tooMany = yield* completion(url, 4096)
      expect(tooMany.status).toBe(400)
      expect(tooMany.body.error.param).toBe("max_tokens")
      expect(tooMany.body.error.message).toContain("maximum context length is 4096 tokens")
      yield* process.kill("SIGTERM")
      const ended = yield* process.exited()
      expect(ended.code).toBe(143)
      expect(ended.stdout).toBe(`${url}\n`)
    }), 120_000)

  it.live("--drain-delay: after SIGTERM /ready is 503 while requests are still answered, then the process ends (143)", () =>
    Effect.gen(function*() {
      const process = yield* Mcore.start(["serve", "--embedded", "--port", "0", "--step-ms", "0", "--drain-delay", "800ms"])
      const url = yield* process.line("the URL", (l) => l.startsWith("http://"))
      expect((yield* Effect.promise(() => fetch(`${url}/ready`))).status).toBe(200)
      const signalled = Date.now()
      yield* process.kill("SIGTERM")
      yield* Effect.sleep("200 millis")
      const ready = yield* Effect.promise(() => fetch(`${url}/ready`))
      expect(ready.status).toBe(503)
      expect(ready.headers.get("retry-after")).toBe("1")
      expect((yield* completion(url)).status).toBe(200)
      const ended = yield* process.exited()
      expect(ended.code).toBe(143)
      expect(Date.now() - signalled).toBeGreaterThanOrEqual(800)
    }), 120_000)

  it.live("--max-model-len sets the context length; --allowed-origins the CORS origins; the media flags", () =>
    Effect.gen(function*() {
      const process = yield* Mcore.start([
        "serve", "--embedded", "--port", "0", "--step-ms", "0", "--max-model-len", "32",
        "--allowed-origins", "https://a.example, https://b.example",
        "--allowed-media-domains", "images.example", "--image-placeholder", "<image>", "--max-image-bytes", "64"
      ])
      const url = yield* process.line("the URL", (l) => l.startsWith("http://"))
      const refused = yield* completion(url, 32)
      expect(refused.status).toBe(400)
      expect(refused.body.error.message).toContain("maximum context length is 32 tokens")
      const fits = yield* completion(url, 8)
      expect(fits.status).toBe(200)
      // --allowed-origins: a preflight from one of them is answered.
      const preflight = yield* Effect.promise(() =>
        fetch(`${url}/v1/chat/completions`, { method: "OPTIONS", headers: { origin: "https://b.example" } })
      )
      expect(preflight.status).toBe(204)
      expect(preflight.headers.get("access-control-allow-origin")).toBe("https://b.example")
      // The media flags: an inline image within --max-image-bytes is taken (the embedded
      // template takes text, so --image-placeholder writes it); another host than the allowed
      // one, or a larger image, is refused by name.
      const image = (url: string) => ({
        messages: [{ role: "user", content: [{ type: "text", text: "the fox" }, { type: "image_url", image_url: { url } }] }],
        max_tokens: 2
      })
      const gif = "data:image/gif;base64,R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"
      const chat = (body: unknown) =>
        Effect.promise(async () => {
          const response = await fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(body)
          })
          return { status: response.status, body: await response.json() as any }
        })
      expect((yield* chat(image(gif))).status).toBe(200)
      const elsewhere = yield* chat(image("https://other.example/cat.png"))
      expect([elsewhere.status, elsewhere.body.error.param]).toEqual([400, "messages[0].content[1].image_url.url"])
      expect(elsewhere.body.error.message).toContain("other.example is not one of this server's allowed media domains")
      const large = yield* chat(image(`data:image/gif;base64,R0lGODlh${"A".repeat(200)}`))
      expect(large.body.error.message).toContain("more than this server's limit of 64")
      yield* process.kill("SIGTERM")
      expect((yield* process.exited()).code).toBe(143)
    }), 120_000)

  it.live("--embedded --protocol core_v0.19: the embedded coordinator and engines and the server's client all speak it", () =>
    Effect.gen(function*() {
      const process = yield* Mcore.start([
        "serve", "--embedded", "--protocol", "core_v0.19", "--port", "0", "--step-ms", "0", "--request-timeout", "20s"
      ])
      const url = yield* process.line("the URL", (l) => l.startsWith("http://"))
      // Answered: the client's one-frame SUBMIT is the embedded coordinator's dialect.
      const { body, status } = yield* completion(url)
      expect(status).toBe(200)
      expect(body.choices[0].message.content.split(" ")).toHaveLength(4)
      expect(process.stderr()).toContain("(protocol core_v0.19)")
      // core_v0.19 has no partial replies: a stream carries the whole text in one chunk with the
      // final reply (the text layer submits it unstreamed), then [DONE].
      const streamed = yield* Effect.promise(async () => {
        const response = await fetch(`${url}/v1/chat/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ messages: [{ role: "user", content: "the quick fox" }], max_tokens: 4, stream: true })
        })
        return response.text()
      })
      const records = streamed.split("\n\n").filter((r) => r.startsWith("data: "))
      expect(records.at(-1)).toBe("data: [DONE]")
      const contents = records.slice(0, -1).map((r) => JSON.parse(r.slice(6)).choices[0]?.delta?.content).filter((c) => c)
      expect(contents).toHaveLength(1)
      expect(contents[0].split(" ")).toHaveLength(4)
      yield* process.kill("SIGTERM")
      expect((yield* process.exited()).code).toBe(143)
    }), 120_000)

  it.live("--workers 2: two processes share the port; one killed is replaced; SIGTERM stops them all", () =>
    Effect.gen(function*() {
      const process = yield* Mcore.start(["serve", "--embedded", "--port", "0", "--step-ms", "0", "--workers", "2"])
      const url = yield* process.line("the URL", (l) => l.startsWith("http://"))
      const answers = yield* Effect.all(Array.from({ length: 6 }, () => completion(url)), { concurrency: "unbounded" })
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200])
      // Connections go to the workers in turn: a few health checks name both.
      const pids = yield* workerPids(url, 2)
      const [victim] = pids
      globalThis.process.kill(victim!, "SIGKILL")
      const after = yield* workerPids(url, 2, victim)
      expect(after).not.toContain(victim)
      expect((yield* completion(url)).status).toBe(200)
      yield* process.kill("SIGTERM")
      const ended = yield* process.exited(30_000)
      expect(ended.code).toBe(143)
    }), 120_000)

  it.live("a fleet: --coordinator twice (or comma-separated) serves over both; /health 200 while one is up; /metrics per coordinator", () =>
    Effect.gen(function*() {
      const a = yield* TestCluster.make({ engines: 1 })
      const b = yield* TestCluster.make({ engines: 1 })
      const tokenizer = yield* WordTokenizer.directory
      const process = yield* Mcore.start([
        "serve", "--coordinator", a.address, "--coordinator", b.address, "--protocol", "reference",
        "--tokenizer", tokenizer, "--port", "0", "--routing", "round-robin", "--rejoin-backoff", "60m"
      ])
      const url = yield* process.line("the URL", (l) => l.startsWith("http://"))
      for (let i = 0; i < 4; i++) expect((yield* completion(url)).status).toBe(200)
      const routed = (cluster: TestCluster.Handle) =>
        Effect.map(cluster.coordinator.snapshot, (s) => s.engines.reduce((n, e) => n + e.received.filter((d) => d.name === "SUBMIT_REQUEST").length, 0))
      expect([yield* routed(a), yield* routed(b)]).toEqual([2, 2])
      const text = (path: string) => Effect.promise(() => fetch(`${url}${path}`).then(async (r) => ({ status: r.status, body: await r.text() })))
      const up = (body: string, address: string) => body.split("\n").find((l) => l.startsWith("mcore_fleet_coordinator_up{") && l.includes(`"${address}"`))
      const metrics = yield* text("/metrics")
      expect(up(metrics.body, a.address)).toMatch(/ 1$/)
      expect(up(metrics.body, b.address)).toMatch(/ 1$/)
      yield* b.coordinator.crash
      // Down: the metric says so, /health stays 200 with one up, requests go to the other.
      yield* text("/metrics").pipe(Effect.repeat({ until: (m) => / 0$/.test(up(m.body, b.address) ?? ""), schedule: Schedule.spaced("20 millis") }))
      expect((yield* text("/health")).status).toBe(200)
      for (let i = 0; i < 2; i++) expect((yield* completion(url)).status).toBe(200)
      expect(yield* routed(a)).toBe(4)
      yield* process.kill("SIGTERM")
      yield* process.exited(30_000)
    }), 120_000)

  it.live("without a coordinator or --embedded: one line, exit code 1", () =>
    Effect.gen(function*() {
      const ended = yield* Mcore.run(["serve", "--port", "0"], { env: { MCORE_COORDINATOR_ADDRESS: "" } })
      expect(ended.code).toBe(1)
      expect(ended.stderr).toMatch(/^mcore: --coordinator[^\n]*\n$/)
    }), 60_000)
})
