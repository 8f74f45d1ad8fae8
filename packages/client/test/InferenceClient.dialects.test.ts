/**
 * The client in each Megatron-LM dialect, over a real ZeroMQ socket on loopback, against a stub
 * coordinator that decodes and answers in the same dialect: its messages are one frame where the
 * dialect's are, replies and partials in that framing reach their requests, and what the dialect
 * lacks is refused before anything is sent (an interrupted request on a dialect without ABORT
 * sends nothing).
 */
import { describe, expect, it } from "@effect/vitest"
import { Dialects } from "@mcore-effect/protocol"
import { TestSupport } from "@mcore-effect/testkit"
import { Effect, Exit, Fiber, Result, Scope, Stream } from "effect"
import { InferenceClient } from "../src/index.ts"
import * as StubCoordinator from "./support/StubCoordinator.ts"

const { withRegistry } = TestSupport

const { nextMessage, tagOf } = StubCoordinator

/** The request id a received message carries. */
const idOf = (received: StubCoordinator.Received): number =>
  (received.message as Result.Success<{ readonly requestId: number }, unknown>).success.requestId

const reasonOf = <A>(effect: Effect.Effect<A, { readonly reason: { readonly _tag: string; readonly error?: { readonly reason: { readonly _tag: string } } } }>) =>
  Effect.flip(effect).pipe(Effect.map((e) => e.reason.error?.reason._tag ?? e.reason._tag))

describe("InferenceClient in Megatron-LM's dialects", () => {
  it.live("main: one frame each way; a reply and a stream's partials reach their requests", () =>
    Effect.gen(function*() {
      const dialect = Dialects.get("main")
      const stub = yield* StubCoordinator.make({ dialect })
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const connect = yield* stub.take
      expect(connect.frames.map((f) => f.toString("hex"))).toEqual(["9100"])

      const submitted = yield* Effect.forkChild(client.submit("Hello", { num_tokens_to_generate: 2 }))
      const submit = yield* nextMessage(stub)
      expect([tagOf(submit), submit.frames.length]).toEqual(["SubmitRequest", 1])
      const id = (submit.message as Result.Success<{ readonly requestId: number }, unknown>).success.requestId
      yield* stub.reply(submit.identity, id, { request_id: 9, generated_tokens: [7, 8], status: "COMPLETED" })
      const reply = yield* Fiber.join(submitted)
      expect(reply.generated_tokens).toEqual([7, 8])

      const streamed = yield* Effect.forkChild(Stream.runCollect(client.stream([1, 2, 3], { num_tokens_to_generate: 2 })))
      const stream = yield* nextMessage(stub)
      const streamId = (stream.message as Result.Success<{ readonly requestId: number }, unknown>).success.requestId
      yield* stub.partial(stream.identity, streamId, [5])
      yield* stub.partial(stream.identity, streamId, [6])
      yield* stub.reply(stream.identity, streamId, { request_id: 10, generated_tokens: [5, 6], status: "COMPLETED" })
      const events = yield* Fiber.join(streamed)
      expect(events.map((e) => e._tag)).toEqual(["Tokens", "Tokens", "Final"])
    }).pipe(Effect.scoped, withRegistry))

  it.live("core_v0.19: streams, aborts, KV hand-offs and media are refused, nothing sent; an interrupted submit sends no ABORT", () =>
    Effect.gen(function*() {
      const dialect = Dialects.get("core_v0.19")
      const stub = yield* StubCoordinator.make({ dialect })
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      yield* stub.take
      expect([client.dialect.name, client.dialect.features.has("media")]).toEqual(["core_v0.19", false])

      const refused = [
        yield* reasonOf(Stream.runDrain(client.stream("x"))),
        yield* reasonOf(client.abort(0)),
        yield* reasonOf(client.submitWithKvHandoff([1, 2], undefined, { agent: "p" }, [0])),
        yield* reasonOf(client.submit("x", undefined, { multiModalData: { image: new Uint8Array([1]) } })),
        yield* reasonOf(client.releaseKvHandoff(0))
      ]
      expect(refused).toEqual(Array(5).fill("UnsupportedByDialect"))

      const fiber = yield* Effect.forkChild(client.submit("Hello", { num_tokens_to_generate: 4 }))
      const submit = yield* nextMessage(stub)
      expect([tagOf(submit), submit.frames.length]).toEqual(["SubmitRequest", 1])
      yield* Fiber.interrupt(fiber)
      // The next message the stub sees is this PAUSE: no ABORT_REQUEST (header 23 would kill a
      // core_v0.19 coordinator) and nothing of the refused calls went before it.
      yield* client.pauseEngines()
      expect(tagOf(yield* nextMessage(stub))).toBe("Pause")
      expect(yield* client.pendingCount).toBe(0)
      // The engine runs it to its end; its reply is for an id no longer pending here (dropped).
      yield* stub.reply(submit.identity, idOf(submit), { request_id: 0, generated_tokens: [1, 2, 3, 4] })
    }).pipe(Effect.scoped, withRegistry))

  it.live("main: closing with a request in flight aborts it and waits for its reply, which reaches a client still connected", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make({ dialect: Dialects.get("main"), mandatory: true })
      const scope = yield* Scope.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol, drainTimeout: "1 minute" }).pipe(
        Scope.provide(scope)
      )
      yield* stub.take
      const waiter = yield* Effect.forkChild(reasonOf(client.submit("Hello", { num_tokens_to_generate: 1000 })))
      const submit = yield* nextMessage(stub)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      expect(yield* Fiber.join(waiter)).toBe("ClientClosed")
      const abort = yield* nextMessage(stub)
      expect([tagOf(abort), idOf(abort)]).toEqual(["AbortRequest", idOf(submit)])
      expect(closing.pollUnsafe()).toBeUndefined()
      // Megatron's engine ends an aborted request at its next step and replies.
      yield* stub.reply(submit.identity, idOf(submit), { request_id: 3, generated_tokens: [1], status: "FAILED" })
      yield* Fiber.join(closing)
      expect(yield* stub.undelivered).toBe(0)
    }).pipe(Effect.scoped, withRegistry))

  it.live("core_v0.19: closing waits for the replies still owed, an interrupted request's too (no ABORT there)", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make({ dialect: Dialects.get("core_v0.19"), mandatory: true })
      const scope = yield* Scope.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol, drainTimeout: "1 minute" })
        .pipe(Scope.provide(scope))
      yield* stub.take
      const interrupted = yield* Effect.forkChild(client.submit("one", { num_tokens_to_generate: 8 }))
      const first = yield* nextMessage(stub)
      yield* Fiber.interrupt(interrupted)
      const waiter = yield* Effect.forkChild(reasonOf(client.submit("two", { num_tokens_to_generate: 8 })))
      const second = yield* nextMessage(stub)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      expect(yield* Fiber.join(waiter)).toBe("ClientClosed")
      yield* stub.reply(second.identity, idOf(second), { request_id: 1, generated_tokens: [2] })
      yield* Effect.sleep("100 millis")
      expect(closing.pollUnsafe()).toBeUndefined()
      yield* stub.reply(first.identity, idOf(first), { request_id: 0, generated_tokens: [1] })
      yield* Fiber.join(closing)
      expect(yield* stub.undelivered).toBe(0)
      // Nothing but the two submissions went out: no ABORT (it would kill this coordinator).
      expect((yield* stub.drain).map(tagOf)).toEqual([])
    }).pipe(Effect.scoped, withRegistry))

  it.live("core_v0.19: past drainTimeout the client warns and closes", () =>
    TestSupport.withLogs((lines) =>
      Effect.gen(function*() {
        const stub = yield* StubCoordinator.make({ dialect: Dialects.get("core_v0.19") })
        const scope = yield* Scope.make()
        const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol, drainTimeout: "50 millis" })
          .pipe(Scope.provide(scope))
        yield* stub.take
        const waiter = yield* Effect.forkChild(reasonOf(client.submit("x", { num_tokens_to_generate: 8 })))
        yield* nextMessage(stub)
        yield* Scope.close(scope, Exit.void)
        expect(yield* Fiber.join(waiter)).toBe("ClientClosed")
        expect(lines.join("\n")).toMatch(/Warn closing with 1 of 1 request\(s\) still running .* drainTimeout \(50 ms\)/)
      })
    ).pipe(Effect.scoped, withRegistry))

  it.live("core_v0.17: headers from 1, no profiler; the client's block hashes are refused when it is built", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make({ dialect: Dialects.get("core_v0.17") })
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      expect((yield* stub.take).frames.map((f) => f.toString("hex"))).toEqual(["9101"])
      expect(yield* reasonOf(client.startCudaProfiler())).toBe("UnsupportedByDialect")
      yield* client.setGenerationEpoch(3)
      const epoch = yield* nextMessage(stub)
      expect(epoch.frames.map((f) => f.toString("hex"))).toEqual(["920903"])
      const error = yield* Effect.flip(
        Effect.scoped(InferenceClient.make({
          address: stub.address,
          protocol: stub.protocol,
          blockSizeTokens: 16,
          prefixCachingPolicy: "longest_prefix"
        }))
      )
      expect(error.reason).toMatchObject({ _tag: "InvalidArgument", name: "prefixCachingPolicy" })
    }).pipe(Effect.scoped, withRegistry))
})
