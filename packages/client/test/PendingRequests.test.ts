/**
 * The registry on its own: every id leaves exactly once, each transition ends its entry the way
 * the entry's kind says, and the metrics follow.
 */
import { describe, expect, it } from "@effect/vitest"
import { TestSupport } from "@mcore-effect/testkit"
import { Cause, Effect, Exit, Metric, Queue, Stream } from "effect"
import { type ClientError, clientError, ClientClosed, CoordinatorLost } from "../src/ClientError.ts"
import { ClientMetrics } from "../src/index.ts"
import { Recorder } from "../src/ClientMetrics.ts"
import { Batched, type BatchSink, PendingRequests, Single, Streamed } from "../src/PendingRequests.ts"
import type { Reply, StreamEvent } from "../src/Reply.ts"

const registry = Effect.map(Effect.context<never>(), (context) => new PendingRequests(new Recorder(context)))

const reply = (n: number): Reply => ({ latency: 0.5, n })

const noCancel = { cancel: () => {} }

const count = (metric: Metric.Metric<number, { readonly count: number }>) => Effect.map(Metric.value(metric), (s) => s.count)

describe("PendingRequests", () => {
  it.effect("an id leaves once: take, complete; a second take finds nothing", () =>
    Effect.gen(function*() {
      const pending = yield* registry
      const entry = new Single(noCancel, 0, performance.now())
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
      const entry = new Single(noCancel, 4, 0)
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
      yield* new Single({ cancel: (id) => cancelled.push(id) }, 9, 0)
      expect(cancelled).toEqual([9])
    }))

  it.effect("a streamed entry gets Tokens in order, then Final, then the end", () =>
    Effect.gen(function*() {
      const pending = yield* registry
      const events = yield* Stream.runCollect(
        Stream.callback<StreamEvent, ClientError>((queue) =>
          Effect.sync(() => {
            const entry = new Streamed(2, performance.now(), queue)
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
      const entry = new Single(noCancel, 1, 0)
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
      pending.add(new Batched(sink, 0, 10, 0))
      pending.add(new Batched(sink, 1, 11, 0))
      pending.add(new Batched(other, 0, 12, 0))
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
      const single = new Single(noCancel, 0, 0)
      single.timer = setTimeout(() => expect.unreachable("the timer is cleared"), 50)
      const failed: Array<string> = []
      const queue = yield* Queue.make<StreamEvent, ClientError | Cause.Done>()
      pending.add(single)
      pending.add(new Streamed(1, 0, queue))
      pending.add(new Batched({ completed: () => {}, failed: (_, e) => failed.push(e.reason._tag) }, 0, 2, 0))
      pending.failAll(lost)
      expect(pending.size).toBe(0)
      expect(single.exit).toEqual(Exit.fail(lost))
      expect(failed).toEqual(["CoordinatorLost"])
      expect(yield* Effect.flip(Queue.take(queue))).toBe(lost)
      expect(yield* count(ClientMetrics.failed)).toBe(3)
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 80)))
    }).pipe(TestSupport.withRegistry))
})
