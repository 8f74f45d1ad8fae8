/**
 * Where a fleet's coordinators come from: a file in a temporary directory (rewritten, replaced
 * by a rename, broken, emptied, SIGHUP) and a DNS name served by the testkit's DNS server on
 * loopback (records added, removed, the name gone): each new set once, bad input logged once
 * with the last good set kept, and a start without a set refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { TestDns, TestSupport } from "@mcore-effect/testkit"
import { Effect, Fiber, Queue, Result, Stream } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { Membership } from "../src/index.ts"

/** Warnings logged, kept instead of printed. */
const capturingLogs = <A, E, R>(body: (logs: ReadonlyArray<string>) => Effect.Effect<A, E, R>) => TestSupport.withLogs(body, "Warn")

/** Collects the sets a membership emits into a queue, in a fiber of the scope. */
const collect = (changes: Stream.Stream<ReadonlyArray<string>>) =>
  Effect.gen(function*() {
    const seen = yield* Queue.unbounded<ReadonlyArray<string>>()
    const fiber = yield* Effect.forkScoped(Stream.runForEach(changes, (set) => Queue.offer(seen, set)))
    return { next: Queue.take(seen).pipe(Effect.timeout("5 seconds")), size: Queue.size(seen), fiber }
  })

/** Waits (up to 5 s) until `holds` does. */
const until = (holds: () => boolean) =>
  Effect.gen(function*() {
    for (let waited = 0; !holds(); waited += 20) {
      if (waited > 5_000) return yield* Effect.die(new Error("not within 5 s"))
      yield* Effect.sleep("20 millis")
    }
  })

const tempDir = TestSupport.tempDirectory("mcore-membership-")

describe("Membership", () => {
  it("parseList and parseDns", () => {
    expect(Membership.parseList("# pool\n\ntcp://10.0.0.1:5555\n  tcp://10.0.0.2:5555  \ntcp://10.0.0.1:5555\nipc:///tmp/c.sock\n"))
      .toEqual(Result.succeed(["tcp://10.0.0.1:5555", "tcp://10.0.0.2:5555", "ipc:///tmp/c.sock"]))
    expect(Membership.parseList("tcp://10.0.0.1:5555\nhttp://x:1")).toEqual(
      Result.fail("line 2: only tcp://host:port and ipc://path are supported")
    )
    expect(Membership.parseList("# nothing\n\n")).toEqual(Result.fail("it lists no coordinator"))
    expect(Membership.parseDns("dns:coordinators.svc.cluster.local:5555")).toEqual({ name: "coordinators.svc.cluster.local", port: 5555 })
    expect(Membership.parseDns("dns:coordinators:0")).toBeUndefined()
    expect(Membership.parseDns("dns:-bad:5555")).toBeUndefined()
    expect(Membership.parseDns("tcp://10.0.0.1:5555")).toBeUndefined()
  })

  it.live("a file: each new set once; a broken or empty file logged once, the last good set kept; a rename and SIGHUP seen", () =>
    capturingLogs((logs) =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const path = Path.join(dir, "coordinators")
        Fs.writeFileSync(path, "tcp://127.0.0.1:7001\ntcp://127.0.0.1:7002\n")
        // A long interval: what is seen is seen through the watch, or SIGHUP.
        const members = yield* Membership.file(path, { interval: "1 hour" })
        expect(members.initial).toEqual(["tcp://127.0.0.1:7001", "tcp://127.0.0.1:7002"])
        const sets = yield* collect(members.changes)
        Fs.writeFileSync(path, "tcp://127.0.0.1:7002\ntcp://127.0.0.1:7003\n")
        expect(yield* sets.next).toEqual(["tcp://127.0.0.1:7002", "tcp://127.0.0.1:7003"])
        // Broken, twice, then empty: two warnings, nothing emitted.
        Fs.writeFileSync(path, "tcp://127.0.0.1\n")
        yield* until(() => logs.length === 1)
        Fs.writeFileSync(path, "tcp://127.0.0.1\n\n")
        process.emit("SIGHUP", "SIGHUP")
        yield* Effect.sleep("150 millis")
        Fs.writeFileSync(path, "# none\n")
        yield* until(() => logs.length === 2)
        expect(yield* sets.size).toBe(0)
        expect(logs.filter((l) => l.includes("line 1: tcp:// needs host:port"))).toHaveLength(1)
        expect(logs.filter((l) => l.includes("it lists no coordinator"))).toHaveLength(1)
        expect(logs.every((l) => l.includes("keeping the last good set (2)"))).toBe(true)
        // Replaced by a rename, as editors and Kubernetes' ConfigMap volumes do.
        Fs.writeFileSync(`${path}.new`, "tcp://127.0.0.1:7004\n")
        Fs.renameSync(`${path}.new`, path)
        expect(yield* sets.next).toEqual(["tcp://127.0.0.1:7004"])
        // The same set written again: nothing.
        Fs.writeFileSync(path, "tcp://127.0.0.1:7004\n# a comment\n")
        yield* Effect.sleep("150 millis")
        expect(yield* sets.size).toBe(0)
        // SIGHUP reads it, whatever the watch saw.
        Fs.writeFileSync(path, "tcp://127.0.0.1:7005\n")
        process.emit("SIGHUP", "SIGHUP")
        expect(yield* sets.next).toEqual(["tcp://127.0.0.1:7005"])
      }).pipe(Effect.scoped)
    ))

  it.live("a file missing or listing nothing at the start: MembershipUnavailable", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const missing = yield* Effect.flip(Membership.file(Path.join(dir, "nope")))
      expect(missing.reason._tag).toBe("MembershipUnavailable")
      expect(missing.message).toContain(`no coordinators from file ${Path.join(dir, "nope")}: cannot read it`)
      Fs.writeFileSync(Path.join(dir, "empty"), "\n")
      const empty = yield* Effect.flip(Membership.file(Path.join(dir, "empty")))
      expect(empty.message).toContain("it lists no coordinator")
    }).pipe(Effect.scoped))

  it.live("a DNS name: its A and AAAA records, each new set once; gone or empty logged once, the last set kept", () =>
    capturingLogs((logs) =>
      Effect.gen(function*() {
        const zone = yield* TestDns.make({ "coordinators.test": ["127.0.0.2", "127.0.0.1", "::1"] })
        const members = yield* Membership.dns("coordinators.test", 5555, { servers: [zone.server], interval: "50 millis" })
        expect(members.initial).toEqual(["tcp://127.0.0.1:5555", "tcp://127.0.0.2:5555", "tcp://[::1]:5555"])
        const sets = yield* collect(members.changes)
        zone.set("coordinators.test", ["127.0.0.1", "127.0.0.3"])
        expect(yield* sets.next).toEqual(["tcp://127.0.0.1:5555", "tcp://127.0.0.3:5555"])
        zone.remove("coordinators.test")
        yield* until(() => logs.length === 1)
        zone.set("coordinators.test", [])
        yield* until(() => logs.length === 2)
        yield* Effect.sleep("200 millis")
        expect(yield* sets.size).toBe(0)
        expect(logs.filter((l) => l.includes("coordinators.test does not resolve (NXDOMAIN)"))).toHaveLength(1)
        expect(logs.filter((l) => l.includes("coordinators.test has no address"))).toHaveLength(1)
        zone.set("coordinators.test", ["127.0.0.3", "127.0.0.1"])
        // The same set as the last good one: nothing; then a new one.
        yield* Effect.sleep("300 millis")
        expect(yield* sets.size).toBe(0)
        zone.set("coordinators.test", ["127.0.0.4"])
        expect(yield* sets.next).toEqual(["tcp://127.0.0.4:5555"])
        expect(zone.questions()).toBeGreaterThan(10)
        yield* Fiber.interrupt(sets.fiber)
      }).pipe(Effect.scoped)
    ))

  it.live("a DNS name that does not resolve at the start: MembershipUnavailable", () =>
    Effect.gen(function*() {
      const zone = yield* TestDns.make({})
      const failed = yield* Effect.flip(Membership.dns("nowhere.test", 5555, { servers: [zone.server] }))
      expect(failed.reason._tag).toBe("MembershipUnavailable")
      expect(failed.message).toBe("MembershipUnavailable: no coordinators from dns nowhere.test:5555: nowhere.test does not resolve (NXDOMAIN)")
    }).pipe(Effect.scoped))
})
