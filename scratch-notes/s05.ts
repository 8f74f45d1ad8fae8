import { Cause, Deferred, Effect, Exit, Fiber, Latch, Queue, Ref, Semaphore } from "effect"

const deferred = Effect.gen(function*() {
  const d = yield* Deferred.make<number, string>()
  const waiter = yield* Effect.forkChild(Deferred.await(d))
  yield* Deferred.succeed(d, 1)                         // returns Effect<boolean> (false if already done)
  const v = yield* Fiber.join(waiter)

  const d2 = yield* Deferred.make<number, string>()
  yield* Deferred.fail(d2, "nope")
  const e = yield* Effect.flip(Deferred.await(d2))

  // Complete from outside the runtime (callbacks, event emitters): Deferred.doneUnsafe with an Exit
  const d3 = Deferred.makeUnsafe<number, string>()
  setTimeout(() => Deferred.doneUnsafe(d3, Exit.succeed(3)), 1)
  const v3 = yield* Deferred.await(d3)
  return { v, e, v3 }
})

const queue = Effect.gen(function*() {
  const q = yield* Queue.bounded<number>(2)             // offer suspends when full; also Queue.sliding/dropping
  yield* Queue.offer(q, 1)
  yield* Queue.offerAll(q, [2])
  const full = Queue.offerUnsafe(q, 3)                  // sync; false when full
  const one = yield* Queue.take(q)
  const rest = yield* Queue.takeAll(q)                  // waits for >= 1 item; NonEmptyArray
  const polled = yield* Queue.poll(q)                   // Option, never waits

  // A queue that "ends": error type includes Cause.Done
  const u = yield* Queue.unbounded<string, Cause.Done>()
  Queue.offerUnsafe(u, "a")
  yield* Queue.end(u)                                   // (Queue.endUnsafe outside Effect)
  const all = yield* Queue.collect(u)                   // drains until Done -> ["a"]
  const afterEnd = yield* Queue.take(u).pipe(Effect.flip) // fails with Cause.Done once drained

  // Typed failure propagated to takers
  const f = yield* Queue.unbounded<number, string>()
  yield* Queue.fail(f, "broken")
  const ferr = yield* Effect.flip(Queue.take(f))

  const s = yield* Queue.bounded<number>(2)
  yield* Queue.offer(s, 1)
  yield* Queue.shutdown(s)                              // discards buffer; takers are interrupted
  const shut = yield* Effect.exit(Queue.take(s))
  return { full, one, rest, polled, all, afterEnd: Cause.isDone(afterEnd), ferr, shutInterrupted: Exit.isFailure(shut) && Cause.hasInterruptsOnly(shut.cause) }
})

const misc = Effect.gen(function*() {
  const ref = yield* Ref.make(0)
  yield* Ref.update(ref, (n) => n + 1)
  const got = yield* Ref.modify(ref, (n) => [`was ${n}`, n * 10] as const)
  const now = yield* Ref.get(ref)

  // Latch (was Effect.makeLatch in 3.x): closed latch blocks `await` / `whenOpen` until opened
  const latch = yield* Latch.make(false)
  const f = yield* Effect.forkChild(latch.await.pipe(Effect.as("released")))
  yield* latch.open                                     // also Latch.open(latch), latch.openUnsafe()
  const l = yield* Fiber.join(f)

  // Semaphore module (was Effect.makeSemaphore in 3.x)
  const sem = yield* Semaphore.make(2)
  const results = yield* Effect.all([1, 2, 3].map((i) => sem.withPermits(1)(Effect.succeed(i))), { concurrency: "unbounded" })
  const one = yield* sem.withPermit(Effect.succeed("one"))
  const two = yield* Semaphore.withPermits(sem, 2)(Effect.succeed("two"))
  return { got, now, l, results, one, two }
})

Effect.runPromise(Effect.all([deferred, queue, misc])).then((r) => console.dir(r, { depth: 5 }))
