import { Effect, Schema, Tracer } from "effect"

class Boom extends Schema.TaggedError<Boom>()("Boom", { message: Schema.String }) {}

// Effect.fn: traced function (creates span "user.load"); extra args are pipeline steps (don't .pipe it)
const loadUser = Effect.fn("user.load")(
  function*(id: number): Effect.fn.Return<string, Boom> {
    yield* Effect.annotateCurrentSpan("user.id", id)          // attribute on current span
    yield* Effect.annotateCurrentSpan({ "a": 1, "b": "x" })    // record form
    if (id < 0) return yield* new Boom({ message: "neg" })     // yield* an error instance fails
    return `user-${id}`
  },
  Effect.tapError((e) => Effect.logWarning("load failed", e.message)) // steps wrap the body (inside the span)
)

// Effect.fnUntraced: same generator ergonomics, no span / no stack capture
const double = Effect.fnUntraced(function*(n: number) { return n * 2 })

// Effect.fn without a name is also allowed (no span)
const noName = Effect.fn(function*(n: number) { return n + 1 })

const spans: Array<Tracer.NativeSpan> = []
const tracer = Tracer.make({ span(o) { const s = new Tracer.NativeSpan(o); spans.push(s); return s } })

const program = Effect.gen(function*() {
  const u = yield* loadUser(1)
  const d = yield* double(21)
  const n = yield* noName(1)
  const r = yield* Effect.succeed(1).pipe(Effect.withSpan("manual", { attributes: { k: "v" } }))
  return [u, d, n, r]
})

Effect.runPromise(program.pipe(Effect.provideService(Tracer.Tracer, tracer))).then((r) => {
  console.log(r)
  for (const s of spans) console.log(s.name, Object.fromEntries(s.attributes))
})
