import { Cause, Effect, Queue, Schema, Stream } from "effect"

class StreamBroke extends Schema.TaggedError<StreamBroke>()("StreamBroke", { message: Schema.String }) {}
const log: Array<string> = []

// Stream.callback (3.x: Stream.async / asyncPush). The callback gets a Queue<A, E | Cause.Done>.
// It runs in a Scope that closes when the stream ends or the consumer stops -> register cleanup there.
const ticks = Stream.callback<number, StreamBroke>((queue) =>
  Effect.gen(function*() {
    let i = 0
    const timer = setInterval(() => {
      i++
      if (i <= 5) Queue.offerUnsafe(queue, i)
      else if (i === 6) Queue.failCauseUnsafe(queue, Cause.fail(new StreamBroke({ message: "source died" })))
    }, 1)
    yield* Effect.addFinalizer(() => Effect.sync(() => { clearInterval(timer); log.push("callback cleanup") }))
  })
)

// Ending normally: Queue.end / Queue.endUnsafe. Typed error: Queue.fail(queue, e) / Queue.failCauseUnsafe.
const finite = Stream.callback<string>((queue) =>
  Effect.sync(() => { Queue.offerUnsafe(queue, "x"); Queue.endUnsafe(queue) }))

const program = Effect.gen(function*() {
  // consumer stops early (take) -> callback scope closes -> finalizers run
  const firstTwo = yield* ticks.pipe(
    Stream.ensuring(Effect.sync(() => log.push("ensuring ran"))),
    Stream.onExit((exit) => Effect.sync(() => log.push(`onExit ${exit._tag}`))),
    Stream.take(2),
    Stream.runCollect                       // Effect<Array<A>, E> (plain Array in 4.x, not Chunk)
  )
  // running to the end surfaces the typed error
  const err = yield* ticks.pipe(Stream.runCollect, Effect.flip)
  const xs = yield* Stream.runCollect(finite)

  // fromQueue: Cause.Done in the queue's E means "end of stream" and is removed from the stream's E
  const q = yield* Queue.bounded<number, Cause.Done>(8)
  yield* Queue.offerAll(q, [1, 2, 3])
  yield* Queue.end(q)
  const fromQ = yield* Stream.runCollect(Stream.fromQueue(q))

  const mapped = yield* Stream.range(1, 5).pipe(
    Stream.mapEffect((n) => Effect.succeed(n * 2), { concurrency: 2 }),
    Stream.filter((n) => n > 4),
    Stream.runFold(() => 0, (acc, n) => acc + n)
  )
  return { firstTwo, err: err.message, xs, fromQ, mapped }
})

Effect.runPromise(program).then(async (r) => {
  console.log(r, log)
  // Web ReadableStream bridge
  const rs = Stream.toReadableStream(Stream.make(1, 2, 3))
  const out: Array<number> = []
  for await (const x of rs) out.push(x)
  const back = await Effect.runPromise(Stream.runCollect(Stream.fromReadableStream({ evaluate: () => Stream.toReadableStream(Stream.make("a")), onError: (e) => new StreamBroke({ message: String(e) }) })))
  const asyncIter = await Effect.runPromise(Stream.runCollect(Stream.fromAsyncIterable((async function*() { yield 1; yield 2 })(), (e) => e)))
  console.log(out, back, asyncIter)
})
