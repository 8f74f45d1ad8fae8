/**
 * `mcore control` and `mcore generate` over several coordinators: `--address` repeated or
 * comma-separated makes a fleet; a control signal reaches every coordinator, each with its own
 * line (and exit code 1 when one did not take it).
 */
import { beforeAll, describe, expect, it } from "@effect/vitest"
import { TestCluster } from "@mcore-effect/testkit"
import { Effect } from "effect"
import { ensureBuilt } from "./support/Build.ts"
import * as Mcore from "./support/Mcore.ts"

beforeAll(ensureBuilt, 300_000)

describe("mcore over a fleet", () => {
  it.live("control pause with --address A,B pauses both; generate with --address A --address B is answered", () =>
    Effect.gen(function*() {
      const a = yield* TestCluster.make({ engines: 1 })
      const b = yield* TestCluster.make({ engines: 1 })
      const paused = yield* Mcore.run(["control", "pause", "--address", `${a.address},${b.address}`, "--protocol", "reference"])
      expect(paused.code).toBe(0)
      expect(lineOf(paused.stdout, a.address)).toMatch(/ ok$/)
      expect(lineOf(paused.stdout, b.address)).toMatch(/ ok$/)
      for (const cluster of [a, b]) yield* cluster.coordinator.waitFor("PAUSED", (s) => s.state === "PAUSED")
      const resumed = yield* Mcore.run(["control", "unpause", "--address", a.address, "--address", b.address, "--protocol", "reference"])
      expect(resumed.code).toBe(0)
      for (const cluster of [a, b]) yield* cluster.coordinator.waitFor("RUNNING", (s) => s.state === "RUNNING")
      const generated = yield* Mcore.run(["generate", "--address", a.address, "--address", b.address, "--protocol", "reference", "--token-ids", "1,2,3"])
      expect(generated.code).toBe(0)
      const twice = yield* Mcore.run(["control", "pause", "--address", `${a.address},${a.address}`, "--protocol", "reference"])
      expect(twice.code).toBe(2)
      expect(twice.stderr).toContain("is given twice")
    }), 120_000)

  it.live("control over two coordinators prints one line per coordinator, a header and a note, and exits 0", () =>
    Effect.gen(function*() {
      const a = yield* TestCluster.make({ engines: 1 })
      const b = yield* TestCluster.make({ engines: 1 })
      const epoch = yield* Mcore.run(["control", "epoch", "3", "--address", a.address, "--address", b.address, "--protocol", "reference"])
      expect(epoch.code).toBe(0)
      expect(epoch.stderr).toBe("")
      const lines = epoch.stdout.trimEnd().split("\n")
      expect(lines).toHaveLength(5)
      expect(lines[0]).toMatch(/^coordinator +SET_GENERATION_EPOCH 3$/)
      expect(lines[1]).toMatch(/^-+ +-+$/)
      expect(lines[2]).toMatch(new RegExp(`^${escape(a.address)} +ok$`))
      expect(lines[3]).toMatch(new RegExp(`^${escape(b.address)} +ok$`))
      expect(lines[4]).toBe("ok: sent; the coordinators do not confirm")
      // Sent, and delivered: both coordinators take a PAUSE sent this way.
      const paused = yield* Mcore.run(["control", "pause", "-a", `${a.address},${b.address}`, "--protocol", "reference"])
      expect(paused.code).toBe(0)
      expect(paused.stdout).toContain("ok: sent; the coordinators do not confirm (each acts on PAUSE only when RUNNING)")
      for (const cluster of [a, b]) yield* cluster.coordinator.waitFor("PAUSED", (s) => s.state === "PAUSED")
    }), 120_000)

  it.live("a coordinator that is gone gets its error on its line, the other ok, and the command exits 1", () =>
    Effect.gen(function*() {
      const a = yield* TestCluster.make({ engines: 1 })
      // A coordinator that was there and is closed: nothing answers at its address any more.
      const gone = yield* Effect.scoped(Effect.map(TestCluster.make({ engines: 1 }), (cluster) => cluster.address))
      const paused = yield* Mcore.run([
        "control", "pause", "--address", a.address, "--address", gone, "--protocol", "reference", "--connect-timeout", "1s"
      ])
      expect(paused.code).toBe(1)
      expect(lineOf(paused.stdout, a.address)).toMatch(/ ok$/)
      const failed = lineOf(paused.stdout, gone)
      expect(failed).not.toMatch(/ ok$/)
      expect(failed).toContain("CoordinatorLost")
      expect(paused.stderr.trim()).toBe("mcore: PAUSE failed at 1 of 2 coordinators (their lines above)")
      // The one that took it has it delivered before the command ends.
      yield* a.coordinator.waitFor("PAUSED", (s) => s.state === "PAUSED")
    }), 120_000)

  it.live("one address keeps the one-line answer", () =>
    Effect.gen(function*() {
      const a = yield* TestCluster.make({ engines: 1 })
      const paused = yield* Mcore.run(["control", "pause", "--address", a.address, "--protocol", "reference"])
      expect(paused.code).toBe(0)
      expect(paused.stdout).toBe(`PAUSE sent to ${a.address}; the coordinator does not confirm (it acts on PAUSE only when RUNNING)\n`)
    }), 120_000)
})

/** The line of `stdout` that starts with `address`. */
const lineOf = (stdout: string, address: string): string =>
  stdout.split("\n").find((line) => line.startsWith(`${address} `)) ?? `(no line for ${address} in)\n${stdout}`

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
