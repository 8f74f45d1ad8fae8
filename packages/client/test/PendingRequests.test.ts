/**
 * The registry on its own: every id leaves exactly once, each transition ends its entry the way
 * the entry's kind says, and the metrics follow.
 */
import { describe, expect, it } from "@effect/vitest"
import { TestSupport } from "@mcore-effect/testkit"
import * as fc from "fast-check"
import { Cause, Effect, Exit, Metric, Queue, Stream } from "effect"
import { type ClientError, clientError, ClientClosed, CoordinatorLost } from "../src/ClientError.ts"
import { ClientMetrics } from "../src/index.ts"
import { Recorder } from "../src/ClientMetrics.ts"
import { Batched, type BatchSink, PendingRequests, Single, singles, Streamed } from "../src/internal/pendingRequests.ts"
import type { Reply, StreamEvent } from "../src/Reply.ts"

const registry = Effect.map(Effect.context<never>(), (context) => new PendingRequests(new Recorder(context)))

const reply = (n: number): Reply => ({ latency: 0.5, n })

const noCancel = { cancel: () => {} }

const count = (metric: Metric.Metric<number, { readonly count: number }>) => Effect.map(Metric.value(metric), (s) => s.count)

describe("PendingRequests", () => {
  it.effect("an id leaves once: take, complete; a second take finds nothing", () =>
    Effect.gen(function*() {
      const pending = yield* registry
      const entry = singles(noCancel)(0)
      pending.add(entry)
      expect(pending.size).toBe(1)
      expect(pending.get(0)).toBe(entry)
      const taken = pending.take(0)!
      expect(pending.take(0)).toBeUndefined()
      pending.complete(taken, reply(1), 0.5, 3)
      expect(entry.exit).toEqual(Exit.succeed(reply(1)))
      expect(pending.size).toBe(0)
      expect(yield* count(ClientMetrics.completed)).toBe(1)
      expect(yield* count(ClientMetrics.tokensReceived)).toBe(3)
      expect((yield* Metric.value(ClientMetrics.inFlight)).value).toBe(0)
    }).pipe(TestSupport.withRegistry))

  it.effect("a single entry wakes every waiter once, and one that listens late at once", () =>
    Effect.gen(function*() {
      const entry = singles(noCancel)(4)
      const seen: Array<Exit.Exit<Reply, ClientError>> = []
      entry.listen((exit) => seen.push(exit))
      entry.listen((exit) => seen.push(exit))
      entry.done(Exit.succeed(reply(1)))
      entry.done(Exit.succeed(reply(2)))
      entry.listen((exit) => seen.push(exit))
      expect(seen).toEqual([Exit.succeed(reply(1)), Exit.succeed(reply(1)), Exit.succeed(reply(1))])
    }))

  it.effect("running a single entry as an effect cancels its request through the canceller", () =>
    Effect.gen(function*() {
      const cancelled: Array<number> = []
      yield* singles({ cancel: (id) => cancelled.push(id) })(9)
      expect(cancelled).toEqual([9])
    }))

  it.effect("a streamed entry gets Tokens in order, then Final, then the end", () =>
    Effect.gen(function*() {
      const pending = yield* registry
      const events = yield* Stream.runCollect(
        Stream.callback<StreamEvent, ClientError>((queue) =>
          Effect.sync(() => {
            const entry = new Streamed(2, queue)
            pending.add(entry)
            pending.partial(entry, [5])
            pending.partial(entry, [6, 7])
            pending.complete(pending.take(2)!, reply(1), 0.1, 3)
          })
        )
      )
      expect(events).toEqual([
        { _tag: "Tokens", requestId: 2, newTokens: [5] },
        { _tag: "Tokens", requestId: 2, newTokens: [6, 7] },
        { _tag: "Final", reply: reply(1) }
      ])
    }).pipe(TestSupport.withRegistry))

  it.effect("a single-reply entry ignores partials", () =>
    Effect.gen(function*() {
      const pending = yield* registry
      const entry = singles(noCancel)(1)
      pending.add(entry)
      pending.partial(entry, [1])
      expect(entry.exit).toBeUndefined()
    }).pipe(TestSupport.withRegistry))

  it.effect("batched entries report to their sink; idsOf lists a batch's pending ids only", () =>
    Effect.gen(function*() {
      const pending = yield* registry
      const log: Array<string> = []
      const sink: BatchSink = {
        completed: (entry, r) => log.push(`${entry.index}:${(r as unknown as { n: number }).n}`),
        failed: (entry, error) => log.push(`${entry.index}:${error.reason._tag}`)
      }
      const other: BatchSink = { completed: () => {}, failed: () => {} }
      pending.add(new Batched(sink, 0, 10))
      pending.add(new Batched(sink, 1, 11))
      pending.add(new Batched(other, 0, 12))
      expect(pending.idsOf(sink)).toEqual([10, 11])
      pending.complete(pending.take(10)!, reply(7), 0.1, 0)
      pending.fail(pending.take(11)!, clientError(new ClientClosed()), "aborted")
      expect(log).toEqual(["0:7", "1:ClientClosed"])
      expect(pending.idsOf(sink)).toEqual([])
      expect(yield* count(ClientMetrics.aborted)).toBe(1)
    }).pipe(TestSupport.withRegistry))

  it.effect("failAll ends every kind of entry with the same error and empties the registry", () =>
    Effect.gen(function*() {
      const pending = yield* registry
      const lost = clientError(new CoordinatorLost({ address: "tcp://127.0.0.1:1" }))
      const single = singles(noCancel)(0)
      const failed: Array<string> = []
      const queue = yield* Queue.make<StreamEvent, ClientError | Cause.Done>()
      pending.add(single)
      pending.setTimer(0, setTimeout(() => expect.unreachable("the timer is cleared"), 50))
      pending.add(new Streamed(1, queue))
      pending.add(new Batched({ completed: () => {}, failed: (_, e) => failed.push(e.reason._tag) }, 0, 2))
      pending.failAll(lost)
      expect(pending.size).toBe(0)
      expect(single.exit).toEqual(Exit.fail(lost))
      expect(failed).toEqual(["CoordinatorLost"])
      expect(yield* Effect.flip(Queue.take(queue))).toBe(lost)
      expect(yield* count(ClientMetrics.failed)).toBe(3)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 80)))
    }).pipe(TestSupport.withRegistry))
  // The registry keeps entries in pages by id: the model is a plain Map, and every operation,
  // on ids close together, ids far apart (other pages) and ids past 2^32, must agree with it.
  it.effect("agrees with a Map on every sequence of adds, takes and lookups, across pages", () =>
    Effect.gen(function*() {
      const context = yield* Effect.context<never>()
      const op = fc.oneof(
        fc.record({ kind: fc.constant("add" as const), gap: fc.oneof(fc.nat(3), fc.nat(200), fc.constant(2 ** 33)) }),
        fc.record({ kind: fc.constant("take" as const), pick: fc.nat() }),
        fc.record({ kind: fc.constant("get" as const), pick: fc.nat() }),
        fc.record({ kind: fc.constant("absent" as const), id: fc.nat(3 * 2 ** 33) })
      )
      fc.assert(
        fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
          const pending = new PendingRequests(new Recorder(context))
          const model = new Map<number, Single>()
          let next = 0
          const ids = () => [...model.keys()]
          for (const o of ops) {
            if (o.kind === "add") {
              next += o.gap
              const entry = singles(noCancel)(next++)
              pending.add(entry, performance.now())
              model.set(entry.requestId, entry)
            } else if (o.kind === "absent") {
              if (model.has(o.id)) continue
              expect(pending.get(o.id)).toBeUndefined()
              expect(pending.take(o.id)).toBeUndefined()
              expect(pending.elapsedSeconds(o.id)).toBeNaN()
            } else if (model.size > 0) {
              const id = ids()[o.pick % model.size]!
              if (o.kind === "get") {
                expect(pending.get(id)).toBe(model.get(id))
              } else {
                expect(pending.take(id)).toBe(model.get(id))
                model.delete(id)
                expect(pending.take(id)).toBeUndefined()
              }
            }
            expect(pending.size).toBe(model.size)
          }
          for (const [id, entry] of model) expect(pending.get(id)).toBe(entry)
          pending.failAll(clientError(new ClientClosed()))
          for (const entry of model.values()) expect(entry.exit?._tag).toBe("Failure")
          expect(pending.size).toBe(0)
          for (const id of model.keys()) expect(pending.get(id)).toBeUndefined()
        })
      )
    }).pipe(TestSupport.withRegistry))

  it.effect("a request's start time is its own: elapsed seconds from the time it was added with", () =>
    Effect.gen(function*() {
      const pending = yield* registry
      const now = performance.now()
      pending.add(singles(noCancel)(63), now - 2_000)
      pending.add(singles(noCancel)(64), now - 5_000)
      pending.add(singles(noCancel)(65), now)
      const [a, b, c] = [pending.elapsedSeconds(63), pending.elapsedSeconds(64), pending.elapsedSeconds(65)]
      expect(a).toBeGreaterThanOrEqual(2)
      expect(a).toBeLessThan(4)
      expect(b).toBeGreaterThanOrEqual(5)
      expect(b).toBeLessThan(7)
      expect(c).toBeLessThan(2)
      pending.take(64)
      expect(pending.elapsedSeconds(64)).toBeNaN()
    }).pipe(TestSupport.withRegistry))

  it.effect("a deadline's timer is cleared when its request leaves, and refused for an id not pending", () =>
    Effect.gen(function*() {
      const pending = yield* registry
      const fired: Array<number> = []
      pending.add(singles(noCancel)(1))
      pending.add(singles(noCancel)(2))
      pending.setTimer(1, setTimeout(() => fired.push(1), 20))
      pending.setTimer(2, setTimeout(() => fired.push(2), 20))
      pending.setTimer(3, setTimeout(() => fired.push(3), 20))
      pending.take(1)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 60)))
      expect(fired).toEqual([2])
    }).pipe(TestSupport.withRegistry))
})
