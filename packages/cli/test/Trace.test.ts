/**
 * `mcore trace`: a session recorded through the proxy between real clients (`mcore generate`,
 * `mcore control`) and a `mcore coordinator`, shown readably, then replayed from both sides.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { Generation, Vocabulary } from "@mcore-effect/testkit"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

const prompt = "one white cloud and the bright moon"
const tokens = (n: number) => Generation.tokens(Vocabulary.tokenize(prompt), n)

/** The session: a request, a streamed request, a control signal, each from its own process. */
const session = (address: string, protocol: string) =>
  Effect.gen(function*() {
    expect(yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "-n", "4", prompt])).toBe(
      `${Vocabulary.detokenize(tokens(4))}\n`
    )
    expect(yield* Mcore.ok(["generate", "-a", address, "--protocol", protocol, "-n", "3", "--stream", "--test-vocabulary", prompt])).toBe(
      ` ${Vocabulary.detokenize(tokens(3))}\n`
    )
    expect(yield* Mcore.ok(["control", "epoch", "5", "-a", address, "--protocol", protocol])).toBe(
      `SET_GENERATION_EPOCH 5 sent to ${address}; the coordinator does not confirm\n`
    )
  })

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "mcore-trace-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

describe("mcore trace", () => {
  it.live("record a session through the proxy, show it, replay it against a coordinator and as the coordinator", () =>
    Effect.gen(function*() {
      const file = join(yield* tempDir, "session.trace.jsonl")

      // Record.
      const upstream = yield* Mcore.coordinator()
      const recorder = yield* Mcore.start(["trace", "record", "--upstream", upstream.address, "--out", file])
      const proxy = yield* recorder.line("the proxy's address", () => true)
      expect(proxy).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/)
      expect(proxy).not.toBe(upstream.address)
      yield* session(proxy, upstream.protocol)
      yield* recorder.line("the third client", (l) => l === "peer client-2")
      yield* recorder.kill("SIGINT")
      const recorded = yield* recorder.exited()
      const [, count] = /^wrote (\d+) message\(s\) to /m.exec(recorded.stdout) ?? []
      expect(recorded.stderr).toBe("")
      expect(Number(count)).toBeGreaterThan(0)

      // Show: every message, headers by name, frames decoded.
      const shown = yield* Mcore.ok(["trace", "show", file])
      // Recorded without --protocol: the trace names no dialect, and is shown in the reference's.
      expect(shown.split("\n")[0]).toMatch(/^mcore-effect-trace version 1, created .*, protocol reference \(none recorded\)$/)
      expect(shown).toContain(`\n${count} message(s)\n`)
      const rows = shown.split("\n").filter((l) => /^\s*\d+\.\d{3}  client-\d/.test(l))
      expect(rows).toHaveLength(Number(count))
      const headers = rows.map((row) => row.trim().split(/\s{2,}/)[3] ?? "")
      expect(headers.filter((h) => h === "CONNECT")).toHaveLength(3)
      expect(headers.filter((h) => h === "CONNECT_ACK")).toHaveLength(3)
      expect(headers.filter((h) => h === "SUBMIT_REQUEST")).toHaveLength(2)
      expect(headers.filter((h) => h === "ENGINE_REPLY")).toHaveLength(2)
      expect(headers.filter((h) => h === "ENGINE_REPLY_PARTIAL").length).toBeGreaterThan(0)
      expect(headers.filter((h) => h === "SET_GENERATION_EPOCH")).toHaveLength(1)
      const submit = rows.find((row) => row.includes("SUBMIT_REQUEST") && row.includes("client-0"))!
      expect(submit).toContain(`"samplingParams":{"num_tokens_to_generate":4}`)
      expect(submit).toContain(`"prompt":"${prompt}"`)
      expect(rows.find((row) => row.includes("SET_GENERATION_EPOCH"))).toContain(`{"generationEpoch":5}`)

      // Replay the clients against a coordinator with the same settings that has served another
      // request first: the same answers, its request ids (moved on) matched as ids.
      const fresh = yield* Mcore.coordinator()
      yield* Mcore.ok(["generate", "-a", fresh.address, "--protocol", fresh.protocol, "-n", "2", "an earlier request"])
      // A trace that names no dialect is replayed only when told which.
      const unlabelled = yield* Mcore.run(["trace", "replay", file, "--address", fresh.address])
      expect(unlabelled.code).toBe(2)
      expect(unlabelled.stderr).toMatch(/^mcore: .* names no dialect \(version 1, or recorded without --protocol\): missing --protocol [^\n]*\n$/)
      const replayed = yield* Mcore.ok(["trace", "replay", file, "--address", fresh.address, "--protocol", fresh.protocol])
      const answers = headers.filter((h) => h === "CONNECT_ACK" || h.startsWith("ENGINE_REPLY")).length
      expect(replayed).toBe(
        `replayed ${file} against ${fresh.address}: sent ${Number(count) - answers} message(s), matched ${answers} answer(s)\n`
      )

      // Replay the coordinator to the same clients: they get the recorded answers.
      const scripted = yield* Mcore.start(["trace", "replay", file, "--as-coordinator", "--protocol", "reference"])
      const address = yield* scripted.line("the scripted coordinator's address", () => true)
      yield* session(address, "reference")
      const played = yield* scripted.exited()
      expect(played.code).toBe(0)
      expect(played.stdout).toContain(`replayed ${file}: sent ${answers} message(s), matched ${Number(count) - answers}\n`)
    }), 300_000)

  it.live("a client that strays from the recording fails the scripted coordinator in one line", () =>
    Effect.gen(function*() {
      const file = join(yield* tempDir, "one.trace.jsonl")
      const upstream = yield* Mcore.coordinator()
      // Labelled: the header names the dialect (reference, version 1), and replay needs no --protocol.
      const recorder = yield* Mcore.start(["trace", "record", "-u", upstream.address, "-o", file, "--protocol", upstream.protocol])
      const proxy = yield* recorder.line("the proxy's address", () => true)
      yield* Mcore.ok(["generate", "-a", proxy, "--protocol", upstream.protocol, "-n", "4", prompt])
      yield* recorder.kill("SIGTERM")
      yield* recorder.exited()
      expect((yield* Mcore.ok(["trace", "show", file])).split("\n")[0]).toMatch(
        /^mcore-effect-trace version 1, created .*, protocol reference$/
      )

      const scripted = yield* Mcore.start(["trace", "replay", file, "--as-coordinator"])
      const address = yield* scripted.line("the scripted coordinator's address", () => true)
      yield* Mcore.run(["generate", "-a", address, "--protocol", "reference", "-n", "5", prompt])
      const played = yield* scripted.exited()
      expect(played.code).toBe(1)
      expect(played.stderr).toBe(
        "mcore: ReplayMismatch: trace entry 2 (client-0): expected 4, got 5 at samplingParams.num_tokens_to_generate\n"
      )
    }), 180_000)

  it.live("--protocol main: the trace records its dialect; show and replay read it in main", () =>
    Effect.gen(function*() {
      const file = join(yield* tempDir, "main.trace.jsonl")
      const upstream = yield* Mcore.coordinator(["--protocol", "main"])
      const recorder = yield* Mcore.start(["trace", "record", "-u", upstream.address, "-o", file, "--protocol", "main"])
      const proxy = yield* recorder.line("the proxy's address", () => true)
      expect(yield* Mcore.ok(["generate", "-a", proxy, "--protocol", "main", "-n", "4", prompt])).toBe(
        `${Vocabulary.detokenize(tokens(4))}\n`
      )
      yield* recorder.line("the client", (l) => l === "peer client-0")
      yield* recorder.kill("SIGTERM")
      yield* recorder.exited()

      const shown = yield* Mcore.ok(["trace", "show", file])
      expect(shown.split("\n")[0]).toMatch(/^mcore-effect-trace version 2, created .*, protocol main$/)
      const submit = shown.split("\n").find((row) => row.includes("SUBMIT_REQUEST"))!
      expect(submit).toContain(`"prompt":"${prompt}"`)

      const fresh = yield* Mcore.coordinator(["--protocol", "main"])
      // A --protocol that contradicts the header is refused.
      const contradicted = yield* Mcore.run(["trace", "replay", file, "--address", fresh.address, "--protocol", "core_v0.19"])
      expect(contradicted.code).toBe(2)
      expect(contradicted.stderr).toBe(`mcore: ${file} was recorded in main, not core_v0.19\n`)
      expect(yield* Mcore.ok(["trace", "replay", file, "--address", fresh.address])).toMatch(/^replayed .* matched 2 answer\(s\)\n$/)
      const scripted = yield* Mcore.start(["trace", "replay", file, "--as-coordinator"])
      const address = yield* scripted.line("the scripted coordinator's address", () => true)
      yield* Mcore.ok(["generate", "-a", address, "--protocol", "main", "-n", "4", prompt])
      expect((yield* scripted.exited()).code).toBe(0)
    }), 180_000)
})
