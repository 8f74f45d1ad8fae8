import { Context, Effect, Layer } from "effect"

// (a) Shape given explicitly; layer built inline
export class Clock2 extends Context.Service<Clock2, {
  readonly now: Effect.Effect<number>
}>()("mcore/Clock2") {
  static readonly layer = Layer.succeed(Clock2, Clock2.of({ now: Effect.succeed(42) }))
}

// (b) Shape inferred from `make`; make may use Scope (acquireRelease) and other services
export class Pool extends Context.Service<Pool>()("mcore/Pool", {
  make: Effect.gen(function*() {
    const clock = yield* Clock2
    const conn = yield* Effect.acquireRelease(
      Effect.sync(() => ({ open: true })),
      (c) => Effect.sync(() => { c.open = false; console.log("pool closed") })
    )
    const query = Effect.fn("Pool.query")(function*(sql: string) {
      const t = yield* clock.now
      return `${sql}@${t} open=${conn.open}`
    })
    return { query } as const
  })
}) {
  // Layer.effect excludes Scope from R: finalizers run when the layer is released (no Layer.scoped in 4.x)
  static readonly layerNoDeps = Layer.effect(this, this.make)
  static readonly layer = this.layerNoDeps.pipe(Layer.provide(Clock2.layer))
}

const program = Effect.gen(function*() {
  const pool = yield* Pool           // access via yield*
  return yield* pool.query("select 1")
})

const viaUse = Pool.use((p) => p.query("select 2"))  // shorthand accessor

const main = Effect.gen(function*() {
  console.log(yield* program)
  console.log(yield* viaUse)
}).pipe(Effect.provide(Pool.layer))

// Provide a plain value directly
const direct = program.pipe(
  Effect.provide(Pool.layerNoDeps),
  Effect.provideService(Clock2, { now: Effect.succeed(7) })
)

Effect.runPromise(main).then(() => Effect.runPromise(direct)).then(console.log)
type PoolShape = Pool["Service"]
const _x: PoolShape["query"] = (s) => Effect.succeed(s)
