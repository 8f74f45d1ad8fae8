/**
 * No default that can kill a coordinator: every command that talks to a coordinator the project
 * did not start must be told its dialect (`--protocol` or `MCORE_PROTOCOL`). Without it the
 * command ends with exit code 2 and one line listing the dialects, before opening any socket:
 * each command here is pointed at a loopback listener that counts connections, and it saw none.
 * What a script (scripts/megatron/interop.sh) tests for is written out literally here.
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { ConnectionCounter, Trace, WordTokenizer } from "@mcore-effect/testkit"
import { Effect } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

/** The one line, after the command's name. */
const missing = "missing --protocol (or MCORE_PROTOCOL in the environment): the coordinator's wire dialect, one of main, " +
  "pr-6497, core_v0.19, core_v0.18, core_v0.17, core_v0.16, reference (no default: a dialect the coordinator does not " +
  "speak can kill it; which Megatron-LM speaks which: README.md#against-a-real-megatron-deployment)"

/** Runs `mcore ...args`, expecting exit code 2, nothing on stdout and one line on stderr (returned). */
const refused = (args: ReadonlyArray<string>, env?: Record<string, string>) =>
  Effect.map(Mcore.run(args, { env }), (ended) => {
    expect(ended.code, ended.stderr).toBe(2)
    expect(ended.stdout).toBe("")
    expect(ended.stderr.endsWith("\n")).toBe(true)
    expect(ended.stderr.trimEnd().split("\n")).toHaveLength(1)
    return ended.stderr.trimEnd()
  })

const tempDir = Effect.acquireRelease(
  Effect.sync(() => mkdtempSync(join(tmpdir(), "mcore-dialect-"))),
  (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

describe("no default dialect", () => {
  it.live("generate and control without --protocol: exit code 2, one line, no connection", () =>
    Effect.gen(function*() {
      const listener = yield* ConnectionCounter.make
      const a = ["--address", listener.address]
      for (
        const command of [
          ["generate"],
          ["control", "pause"],
          ["control", "unpause"],
          ["control", "epoch"],
          ["control", "profiler", "start"],
          ["control", "shutdown"]
        ]
      ) {
        const args = command[0] === "generate" ? [...command, ...a, "hello"] : command[1] === "epoch" ? [...command, ...a, "3"] : [...command, ...a]
        const name = `mcore ${command.join(" ")}`
        expect(yield* refused(args)).toBe(`${name}: ${missing}; see ${name} --help`)
      }
      expect(yield* listener.connectionsBefore).toBe(0)
    }), 180_000)

  it.live("serve --coordinator without --protocol: exit code 2, one line, no connection", () =>
    Effect.gen(function*() {
      const listener = yield* ConnectionCounter.make
      const tokenizer = yield* WordTokenizer.directory
      expect(yield* refused(["serve", "--coordinator", listener.address, "--tokenizer", tokenizer, "--port", "0"])).toBe(
        `mcore: ${missing} (needed with --coordinator)`
      )
      // The address from the environment, as the flag's fallback: the same.
      expect(yield* refused(["serve", "--tokenizer", tokenizer, "--port", "0"], { MCORE_COORDINATOR_ADDRESS: listener.address }))
        .toBe(`mcore: ${missing} (needed with --coordinator)`)
      expect(yield* listener.connectionsBefore).toBe(0)
    }), 120_000)

  it.live("trace replay of a trace that names no dialect: exit code 2, one line, no connection, as either side", () =>
    Effect.gen(function*() {
      const listener = yield* ConnectionCounter.make
      const file = join(yield* tempDir, "unlabelled.trace.jsonl")
      // A version-1 trace as the recorder writes one without --protocol: a CONNECT and its ack.
      yield* Trace.write(
        file,
        Trace.make([
          { dir: "client->coordinator", peer: "client-0", t: 0, frames: [Uint8Array.of(0x91, 0x00)] },
          { dir: "coordinator->client", peer: "client-0", t: 10, frames: [Uint8Array.of(0x91, 0x01)] }
        ])
      )
      const why = `mcore: ${file} names no dialect (version 1, or recorded without --protocol): ${missing}`
      expect(yield* refused(["trace", "replay", file, "--address", listener.address])).toBe(why)
      expect(yield* refused(["trace", "replay", file, "--as-coordinator"])).toBe(why)
      expect(yield* listener.connectionsBefore).toBe(0)
    }), 120_000)

  it.live("MCORE_PROTOCOL stands for --protocol (and the counter sees a command that does connect)", () =>
    Effect.gen(function*() {
      const listener = yield* ConnectionCounter.make
      // The listener never answers ZeroMQ's greeting: the client connects, then times out (exit code 1).
      const ended = yield* Mcore.run(["generate", "-a", listener.address, "--connect-timeout", "300ms", "hello"], {
        env: { MCORE_PROTOCOL: "main" }
      })
      expect(ended.code, ended.stderr).toBe(1)
      expect(ended.stderr).toMatch(/^mcore: ConnectTimeout: /)
      expect(yield* listener.connectionsBefore).toBeGreaterThanOrEqual(1)
      // A bad value there is a bad value of the flag.
      expect(yield* refused(["generate", "-a", listener.address, "hello"], { MCORE_PROTOCOL: "v0.19" }))
        .toBe(
          `mcore generate: invalid value "v0.19" for --protocol: expected one of main, pr-6497, core_v0.19, core_v0.18, ` +
            `core_v0.17, core_v0.16, reference (README.md#against-a-real-megatron-deployment); see mcore generate --help`
        )
    }), 120_000)
})
