import { Cause, Data, Effect, Exit, Schema } from "effect"

// Schema-backed tagged error (yieldable, serializable). NOT Schema.TaggedErrorClass (doesn't exist).
class NotFound extends Schema.TaggedError<NotFound>()("NotFound", { id: Schema.Number }) {}

// Plain (non-schema) tagged error
class Timeout extends Data.TaggedError("Timeout")<{ readonly ms: number }> {}

// Reason-style error, modelled on effect/src/rpc/RpcClientError.ts:
//   small Schema.Error classes with `_tag: Schema.tag(...)` and their own `message`,
//   a wrapper whose `reason` is Schema.Union([...]) and whose `message` getter is derived.
class ConnectFailed extends Schema.Error<ConnectFailed>("mcore/ConnectFailed")({
  _tag: Schema.tag("ConnectFailed"),
  endpoint: Schema.String,
  cause: Schema.Defect()
}) {
  override get message() { return `connect to ${this.endpoint} failed` }
}
class Closed extends Schema.TaggedError<Closed>()("Closed", { code: Schema.Number }) {
  override get message() { return `socket closed (${this.code})` }
}
class TransportError extends Schema.TaggedError<TransportError>()("TransportError", {
  reason: Schema.Union([ConnectFailed, Closed])
}) {
  override get message(): string { return `${this.reason._tag}: ${this.reason.message}` }
}

const find = (id: number): Effect.Effect<string, NotFound | Timeout> =>
  id === 1 ? Effect.succeed("one") : id === 2 ? Effect.fail(new Timeout({ ms: 5 })) : Effect.fail(new NotFound({ id }))

const main = Effect.gen(function*() {
  // catchTag: narrow one tag (also accepts an array of tags)
  const a = yield* find(3).pipe(Effect.catchTag("NotFound", (e) => Effect.succeed(`nf ${e.id}`)))
  // catchTags: several at once
  const b = yield* find(2).pipe(Effect.catchTags({ Timeout: (e) => Effect.succeed(`to ${e.ms}`), NotFound: () => Effect.succeed("nf") }))
  // Effect.catch = Effect 3's catchAll
  const c = yield* find(3).pipe(Effect.catch((e) => Effect.succeed(e._tag)))
  // mapError
  const d = yield* find(3).pipe(Effect.mapError((e) => e._tag), Effect.flip)
  // reason errors
  const err = new TransportError({ reason: new Closed({ code: 1006 }) })
  console.log(err.message, err instanceof Error, err._tag)
  const e = yield* Effect.fail(err).pipe(
    Effect.catchReason("TransportError", "Closed", (r) => Effect.succeed(`closed ${r.code}`))
  )
  const f = yield* Effect.fail(new TransportError({ reason: new ConnectFailed({ endpoint: "tcp://x", cause: new Error("ECONNREFUSED") }) })).pipe(
    Effect.unwrapReason("TransportError"),            // reason moves into the error channel
    Effect.catchTag("ConnectFailed", (r) => Effect.succeed(r.message))
  )
  return [a, b, c, d, e, f]
})

Effect.runPromise(main).then(console.log)

// orDie / die: defects, not typed errors
const dead = find(3).pipe(Effect.orDie)             // Effect<string, never>
const dead2 = Effect.die(new Error("bug"))          // Effect<never>
Effect.runPromiseExit(dead).then((exit) => {
  console.log(Exit.isFailure(exit), Exit.isFailure(exit) && Cause.hasDies(exit.cause))
})
Effect.runPromiseExit(dead2).then((exit) => console.log(Exit.isFailure(exit) ? Cause.pretty(exit.cause).split("\n")[0] : "ok"))
