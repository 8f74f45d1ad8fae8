/**
 * `mcore control` and `mcore generate` over several coordinators: `--address` repeated or
 * comma-separated makes a fleet; a control signal reaches every coordinator.
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
      expect(paused.stdout).toContain(`${a.address}, ${b.address}`)
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
})
