import { Effect, Exit, Fiber, FiberMap, FiberSet, Scope } from "effect"

const log: Array<string> = []

// acquireRelease: requires Scope; release runs when the scope closes
const resource = (name: string) =>
  Effect.acquireRelease(
    Effect.sync(() => { log.push(`open ${name}`); return name }),
    (n, exit) => Effect.sync(() => log.push(`close ${n} ${exit._tag}`))
  )

const a = Effect.gen(function*() {
  const r = yield* resource("a")
  yield* Effect.addFinalizer((exit) => Effect.sync(() => log.push(`finalizer ${exit._tag}`)))
  return r
}).pipe(Effect.scoped) // Effect.scoped removes Scope from R and closes it afterwards

// Manual scope: Scope.make / Scope.provide / Scope.close
const b = Effect.gen(function*() {
  const scope = yield* Scope.make()
  yield* resource("b").pipe(Scope.provide(scope))
  yield* Scope.close(scope, Exit.void)
})

// Forking: forkChild (= 3.x fork), forkDetach (= 3.x forkDaemon), forkScoped, forkIn
const c = Effect.gen(function*() {
  const child = yield* Effect.forkChild(Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => log.push("child interrupted")))))
  yield* Effect.yieldNow
  yield* Fiber.interrupt(child)
  const joined = yield* Fiber.join(yield* Effect.forkChild(Effect.succeed(5)))
  log.push(`joined ${joined}`)

  yield* Effect.scoped(Effect.gen(function*() {
    // lives until the enclosing Scope closes
    yield* Effect.forkScoped(Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => log.push("scoped fiber interrupted")))))
    yield* Effect.yieldNow
  }))

  const scope = yield* Scope.make()
  yield* Effect.forkIn(Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => log.push("forkIn fiber interrupted")))), scope)
  yield* Effect.yieldNow
  yield* Scope.close(scope, Exit.void)

  // detached: not interrupted when parent ends
  const d = yield* Effect.forkDetach(Effect.sleep("10 millis").pipe(Effect.as("daemon done")))
  log.push(yield* Fiber.join(d))
})

// FiberSet / FiberMap: scoped collections of fibers; all interrupted when their scope closes
const d = Effect.gen(function*() {
  const set = yield* FiberSet.make<void>()
  yield* FiberSet.run(set, Effect.never)
  yield* FiberSet.run(set)(Effect.never)          // curried form
  log.push(`set size ${yield* FiberSet.size(set)}`)

  const map = yield* FiberMap.make<string>()
  yield* FiberMap.run(map, "k", Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => log.push("k replaced")))))
  yield* Effect.yieldNow
  yield* FiberMap.run(map, "k", Effect.never)    // same key: previous fiber is interrupted
  yield* Effect.yieldNow
  yield* FiberMap.remove(map, "k")
  log.push(`map size ${yield* FiberMap.size(map)}`)
}).pipe(Effect.scoped)

Effect.runPromise(Effect.all([a, b, c, d], { discard: true })).then(() => console.log(log))
