/**
 * `mcore serve` over coordinators that come and go, as a subprocess over test clusters:
 * `--coordinators-file` rewritten while it serves (one added takes requests, one removed takes
 * none, and its series leave /metrics), a broken file logged and the last set kept; `--coordinator dns:NAME:PORT` over the
 * testkit's DNS server (`--dns-servers`), the name gone without harm; no set at the start: one
 * line, exit code 1.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { TestCluster, TestDns, TestSupport, WordTokenizer } from "@mcore-effect/testkit"
import { Effect, Schedule } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

const completion = (url: string) =>
  Effect.promise(async () => {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ messages: [{ role: "user", content: "the quick fox" }], max_tokens: 2 })
    })
    return response.status
  })

const routed = (cluster: TestCluster.Handle) =>
  Effect.map(cluster.coordinator.snapshot, (s) => s.engines.reduce((n, e) => n + e.received.filter((d) => d.name === "SUBMIT_REQUEST").length, 0))

/** The value of `mcore_fleet_coordinator_up` for `address` on the server's /metrics. */
const upOf = (url: string, address: string) =>
  Effect.promise(() => fetch(`${url}/metrics`).then((r) => r.text())).pipe(
    Effect.map((text) => text.split("\n").find((l) => l.startsWith("mcore_fleet_coordinator_up{") && l.includes(`"${address}"`))?.split(" ").pop())
  )

const waitUp = (url: string, address: string, value: string) =>
  upOf(url, address).pipe(Effect.repeat({ until: (v) => v === value, schedule: Schedule.spaced("50 millis") }), Effect.timeout("20 seconds"))

const tempDir = TestSupport.tempDirectory("mcore-serve-members-")

describe("mcore serve over coordinators that come and go", () => {
  it.live("--coordinators-file: the fleet follows the file; a broken file changes nothing", () =>
    Effect.gen(function*() {
      const a = yield* TestCluster.make({ engines: 1 })
      const b = yield* TestCluster.make({ engines: 1 })
      const tokenizer = yield* WordTokenizer.directory
      const dir = yield* tempDir
      const file = Path.join(dir, "coordinators")
      Fs.writeFileSync(file, `# the pool\n${a.address}\n`)
      const process = yield* Mcore.start([
        "serve", "--coordinators-file", file, "--protocol", "reference", "--tokenizer", tokenizer, "--port", "0",
        "--routing", "round-robin"
      ])
      const url = yield* process.line("the URL", (l) => l.startsWith("http://"))
      for (let i = 0; i < 2; i++) expect(yield* completion(url)).toBe(200)
      expect([yield* routed(a), yield* routed(b)]).toEqual([2, 0])
      // Added.
      Fs.writeFileSync(file, `${a.address}\n${b.address}\n`)
      yield* waitUp(url, b.address, "1")
      for (let i = 0; i < 4; i++) expect(yield* completion(url)).toBe(200)
      expect([yield* routed(a), yield* routed(b)]).toEqual([4, 2])
      // Broken: logged, nothing changes.
      Fs.writeFileSync(file, "tcp://127.0.0.1\n")
      yield* Effect.sync(() => process.stderr().includes("line 1: tcp:// needs host:port")).pipe(
        Effect.repeat({ until: (seen) => seen, schedule: Schedule.spaced("50 millis") }),
        Effect.timeout("20 seconds")
      )
      for (let i = 0; i < 2; i++) expect(yield* completion(url)).toBe(200)
      expect([yield* routed(a), yield* routed(b)]).toEqual([5, 3])
      // Removed: the other takes everything, and the removed one's client is gone.
      Fs.writeFileSync(file, `${b.address}\n`)
      // Its series go once it has left (the gauge may be seen at 0 first).
      yield* upOf(url, a.address).pipe(
        Effect.repeat({ until: (v) => v === undefined, schedule: Schedule.spaced("50 millis") }),
        Effect.timeout("20 seconds")
      )
      for (let i = 0; i < 3; i++) expect(yield* completion(url)).toBe(200)
      expect([yield* routed(a), yield* routed(b)]).toEqual([5, 6])
      yield* process.kill("SIGTERM")
      const ended = yield* process.exited(30_000)
      expect(ended.code).toBe(143)
      expect(ended.stderr).toContain(`over file ${file}`)
      expect(ended.stderr).toContain("line 1: tcp:// needs host:port")
    }), 120_000)

  it.live("--coordinator dns:NAME:PORT with --dns-servers: serves over the name's address; the name gone changes nothing", () =>
    Effect.gen(function*() {
      const a = yield* TestCluster.make({ engines: 1 })
      const port = Number(a.address.split(":").pop())
      const zone = yield* TestDns.make({ "coordinators.test": ["127.0.0.1"] })
      const tokenizer = yield* WordTokenizer.directory
      const process = yield* Mcore.start([
        "serve", "--coordinator", `dns:coordinators.test:${port}`, "--dns-servers", zone.server, "--resolve-interval", "100ms",
        "--protocol", "reference", "--tokenizer", tokenizer, "--port", "0"
      ])
      const url = yield* process.line("the URL", (l) => l.startsWith("http://"))
      expect(yield* completion(url)).toBe(200)
      zone.remove("coordinators.test")
      yield* Effect.sync(() => process.stderr().includes("coordinators.test does not resolve")).pipe(
        Effect.repeat({ until: (seen) => seen, schedule: Schedule.spaced("50 millis") }),
        Effect.timeout("20 seconds")
      )
      expect(yield* completion(url)).toBe(200)
      expect(yield* routed(a)).toBe(2)
      yield* process.kill("SIGTERM")
      const ended = yield* process.exited(30_000)
      expect(ended.code).toBe(143)
      expect(ended.stderr).toContain(`over dns coordinators.test:${port}`)
      expect(ended.stderr).toContain("coordinators.test does not resolve (NXDOMAIN); keeping the last good set (1)")
    }), 120_000)

  it.live("no set at the start: one line, exit code 1; dns: with other addresses: a usage error", () =>
    Effect.gen(function*() {
      const tokenizer = yield* WordTokenizer.directory
      const dir = yield* tempDir
      Fs.writeFileSync(Path.join(dir, "empty"), "# nobody\n")
      const empty = yield* Mcore.run(["serve", "--coordinators-file", Path.join(dir, "empty"), "--protocol", "reference", "--tokenizer", tokenizer, "--port", "0"])
      expect(empty.code).toBe(1)
      expect(empty.stderr).toBe(`mcore: MembershipUnavailable: no coordinators from file ${Path.join(dir, "empty")}: it lists no coordinator\n`)
      const mixed = yield* Mcore.run(["serve", "--coordinator", "dns:a.test:5555,tcp://127.0.0.1:5555", "--protocol", "reference", "--tokenizer", tokenizer])
      expect(mixed.code).toBe(2)
      expect(mixed.stderr).toContain("dns:NAME:PORT names every coordinator: give it alone")
    }), 60_000)
})
