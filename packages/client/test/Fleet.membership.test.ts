/**
 * A fleet whose coordinators come and go (`membership`, a Stream of member sets), over test
 * coordinators on the in-memory transport: one added takes requests once joined; one removed
 * takes no new request, finishes what it holds, then is closed and its metric series removed; a set that is empty or names an
 * address the transport refuses changes nothing; fleet ids keep naming their requests.
 */
import { describe, expect, it } from "@effect/vitest"
import { MemorySocket } from "@mcore-effect/protocol"
import { Generation, TestFleet, TestSupport } from "@mcore-effect/testkit"
import { Effect, Exit, Fiber, Metric, Queue, Schedule, Stream } from "effect"
import * as fc from "fast-check"
import { Fleet, Transport } from "../src/index.ts"
import { withRegistry } from "./support/Cluster.ts"
import { outcomeOf, promptOf, routedCounts } from "./support/Fleet.ts"

const until = (check: Effect.Effect<boolean>) =>
  check.pipe(Effect.repeat({ until: (held) => held, schedule: Schedule.spaced("10 millis") }), Effect.asVoid)

/** Three test coordinators, and a fleet over the first two whose later sets come from a queue. */
const setup = (options?: { readonly stepMs?: number; readonly routing?: Fleet.RoutingPolicy }) =>
  Effect.gen(function*() {
    const network = new MemorySocket.Network()
    const testFleet = yield* TestFleet.make({ engines: 1, coordinators: 3, network, engine: { stepMs: options?.stepMs ?? 1 } })
    const sets = yield* Queue.unbounded<ReadonlyArray<string>>()
    const fleet = yield* Fleet.make({
      coordinators: testFleet.addresses.slice(0, 2),
      membership: Stream.fromQueue(sets),
      protocol: "reference",
      routing: options?.routing ?? "least-loaded",
      connectTimeout: "500 millis"
    }).pipe(Effect.provide(Transport.layerMemory(network)))
    const [a, b, c] = testFleet.addresses as [string, string, string]
    /** Waits until the fleet's members are `addresses`, each up. */
    const membersUp = (addresses: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        for (let waited = 0; ; waited += 20) {
          const stats = yield* Effect.forEach(fleet.members, (m) => m.stats)
          const now = stats.map((s) => s.address).sort()
          if (JSON.stringify(now) === JSON.stringify([...addresses].sort()) && stats.every((s) => s.status === "up")) return
          if (waited > 5_000) return yield* Effect.die(new Error(`members ${JSON.stringify(stats)}, not ${addresses.join(", ")}`))
          yield* Effect.sleep("20 millis")
        }
      })
    return { testFleet, fleet, sets, a, b, c, membersUp }
  })

describe("Fleet membership", () => {
  it.live("a coordinator added joins and takes requests; one removed finishes what it holds and is closed", () =>
    Effect.gen(function*() {
      const { a, b, c, fleet, membersUp, sets, testFleet } = yield* setup({ stepMs: 5 })
      yield* membersUp([a, b])
      yield* Queue.offer(sets, [a, b, c])
      yield* membersUp([a, b, c])
      const prompts = Array.from({ length: 30 }, (_, i) => promptOf(i, i, 1, 0))
      yield* Effect.forEach(prompts, (p) => fleet.client.submit(p, { num_tokens_to_generate: 4 }), { concurrency: "unbounded" })
      const afterAdd = yield* routedCounts(testFleet.clusters)
      expect(afterAdd[2]).toBeGreaterThan(0)

      // A long request on the first coordinator (least-loaded, all idle: index 0), then it is removed.
      const first = fleet.members.find((m) => m.address === a)!
      const long = yield* fleet.client.submitWithId(promptOf(500, 0, 1, 0), { num_tokens_to_generate: 60 })
      expect(fleet.memberOf(long.requestId)).toBe(first.index)
      const waiting = yield* Effect.forkChild(long.reply)
      yield* Queue.offer(sets, [b, c])
      for (let waited = 0; fleet.members.some((m) => m.address === a); waited += 10) {
        if (waited > 5_000) return yield* Effect.die(new Error("the removed coordinator is still a member"))
        yield* Effect.sleep("10 millis")
      }
      expect(fleet.members.map((m) => m.address).sort()).toEqual([b, c].sort())
      const before = yield* routedCounts(testFleet.clusters)
      yield* Effect.forEach(prompts, (p) => fleet.client.submit(p, { num_tokens_to_generate: 2 }), { concurrency: "unbounded" })
      const after = yield* routedCounts(testFleet.clusters)
      expect(after[0]).toBe(before[0])
      // What it held ends as it would have.
      const reply = yield* Fiber.join(waiting)
      expect(reply.generated_tokens).toEqual(Generation.tokens(promptOf(500, 0, 1, 0), 60))
      // Then its client is closed, and its metric series are gone (they were there).
      const seriesOf = (address: string) =>
        Effect.map(Metric.snapshot, (all) => all.filter((m) => m.attributes?.["coordinator"] === address).map((m) => m.id))
      expect(yield* seriesOf(a)).toContain("mcore_client_requests_completed")
      for (let waited = 0; (yield* first.client) !== undefined || (yield* seriesOf(a)).length > 0; waited += 20) {
        if (waited > 5_000) return yield* Effect.die(new Error("the removed coordinator's client is still open, or its series left"))
        yield* Effect.sleep("20 millis")
      }
      expect((yield* first.stats).status).not.toBe("up")
      expect(yield* seriesOf(b)).toContain("mcore_client_requests_completed")
      // Added again: a new member, in the place it freed.
      yield* Queue.offer(sets, [a, b, c])
      yield* membersUp([a, b, c])
      expect(fleet.members.find((m) => m.address === a)!.index).toBe(first.index)
      // The old id names no request of the new member: aborting it does nothing.
      yield* fleet.client.abort(long.requestId)
    }).pipe(withRegistry))

  it.live("an empty set, or one with an address the transport refuses, changes nothing and is logged", () =>
    Effect.gen(function*() {
      yield* TestSupport.withLogs((logs) => Effect.gen(function*() {
        const { a, b, c, fleet, membersUp, sets } = yield* setup()
        yield* membersUp([a, b])
        yield* Queue.offer(sets, [])
        // The in-memory transport refuses only an empty address.
        yield* Queue.offer(sets, [a, ""])
        yield* Queue.offer(sets, [a, b, c])
        yield* membersUp([a, b, c])
        expect(logs.filter((l) => l.includes("a coordinator set with no coordinator: the fleet keeps its members"))).toHaveLength(1)
        expect(logs.filter((l) => l.includes("a coordinator set with \"\" (the address is empty): the fleet keeps its members"))).toHaveLength(1)
        // Nothing left: only the one added joined.
        expect(logs.filter((l) => l.includes("left the fleet"))).toEqual([])
        expect(logs.filter((l) => l.includes("joins the fleet"))).toEqual([`Warn coordinator ${c} joins the fleet in place 2`])
        const replies = yield* Effect.forEach([1, 2, 3], (i) => fleet.client.submit(promptOf(i, i, 1, 0), { num_tokens_to_generate: 2 }))
        expect(replies).toHaveLength(3)
      }), "Warn")
    }).pipe(withRegistry))

  it.live("a coordinator removed and added again before it left: a new member beside it, which takes the requests", () =>
    Effect.gen(function*() {
      const { a, b, fleet, membersUp, sets, testFleet } = yield* setup({ stepMs: 5 })
      yield* membersUp([a, b])
      const long = yield* fleet.client.submitWithId(promptOf(7, 0, 1, 0), { num_tokens_to_generate: 40 })
      const held = fleet.memberOf(long.requestId)!
      const address = fleet.members.find((m) => m.index === held)!.address
      yield* Queue.offer(sets, [a, b].filter((x) => x !== address))
      yield* Queue.offer(sets, [a, b])
      // The new member, in a place of its own (the old one still holds its request).
      for (let waited = 0; fleet.members.find((m) => m.address === address)?.index === held; waited += 10) {
        if (waited > 5_000) return yield* Effect.die(new Error("no new member"))
        yield* Effect.sleep("10 millis")
      }
      yield* membersUp([a, b])
      expect(fleet.members.find((m) => m.address === address)!.index).toBe(2)
      expect((yield* long.reply).generated_tokens).toEqual(Generation.tokens(promptOf(7, 0, 1, 0), 40))
      const replies = yield* Effect.forEach(Array.from({ length: 6 }, (_, i) => promptOf(20 + i, i, 1, 0)), (p) =>
        Effect.map(fleet.client.submitWithId(p, { num_tokens_to_generate: 2 }), (s) => fleet.memberOf(s.requestId)))
      expect(replies.every((m) => m !== held)).toBe(true)
      expect(yield* routedCounts(testFleet.clusters)).toHaveLength(3)
    }).pipe(withRegistry))

  it.live("property: under random member sets, kills and restarts every request ends once; nothing reaches a removed coordinator after its removal", () =>
    Effect.gen(function*() {
      const step = fc.oneof(
        fc.record({ kind: fc.constant("set" as const), mask: fc.integer({ min: 1, max: 7 }), after: fc.integer({ min: 0, max: 40 }) }),
        fc.record({ kind: fc.constantFrom("kill" as const, "restart" as const), index: fc.integer({ min: 0, max: 2 }), after: fc.integer({ min: 0, max: 40 }) })
      )
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (schedule) => {
            const program = Effect.gen(function*() {
              const { fleet, sets, testFleet } = yield* setup({ routing: "prefix" })
              const addresses = testFleet.addresses
              const BURST = 60
              const ends = new Uint8Array(BURST)
              const outcomes: Array<string> = []
              let done = 0
              const burst = yield* Effect.forkChild(
                Effect.forEach(Array.from({ length: BURST }, (_, i) => i), (i) => {
                  const prompt = promptOf(i, i, 1, 0)
                  const count = 5 + (i % 20)
                  return Effect.map(
                    Effect.exit(Effect.map(fleet.client.submit(prompt, { num_tokens_to_generate: count }), (r) => r.generated_tokens as ReadonlyArray<number>)),
                    (exit) => {
                      ends[i]!++
                      done++
                      outcomes.push(outcomeOf(prompt, count)(exit as Exit.Exit<ReadonlyArray<number>, { readonly reason: { readonly _tag: string } }>))
                    }
                  )
                }, { concurrency: 16, discard: true })
              )
              // For each coordinator removed and not touched again: SUBMITs its engines may have at most.
              const bounds = new Map<number, number>()
              for (const s of schedule) {
                yield* until(Effect.sync(() => done >= Math.min(s.after, BURST))).pipe(Effect.timeoutOption("300 millis"))
                if (s.kind === "set") {
                  const wanted = addresses.filter((_, i) => (s.mask & (1 << i)) !== 0)
                  const views = fleet.members
                  yield* Queue.offer(sets, wanted)
                  yield* until(Effect.sync(() => {
                    const now = fleet.members.map((m) => m.address)
                    return now.length === wanted.length && wanted.every((a) => now.includes(a))
                  })).pipe(Effect.timeoutOption("2 seconds"))
                  for (const index of [0, 1, 2]) if (wanted.includes(addresses[index]!)) bounds.delete(index)
                  const counts = yield* routedCounts(testFleet.clusters)
                  for (const view of views) {
                    if (wanted.includes(view.address)) continue
                    const index = addresses.indexOf(view.address)
                    bounds.set(index, counts[index]! + (yield* view.stats).inFlight)
                  }
                } else {
                  bounds.delete(s.index)
                  if (s.kind === "kill") yield* testFleet.kill(s.index)
                  else yield* testFleet.restart(s.index)
                }
              }
              // Every coordinator in the fleet at the end alive, so that what waits is answered.
              const last = fleet.members.map((m) => addresses.indexOf(m.address))
              yield* Effect.forEach(last, (index) => testFleet.restart(index).pipe(Effect.ignore))
              yield* Queue.offer(sets, addresses)
              yield* Fiber.join(burst)
              expect(ends.every((n) => n === 1)).toBe(true)
              expect(outcomes.filter((o) => o !== "ok" && o !== "CoordinatorLost")).toEqual([])
              const counts = yield* routedCounts(testFleet.clusters)
              for (const [index, most] of bounds) expect(counts[index]!, `coordinator ${index}`).toBeLessThanOrEqual(most)
            }).pipe(Effect.scoped, withRegistry)
            await Effect.runPromise(program)
          }),
          { numRuns: 6 }
        )
      )
    }), 120_000)
})
