/**
 * Interrupt storms: thousands of requests, each interrupted at a random moment (before it is
 * sent, while it is in flight, as its reply arrives), submits and streams alike. What the client
 * put on the wire is read from a trace recorder between it and the test coordinator: exactly one
 * ABORT for each interrupted request that was sent, none for a request that finished or was never
 * sent, and nothing left in the registry.
 */
import { describe, expect, it } from "@effect/vitest"
import { Headers, Messages, Msgpack } from "@mcore-effect/protocol"
import { TestCluster, TraceRecorder } from "@mcore-effect/testkit"
import { Effect, Exit, Fiber, Result, Stream } from "effect"
import { InferenceClient } from "../../src/index.ts"
import * as Harness from "./support/Harness.ts"

const H = Headers.values
const COUNT = 10_000

type Outcome = "completed" | "interrupted" | "other"

describe("interrupt storms", () => {
  it.live(`${COUNT.toLocaleString("en")} requests interrupted at random points: one ABORT for each one sent and not finished, none otherwise`, () =>
    Effect.gen(function*() {
      const seed = Harness.seedFrom("MCORE_STORM_SEED")
      const random = Harness.random(seed)
      const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 1 } })
      const recorder = yield* TraceRecorder.make({ upstream: cluster.address })
      const client = yield* InferenceClient.make({ address: recorder.address, protocol: cluster.protocol })

      const outcomes: Array<Outcome | undefined> = new Array(COUNT)
      const record = (i: number) => (exit: Exit.Exit<unknown, unknown>) =>
        Effect.sync(() => {
          outcomes[i] = Exit.isSuccess(exit) ? "completed" : Exit.hasInterrupts(exit) ? "interrupted" : "other"
        })
      // Task i's prompt starts with i + 1, which names it in the recorded SUBMIT.
      const prompt = (i: number) => [i + 1, 5, 9]
      const request = (i: number) => {
        const params = { num_tokens_to_generate: 1 + Math.floor(random() * 12) }
        return random() < 0.5
          ? client.submit(prompt(i), params)
          : Stream.runDrain(client.stream(prompt(i), params))
      }
      const task = (i: number) =>
        Effect.gen(function*() {
          const startAfter = random() < 0.5 ? 0 : Math.floor(random() * 5)
          // Early (mostly before the send), in flight, or late (mostly after the reply).
          const when = random()
          const interruptAfter = when < 0.25
            ? Math.floor(random() * 3)
            : when < 0.75
            ? Math.floor(random() * 40)
            : 1_000 + Math.floor(random() * 4_000)
          const fiber = yield* Effect.forkChild(
            request(i).pipe(Effect.onExit(record(i)), Effect.delay(startAfter))
          )
          // A request that ends first is not waited for any longer.
          yield* Effect.raceFirst(Fiber.await(fiber), Effect.sleep(interruptAfter))
          yield* Fiber.interrupt(fiber)
          // Interrupted before it started: the request itself never ran.
          if (outcomes[i] === undefined) outcomes[i] = "interrupted"
        })
      yield* Effect.forEach(Array.from({ length: COUNT }, (_, i) => i), task, {
        concurrency: 500,
        discard: true
      }).pipe(Harness.bounded("the storm", "40 seconds"))

      expect(yield* client.pendingCount).toBe(0)
      // A last round trip: everything the client sent before it has passed the recorder.
      const barrier = yield* client.submitWithId([1_000_000], { num_tokens_to_generate: 1 })
      yield* barrier.reply
      const entries = yield* recorder.waitFor("the barrier", (entries) =>
        entries.some((e) => {
          if (e.dir !== "client->coordinator") return false
          const m = Messages.Client.decode(e.frames)
          return Result.isSuccess(m) && m.success._tag === "SubmitRequest" && m.success.requestId === barrier.requestId
        }))

      const taskOfId = new Map<number, number>()
      const aborts = new Map<number, number>()
      const repliedToClient = new Set<number>()
      for (const entry of entries) {
        if (entry.dir === "client->coordinator") {
          const m = Messages.Client.decode(entry.frames)
          if (Result.isFailure(m)) continue
          if (m.success._tag === "SubmitRequest") {
            const first = (Msgpack.decode(entry.frames[1]!) as ReadonlyArray<number>)[0]! - 1
            expect(taskOfId.has(m.success.requestId)).toBe(false)
            taskOfId.set(m.success.requestId, first)
          } else if (m.success._tag === "AbortRequest") {
            aborts.set(m.success.requestId, (aborts.get(m.success.requestId) ?? 0) + 1)
          }
        } else if (entry.dir === "coordinator->client") {
          const m = Messages.Coordinator.decodeEnvelope(entry.frames)
          if (Result.isSuccess(m) && m.success.spec.tag === "EngineReply") repliedToClient.add(m.success.metadata.requestId as number)
        }
      }
      taskOfId.delete(barrier.requestId)

      const sent = new Set(taskOfId.values())
      const tally = { completed: 0, abortedOnWire: 0, replyWonTheRace: 0, neverSent: 0 }
      const problems: Array<string> = []
      for (const [id, count] of aborts) if (!taskOfId.has(id)) problems.push(`ABORT x${count} for id ${id}, never submitted`)
      for (const [id, i] of taskOfId) {
        const n = aborts.get(id) ?? 0
        const outcome = outcomes[i]
        if (outcome === "completed" && n === 0) tally.completed++
        else if (outcome === "interrupted" && n === 1) tally.abortedOnWire++
        // Interrupted after its reply had reached the client: nothing left to abort.
        else if (outcome === "interrupted" && n === 0 && repliedToClient.has(id)) tally.replyWonTheRace++
        else problems.push(`task ${i} (id ${id}): ${outcome}, ${n} ABORT(s), reply ${repliedToClient.has(id) ? "sent" : "not sent"}`)
      }
      for (let i = 0; i < COUNT; i++) {
        if (sent.has(i)) continue
        if (outcomes[i] === "interrupted") tally.neverSent++
        else problems.push(`task ${i}: ${outcomes[i]} but never sent`)
      }
      const context = `seed ${seed}, ${JSON.stringify(tally)}`
      expect(problems.slice(0, 10), context).toEqual([])
      expect(tally.completed + tally.abortedOnWire + tally.replyWonTheRace + tally.neverSent).toBe(COUNT)
      // The storm hit every point it is meant to (a run where one stays empty proves nothing).
      expect(tally.completed, context).toBeGreaterThan(0)
      expect(tally.abortedOnWire, context).toBeGreaterThan(0)
      expect(tally.neverSent, context).toBeGreaterThan(0)

      const counters = yield* Harness.counters
      expect(counters.submitted).toBe(taskOfId.size + 1)
      expect(counters.aborted).toBe(tally.abortedOnWire)
      expect(counters.inFlight).toBe(0)
      expect(yield* client.pendingCount).toBe(0)
      expect(aborts.size).toBe(tally.abortedOnWire)
    }).pipe(Harness.isolated), { timeout: 60_000 })
})
