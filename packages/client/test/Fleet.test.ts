/**
 * A fleet over several test coordinators on the in-memory transport: routing (affinity, spread,
 * the load bound), control signals fanned out with a result per coordinator, ids that name their
 * coordinator. Failover is `Fleet.failover.test.ts`'s subject.
 */
import { describe, expect, it } from "@effect/vitest"
import { Generation } from "@mcore-effect/testkit"
import { Effect, Exit, Fiber, Metric, Schedule, Scope, Stream } from "effect"
import { ClientMetrics, InferenceClient } from "../src/index.ts"
import { withRegistry } from "./support/Cluster.ts"
import { fleetSetup, promptOf, routedCounts } from "./support/Fleet.ts"

describe("Fleet", () => {
  it.live("submit, stream and submitAll over three coordinators: every reply the engine's tokens for its prompt", () =>
    Effect.gen(function*() {
      const { fleet } = yield* fleetSetup(3)
      const prompts = Array.from({ length: 12 }, (_, i) => promptOf(i, i, 2, 0))
      const replies = yield* Effect.forEach(prompts, (p) => fleet.client.submit(p, { num_tokens_to_generate: 4 }), {
        concurrency: "unbounded"
      })
      expect(replies.map((r) => r.generated_tokens)).toEqual(prompts.map((p) => Generation.tokens(p, 4)))
      const events = yield* Stream.runCollect(fleet.client.stream(prompts[0]!, { num_tokens_to_generate: 5 }))
      const last = events[events.length - 1]!
      expect(last._tag === "Final" && last.reply.generated_tokens).toEqual(Generation.tokens(prompts[0]!, 5))
      const batch = yield* Stream.runCollect(
        fleet.client.submitAll(prompts.map((prompt) => ({ prompt, samplingParams: { num_tokens_to_generate: 3 } })), { concurrency: 4 })
      )
      expect(batch.map((b) => b.index).sort((a, b) => a - b)).toEqual(prompts.map((_, i) => i))
      for (const b of batch) expect(b.reply.generated_tokens).toEqual(Generation.tokens(prompts[b.index]!, 3))
      expect(yield* fleet.client.pendingCount).toBe(0)
      expect(yield* fleet.client.connected).toBe(true)
    }).pipe(withRegistry))

  it.live("prefix routing: prompts sharing their first blocks go to one coordinator; distinct prompts spread over all", () =>
    Effect.gen(function*() {
      const { clusters, fleet } = yield* fleetSetup(4)
      // One at a time: no load, so placement is the prefix's alone.
      for (let i = 0; i < 12; i++) {
        yield* fleet.client.submit(promptOf(7, i, 4, 2), { num_tokens_to_generate: 1 })
      }
      const counts = yield* routedCounts(clusters)
      expect(counts.filter((n) => n > 0)).toEqual([12])
      // Distinct first blocks: rendezvous hashing spreads them.
      for (let i = 0; i < 200; i++) yield* fleet.client.submit(promptOf(1000 + i, i, 2, 1), { num_tokens_to_generate: 1 })
      const spread = (yield* routedCounts(clusters)).map((n, i) => n - counts[i]!)
      expect(spread.reduce((a, b) => a + b, 0)).toBe(200)
      for (const n of spread) expect(n).toBeGreaterThan(20)
    }).pipe(withRegistry))

  it.live("two fleets over the same coordinators place the same prefix on the same coordinator, sharing nothing", () =>
    Effect.gen(function*() {
      const { another, clusters, fleet } = yield* fleetSetup(4)
      const other = yield* another
      for (let g = 0; g < 10; g++) {
        const before = yield* routedCounts(clusters)
        yield* fleet.client.submit(promptOf(g, 0, 3, 3), { num_tokens_to_generate: 1 })
        const mid = yield* routedCounts(clusters)
        yield* other.client.submit(promptOf(g, 1, 3, 3), { num_tokens_to_generate: 1 })
        const after = yield* routedCounts(clusters)
        const first = mid.findIndex((n, i) => n > before[i]!)
        const second = after.findIndex((n, i) => n > mid[i]!)
        expect(second).toBe(first)
      }
    }).pipe(withRegistry))

  it.live("the load bound: a burst sharing one prefix is not all placed on the prefix's coordinator", () =>
    Effect.gen(function*() {
      // ceil(1.25 * (in flight + 1) / 4) + loadSlack at most per coordinator while the burst is
      // placed: 13 + 4 of 41 by default, 13 with no slack.
      for (const [loadSlack, most, spreadOver] of [[undefined, 17, 3], [0, 13, 4]] as const) {
        const { clusters, fleet } = yield* fleetSetup(4, { cluster: { engine: { stepMs: 5 } }, fleet: { loadSlack } })
        const burst = Array.from({ length: 40 }, (_, i) => promptOf(3, i, 3, 2))
        yield* Effect.forEach(burst, (p) => fleet.client.submit(p, { num_tokens_to_generate: 8 }), { concurrency: "unbounded" })
        const counts = yield* routedCounts(clusters)
        expect(counts.reduce((a, b) => a + b, 0)).toBe(40)
        expect(Math.max(...counts)).toBeLessThanOrEqual(most)
        expect(Math.max(...counts)).toBeGreaterThan(most - 4)
        expect(counts.filter((n) => n > 0).length).toBeGreaterThanOrEqual(spreadOver)
      }
    }).pipe(withRegistry))

  it.live("short chats: every turn of a conversation that starts under one block goes where its first turn went", () =>
    Effect.gen(function*() {
      const { fleet } = yield* fleetSetup(3, { cluster: { engine: { stepMs: 2 } } })
      const opening = [151644, 872, 198]
      const chat = (c: number) =>
        Effect.gen(function*() {
          let prompt = [...opening, ...promptOf(c, c, 1, 0).slice(0, 20 + (c % 7))]
          const members: Array<number | undefined> = []
          for (let t = 0; t < 5; t++) {
            const submitted = yield* fleet.client.submitWithId(prompt, { num_tokens_to_generate: 6 })
            members.push(fleet.memberOf(submitted.requestId))
            const reply = yield* submitted.reply
            expect(reply.generated_tokens).toEqual(Generation.tokens(prompt, 6))
            prompt = [...prompt, ...(reply.generated_tokens as ReadonlyArray<number>), ...promptOf(100 + c, t, 1, 0).slice(0, 20 + ((c + t) % 20))]
          }
          return members
        })
      const placements = yield* Effect.forEach(Array.from({ length: 12 }, (_, c) => c), chat, { concurrency: "unbounded" })
      for (const members of placements) expect(new Set(members).size).toBe(1)
      // The first turns went to the least loaded: all three took conversations.
      expect(new Set(placements.map((m) => m[0])).size).toBe(3)
    }).pipe(withRegistry))

  it.live("a routing key: the same coordinator from two fleets sharing nothing, whatever the prompt; keys spread", () =>
    Effect.gen(function*() {
      const { another, fleet } = yield* fleetSetup(3)
      const other = yield* another
      const where = new Set<number | undefined>()
      for (let k = 0; k < 30; k++) {
        const routingKey = `conversation-${k}`
        const a = yield* fleet.client.submitWithId(promptOf(k, 0, 2, 0), { num_tokens_to_generate: 1 }, { routingKey })
        const b = yield* other.client.submitWithId(promptOf(500 + k, 1, 1, 0), { num_tokens_to_generate: 1 }, { routingKey })
        yield* a.reply
        yield* b.reply
        expect(other.memberOf(b.requestId)).toBe(fleet.memberOf(a.requestId))
        where.add(fleet.memberOf(a.requestId))
      }
      expect(where.size).toBe(3)
      // Not a string: refused, nothing sent.
      const refused = yield* Effect.flip(fleet.client.submit([1, 2, 3], undefined, { routingKey: 7 as unknown as string }))
      expect(refused.reason._tag).toBe("InvalidArgument")
    }).pipe(withRegistry))

  it.live("least-loaded and round-robin spread one prefix over every coordinator", () =>
    Effect.gen(function*() {
      for (const routing of ["least-loaded", "round-robin"] as const) {
        const { clusters, fleet } = yield* fleetSetup(3, { fleet: { routing }, cluster: { engine: { stepMs: 2 } } })
        yield* Effect.forEach(Array.from({ length: 30 }, (_, i) => promptOf(1, i, 2, 2)), (p) =>
          fleet.client.submit(p, { num_tokens_to_generate: 4 }), { concurrency: "unbounded" })
        expect(yield* routedCounts(clusters)).toEqual([10, 10, 10])
      }
    }).pipe(withRegistry))

  it.live("fleet ids name their coordinator: abort reaches it; memberOf says which", () =>
    Effect.gen(function*() {
      const { clusters, fleet } = yield* fleetSetup(3, { cluster: { engine: { stepMs: 20 } } })
      const submitted = yield* Effect.forEach(
        Array.from({ length: 6 }, (_, i) => promptOf(50 + i, i, 2, 1)),
        (p) => fleet.client.submitWithId(p, { num_tokens_to_generate: 10_000 })
      )
      const ids = submitted.map((s) => s.requestId)
      expect(new Set(ids).size).toBe(6)
      const placed = [0, 1, 2].map((m) => submitted.filter((s) => fleet.memberOf(s.requestId) === m).length)
      expect(placed.reduce((a, b) => a + b, 0)).toBe(6)
      for (const [m, cluster] of clusters.entries()) {
        yield* cluster.coordinator.waitFor("its requests on engines", (s) => s.inFlight === placed[m])
      }
      for (const s of submitted) {
        expect(fleet.memberOf(s.requestId)).toBeGreaterThanOrEqual(0)
        yield* fleet.client.abort(s.requestId)
        const tag = yield* Effect.map(Effect.flip(s.reply), (e) => e.reason._tag)
        expect(tag).toBe("RequestAborted")
      }
      // Each coordinator's engines ended the requests placed there: the aborts reached them.
      for (const [m, cluster] of clusters.entries()) {
        yield* Effect.forEach(cluster.engines, (engine) => engine.waitFor("idle", (s) => s.active.length === 0))
        const aborted = yield* Effect.forEach(cluster.engines, (engine) => Effect.map(engine.snapshot, (s) => s.aborted.length))
        expect(aborted.reduce((a, b) => a + b, 0)).toBe(placed[m])
      }
      const invalid = yield* Effect.flip(fleet.client.abort(-1))
      expect(invalid.reason._tag).toBe("InvalidArgument")
      expect(fleet.memberOf(-1)).toBeUndefined()
    }).pipe(withRegistry))

  it.live("control signals: one result per coordinator; the service's method fails when one failed", () =>
    Effect.gen(function*() {
      const { clusters, fleet } = yield* fleetSetup(3, { fleet: { rejoinBackoff: "1 hour" } })
      const paused = yield* fleet.control("pauseEngines")
      expect(paused.map((r) => [r.index, r.address, Exit.isSuccess(r.exit)])).toEqual(
        clusters.map((c, i) => [i, c.address, true])
      )
      yield* Effect.forEach(clusters, (c) => c.coordinator.waitFor("PAUSED", (s) => s.state === "PAUSED"))
      yield* clusters[1]!.coordinator.crash
      yield* Effect.gen(function*() {
        const stats = yield* fleet.members[1]!.stats
        if (stats.status !== "down") return yield* Effect.fail("not yet")
      }).pipe(Effect.eventually)
      const unpaused = yield* fleet.control("unpauseEngines")
      expect(unpaused.map((r) => Exit.isSuccess(r.exit))).toEqual([true, false, true])
      const lost = unpaused[1]!.exit
      expect(Exit.isFailure(lost) && String(lost.cause)).toContain("CoordinatorLost")
      const failed = yield* Effect.flip(fleet.client.setGenerationEpoch(3))
      expect(failed.reason._tag).toBe("CoordinatorLost")
      yield* clusters[0]!.coordinator.waitFor("RUNNING", (s) => s.state === "RUNNING")
      // A refusal (a bad epoch) is every coordinator's, and nothing is remembered from it.
      const refused = yield* fleet.control({ generationEpoch: -1 })
      expect(refused.every((r) => Exit.isFailure(r.exit))).toBe(true)
    }).pipe(withRegistry))

  it.live("the fleet as InferenceClient: a layer the text layer and the server take unchanged", () =>
    Effect.gen(function*() {
      const { fleet } = yield* fleetSetup(2)
      const reply = yield* Effect.gen(function*() {
        const client = yield* InferenceClient.InferenceClient
        return yield* client.submit([1, 2, 3], { num_tokens_to_generate: 2 })
      }).pipe(Effect.provideService(InferenceClient.InferenceClient, fleet.client))
      expect(reply.generated_tokens).toEqual(Generation.tokens([1, 2, 3], 2))
    }).pipe(withRegistry))

  it.live("metrics per coordinator: each client's carry its address; up and re-submissions are the fleet's", () =>
    Effect.gen(function*() {
      const { clusters, fleet } = yield* fleetSetup(2, { fleet: { routing: "round-robin", rejoinBackoff: "1 hour" } })
      yield* Effect.forEach([0, 1, 2, 3], (i) => fleet.client.submit(promptOf(i, i, 1, 0), { num_tokens_to_generate: 2 }))
      const of = <M extends Metric.Metric<any, any>>(metric: M, coordinator: string) =>
        Metric.value(Metric.withAttributes(metric, { coordinator }))
      for (const cluster of clusters) {
        expect((yield* of(ClientMetrics.completed, cluster.address)).count).toBe(2)
        expect((yield* of(ClientMetrics.fleetCoordinatorUp, cluster.address)).value).toBe(1)
      }
      yield* clusters[1]!.coordinator.crash
      yield* Effect.map(fleet.members[1]!.stats, (s) => s.status !== "up").pipe(
        Effect.repeat({ until: (down) => down, schedule: Schedule.spaced("10 millis") })
      )
      expect((yield* of(ClientMetrics.fleetCoordinatorUp, clusters[1]!.address)).value).toBe(0)
      expect((yield* of(ClientMetrics.fleetCoordinatorUp, clusters[0]!.address)).value).toBe(1)
    }).pipe(withRegistry))

  it.live("closing the fleet fails what is pending with ClientClosed, submitted nowhere else", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const { fleet } = yield* fleetSetup(2, { cluster: { engine: { stepMs: 50 } } }).pipe(Scope.provide(scope))
      const pending = yield* Effect.forEach([0, 1, 2, 3], (i) =>
        Effect.forkChild(Effect.flip(fleet.client.submit(promptOf(i, i, 1, 0), { num_tokens_to_generate: 1000 }))))
      yield* Effect.map(fleet.client.pendingCount, (n) => n === 4).pipe(
        Effect.repeat({ until: (all) => all, schedule: Schedule.spaced("5 millis") })
      )
      yield* Scope.close(scope, Exit.void)
      const errors = yield* Effect.forEach(pending, Fiber.join)
      const stats = yield* Effect.forEach(fleet.members, (m) => m.stats)
      expect(errors.map((e) => e.reason._tag)).toEqual(Array(4).fill("ClientClosed"))
      expect(stats.reduce((n, s) => n + s.requests, 0)).toBe(4)
      expect(stats.every((s) => s.resubmitted === 0)).toBe(true)
    }).pipe(withRegistry))

  it.effect("options a fleet refuses fail before anything is opened", () =>
    Effect.gen(function*() {
      const { Fleet } = yield* Effect.promise(() => import("../src/index.ts"))
      const cases = [
        { coordinators: [] },
        { coordinators: ["tcp://127.0.0.1:1", "tcp://127.0.0.1:1"] },
        { coordinators: ["tcp://127.0.0.1:1"], routing: "random" as never },
        { coordinators: ["tcp://127.0.0.1:1"], loadFactor: 0.5 },
        { coordinators: ["tcp://127.0.0.1:1"], routingBlockTokens: 0 },
        { coordinators: ["tcp://127.0.0.1:1"], stallTimeout: -1 },
        { coordinators: ["not an address"] }
      ]
      for (const options of cases) {
        const error = yield* Effect.flip(Effect.scoped(Fleet.make({ protocol: "reference", ...options })))
        expect(["InvalidArgument", "InvalidAddress"]).toContain(error.reason._tag)
      }
    }))
})
