/**
 * The client against a coordinator that does exactly what each test says: handshake failures,
 * aborts and late replies, garbage on the wire, a coordinator that disappears. Real ZeroMQ
 * sockets on loopback.
 */
import { describe, expect, it } from "@effect/vitest"
import { Msgpack, SamplingParams } from "@mcore-effect/protocol"
import { TestSupport } from "@mcore-effect/testkit"
import { Effect, Exit, Fiber, Metric, References, Result, Scope, Stream } from "effect"
import { type ClientError, ClientMetrics, InferenceClient } from "../src/index.ts"
import * as StubCoordinator from "./support/StubCoordinator.ts"

const { withRegistry } = TestSupport

/** Bytes written as hex, spaces allowed. */
const hex = (h: string) => Buffer.from(h.replace(/ /g, ""), "hex")

/** Messages the client dropped, for one reason. */
const dropped = (reason: "malformed" | "unknown_request") =>
  Metric.value(Metric.withAttributes(ClientMetrics.messagesDropped, { reason }))

/** Warnings off: the test sends what the client warns about. */
const quiet = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provideService(effect, References.MinimumLogLevel, "Error")

const { nextMessage: takeMessage, tagOf } = StubCoordinator

/** Every message up to and including the next PAUSE (the test's end-of-sequence marker). */
const takeUntilPause = (stub: StubCoordinator.StubCoordinator) =>
  Effect.gen(function*() {
    const out: Array<StubCoordinator.Received> = []
    for (;;) {
      const received = yield* takeMessage(stub)
      out.push(received)
      if (tagOf(received) === "Pause") return out
    }
  })

const reasonOf = <A>(effect: Effect.Effect<A, { readonly reason: { readonly _tag: string } }>) =>
  Effect.flip(effect).pipe(Effect.map((error) => error.reason._tag))

describe("InferenceClient against a stub coordinator", () => {
  it.live("says CONNECT first and is ready at CONNECT_ACK", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const first = yield* stub.take
      expect(first.frames.map((f) => [...f])).toEqual([[0x91, 0x00]])
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(withRegistry))

  it.live("fails with ConnectTimeout when nobody acknowledges", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make({ ack: false })
      // Long enough for the socket's events (their own path, slower under load) to say what it saw.
      const error = yield* Effect.flip(Effect.scoped(InferenceClient.make({ address: stub.address, protocol: stub.protocol, connectTimeout: 1_000 })))
      expect(error.reason._tag).toBe("ConnectTimeout")
      expect(error.reason).toMatchObject({ seen: "connected" })
      expect(error.message).toContain(stub.address)
    }).pipe(withRegistry))

  it.live("ConnectTimeout says when the address refused the connection", () =>
    Effect.gen(function*() {
      // Nothing listens there, so every attempt is refused.
      const address = yield* TestSupport.refusedAddress
      const error = yield* Effect.flip(Effect.scoped(InferenceClient.make({ address, protocol: "reference", connectTimeout: 300 })))
      expect(error.reason).toMatchObject({ _tag: "ConnectTimeout", seen: "refused" })
      expect(error.message).toContain("refused")
    }).pipe(withRegistry))

  it.live("fails with HandshakeRejected when anything but CONNECT_ACK answers", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make({ ack: false })
      const fiber = yield* Effect.forkChild(Effect.scoped(InferenceClient.make({ address: stub.address, protocol: stub.protocol })))
      const connect = yield* stub.take
      yield* stub.send(connect.identity, [Msgpack.encode([40])])
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error.reason._tag).toBe("HandshakeRejected")
    }).pipe(withRegistry))

  it.live("fails with HandshakeRejected on garbage instead of CONNECT_ACK", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make({ ack: false })
      const fiber = yield* Effect.forkChild(Effect.scoped(InferenceClient.make({ address: stub.address, protocol: stub.protocol })))
      const connect = yield* stub.take
      yield* stub.send(connect.identity, [Buffer.from([0xc1, 0xff])])
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error.reason._tag).toBe("HandshakeRejected")
    }).pipe(withRegistry))

  it.live("fails with InvalidAddress for an address ZeroMQ refuses", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.scoped(InferenceClient.make({ address: "nowhere", protocol: "main" })))
      expect(error.reason._tag).toBe("InvalidAddress")
    }).pipe(withRegistry))

  it.live("sends nothing for a refused request and does not spend its id", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      expect(yield* reasonOf(client.submit([1, -2, 3]))).toBe("InvalidRequest")
      expect(yield* reasonOf(client.submit(""))).toBe("InvalidRequest")
      expect(yield* reasonOf(client.submit([]))).toBe("InvalidRequest")
      expect(yield* reasonOf(client.submit("x", { top_p: 7 }))).toBe("InvalidRequest")
      expect(yield* reasonOf(client.submit("x", {}, { multiModalData: { audio: new Uint8Array(1) } as never })))
        .toBe("InvalidRequest")
      expect(yield* reasonOf(client.submit("x", {}, { offloadParams: { f: () => 1 } }))).toBe("InvalidRequest")
      expect(yield* reasonOf(client.submitWithKvHandoff([1], {}, [] as never, [0]))).toBe("InvalidRequest")
      expect(yield* reasonOf(client.abort(-1))).toBe("InvalidArgument")
      expect(yield* reasonOf(client.setGenerationEpoch(1.5))).toBe("InvalidArgument")
      expect(yield* reasonOf(client.setGenerationEpoch(-1))).toBe("InvalidArgument")
      expect(yield* client.pendingCount).toBe(0)
      const { requestId } = yield* client.submitWithId("ok")
      expect(requestId).toBe(0)
      // The single writer keeps order: had anything been sent for the refused ones, it would come first.
      const next = yield* takeMessage(stub)
      expect(tagOf(next)).toBe("SubmitRequest")
      expect(next.frames.length).toBe(5)
    }).pipe(withRegistry))

  it.live("refuses an unknown sampling parameter, naming it, with nothing sent; extra goes on the wire on purpose", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const refusal = <A>(effect: Effect.Effect<A, ClientError.ClientError>) =>
        Effect.flip(effect).pipe(Effect.map((error) =>
          error.reason._tag === "InvalidRequest" ? error.reason.error.reason : error.reason
        ))
      // @ts-expect-error: a typo does not compile
      const typo = yield* refusal(client.submit("x", { temprature: 0.5 }))
      expect(typo).toMatchObject({ _tag: "UnknownSamplingParam", field: "temprature", didYouMean: "temperature" })
      // @ts-expect-error: OpenAI's name
      expect(yield* refusal(client.submitWithId("x", { max_tokens: 16 })))
        .toMatchObject({ _tag: "UnknownSamplingParam", field: "max_tokens", didYouMean: "num_tokens_to_generate" })
      // Untyped input (JSON from elsewhere) is refused the same way, through every entry point.
      const untyped = JSON.parse("{\"temperature\": 0.5, \"seed\": 7}")
      expect(yield* refusal(Stream.runDrain(client.stream("x", untyped))))
        .toMatchObject({ _tag: "UnknownSamplingParam", field: "seed", didYouMean: null })
      expect(yield* refusal(client.submitWithKvHandoff([1], untyped, { agent: "p" }, [0])))
        .toMatchObject({ _tag: "UnknownSamplingParam", field: "seed" })
      expect(yield* refusal(Stream.runDrain(client.submitAll([{ prompt: "y", samplingParams: untyped }, { prompt: "x" }]))))
        .toMatchObject({ _tag: "UnknownSamplingParam", field: "seed" })
      // A known field in extra collides: set it at the top level.
      expect(yield* refusal(client.submit("x", { extra: { temperature: 0.5 } })))
        .toMatchObject({ _tag: "InvalidSamplingParams", field: "extra.temperature" })
      expect(yield* client.pendingCount).toBe(0)

      const { requestId } = yield* client.submitWithId("ok", {
        temperature: 1,
        num_tokens_to_generate: 4,
        extra: { seed: 7, eod_id: 153, meta: { a: [1, "x"] } }
      })
      expect(requestId).toBe(0)
      // The single writer keeps order: had anything been sent for the refused ones, it would come first.
      const next = yield* takeMessage(stub)
      expect(tagOf(next)).toBe("SubmitRequest")
      const last = Msgpack.decode(next.frames[0]!) as [number, number, Record<string, unknown>, unknown]
      const params = last[2]
      expect(Object.keys(params)).toEqual([...Object.keys(SamplingParams.defaults), "seed", "eod_id", "meta"])
      expect(params).toMatchObject({ temperature: 1, num_tokens_to_generate: 4, seed: 7, eod_id: 153, meta: { a: [1, "x"] } })
      expect(params).not.toHaveProperty("extra")
      // Python-exact: temperature 1 stays a float64 (cb 3ff0...); the extras' whole numbers are integers.
      const frame = next.frames[0]!.toString("hex")
      expect(frame).toContain(Buffer.from("\xabtemperature\xcb\x3f\xf0", "latin1").toString("hex"))
      expect(frame).toContain(Buffer.from("\xa4seed\x07\xa6eod_id\xcc\x99", "latin1").toString("hex"))
    }).pipe(withRegistry))

  it.live("a burst from many fibers reaches the coordinator complete and in id order", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const count = 3_000
      const burst = yield* Effect.forkChild(
        Effect.forEach(Array.from({ length: count }, (_, i) => i), (i) => client.submit([i]), {
          concurrency: "unbounded",
          discard: true
        })
      )
      const ids: Array<number> = []
      let inOrder = true
      while (ids.length < count) {
        const received = yield* takeMessage(stub)
        const message = Result.getOrThrow(received.message)
        if (message._tag !== "SubmitRequest") continue
        if (ids.length > 0 && message.requestId !== ids[ids.length - 1]! + 1) inOrder = false
        ids.push(message.requestId)
        // Each fiber submitted its own index as the prompt: the frames stayed together.
        if ((message.prompt as ReadonlyArray<number>).length !== 1) inOrder = false
        yield* stub.reply(received.identity, message.requestId, { request_id: message.requestId })
      }
      yield* Fiber.join(burst)
      expect(inOrder).toBe(true)
      expect(ids[0]).toBe(0)
      expect(ids[count - 1]).toBe(count - 1)
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(withRegistry))

  it.live("interrupting a submit sends exactly one ABORT and empties the registry; the late reply is dropped", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const fiber = yield* Effect.forkChild(client.submit([1, 2, 3]))
      const submitted = yield* takeMessage(stub)
      expect(tagOf(submitted)).toBe("SubmitRequest")
      expect(yield* client.pendingCount).toBe(1)
      yield* Fiber.interrupt(fiber)
      expect(yield* client.pendingCount).toBe(0)
      yield* client.pauseEngines()
      const sent = yield* takeUntilPause(stub)
      expect(sent.map(tagOf)).toEqual(["AbortRequest", "Pause"])
      expect(Result.getOrThrow(sent[0]!.message)).toEqual({ _tag: "AbortRequest", requestId: 0 })

      // The engine finishes anyway: the reply is dropped and counted, and the next request is unaffected.
      yield* stub.reply(submitted.identity, 0, { request_id: 0, status: "COMPLETED" })
      const next = yield* Effect.forkChild(client.submit("next"))
      const nextSubmit = yield* takeMessage(stub)
      yield* stub.reply(nextSubmit.identity, 1, { request_id: 1, status: "COMPLETED", generated_length: 3 })
      const reply = yield* Fiber.join(next)
      expect(reply.request_id).toBe(1)
      expect((yield* Metric.value(Metric.withAttributes(ClientMetrics.messagesDropped, { reason: "unknown_request" })))
        .count).toBe(1)
      expect((yield* Metric.value(ClientMetrics.aborted)).count).toBe(1)
      expect((yield* Metric.value(ClientMetrics.completed)).count).toBe(1)
      expect((yield* Metric.value(ClientMetrics.inFlight)).value).toBe(0)
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(withRegistry))

  it.live("abort(id) ends the waiting submit with RequestAborted and sends one ABORT", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const { reply, requestId } = yield* client.submitWithId("hello")
      const waiting = yield* Effect.forkChild(reply)
      yield* client.abort(requestId)
      const error = yield* Effect.flip(Fiber.join(waiting))
      expect(error.reason).toMatchObject({ _tag: "RequestAborted", requestId })
      yield* client.pauseEngines()
      expect((yield* takeUntilPause(stub)).map(tagOf)).toEqual(["SubmitRequest", "AbortRequest", "Pause"])
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(withRegistry))

  it.live("ending a stream early sends exactly one ABORT", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const fiber = yield* Effect.forkChild(client.stream([5, 6]).pipe(Stream.take(1), Stream.runCollect))
      const submitted = yield* takeMessage(stub)
      yield* stub.partial(submitted.identity, 0, [7])
      const events = yield* Fiber.join(fiber)
      expect(events).toEqual([{ _tag: "Tokens", requestId: 0, newTokens: [7] }])
      yield* client.pauseEngines()
      expect((yield* takeUntilPause(stub)).map(tagOf)).toEqual(["AbortRequest", "Pause"])
      expect(yield* client.pendingCount).toBe(0)
    }).pipe(withRegistry))

  it.live("a stream that reaches its final reply sends no ABORT", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const fiber = yield* Effect.forkChild(Stream.runCollect(client.stream([5, 6], { streaming_interval: 1 })))
      const submitted = yield* takeMessage(stub)
      const message = Result.getOrThrow(submitted.message)
      expect(message._tag === "SubmitRequest" && message.samplingParams.streaming).toBe(true)
      yield* stub.partial(submitted.identity, 0, [7])
      yield* stub.partial(submitted.identity, 0, [8, 9])
      yield* stub.reply(submitted.identity, 0, { request_id: 0, generated_tokens: [7, 8, 9] })
      const events = yield* Fiber.join(fiber)
      expect(events.map((e) => e._tag)).toEqual(["Tokens", "Tokens", "Final"])
      expect(events[1]).toEqual({ _tag: "Tokens", requestId: 0, newTokens: [8, 9] })
      yield* client.pauseEngines()
      expect((yield* takeUntilPause(stub)).map(tagOf)).toEqual(["Pause"])
    }).pipe(withRegistry))

  it.live("a deadline aborts the request and fails it with RequestTimeout", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const error = yield* Effect.flip(client.submit("slow", {}, { timeout: 50 }))
      expect(error.reason).toMatchObject({ _tag: "RequestTimeout", requestId: 0, timeoutMillis: 50 })
      yield* client.pauseEngines()
      expect((yield* takeUntilPause(stub)).map(tagOf)).toEqual(["SubmitRequest", "AbortRequest", "Pause"])
      expect(yield* client.pendingCount).toBe(0)
      expect((yield* Metric.value(ClientMetrics.failed)).count).toBe(1)
    }).pipe(withRegistry))

  it.live("garbage from the coordinator is counted and dropped; requests in flight still complete", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const fiber = yield* Effect.forkChild(client.submit([1, 2]))
      const submitted = yield* takeMessage(stub)
      const garbage: Array<Array<Uint8Array>> = [
        [Buffer.from([0xc1])], // not msgpack
        [Msgpack.encode([99, 0])], // unknown header
        [Msgpack.encode([21, 0])], // a reply without its body
        [Msgpack.encode([21, "zero"]), Msgpack.encode({})], // a request id that is not one
        [Msgpack.encode({ not: "an array" })],
        [Msgpack.encode([22, 0]), Msgpack.encode({ request_id: 0, new_tokens: "seven" })], // a bad partial
        [Msgpack.encode([20, 0])], // a header the coordinator does not send
        [Buffer.alloc(0)]
      ]
      for (const frames of garbage) yield* stub.send(submitted.identity, frames)
      yield* stub.reply(submitted.identity, 0, { request_id: 0, status: "COMPLETED" })
      const reply = yield* Fiber.join(fiber)
      expect(reply.status).toBe("COMPLETED")
      expect((yield* Metric.value(Metric.withAttributes(ClientMetrics.messagesDropped, { reason: "malformed" })))
        .count).toBe(garbage.length)
    }).pipe(withRegistry))

  it.live("a reply whose body is not a reply fails only its own request, with MalformedReply", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol, deserialize: true })
      const first = yield* Effect.forkChild(client.submit("a"))
      const second = yield* Effect.forkChild(client.submit("b"))
      const a = yield* takeMessage(stub)
      yield* takeMessage(stub)
      yield* stub.send(a.identity, [Msgpack.encode([21, 0]), Msgpack.encode([1, 2, 3])])
      yield* stub.reply(a.identity, 1, { request_id: 1, status: "COMPLETED" })
      const error = yield* Effect.flip(Fiber.join(first))
      expect(error.reason).toMatchObject({ _tag: "MalformedReply", requestId: 0 })
      expect((yield* Fiber.join(second)).status).toBe("COMPLETED")
    }).pipe(withRegistry))

  it.live("float ids and float headers, at every width, are counted and dropped; the request completes with its real reply", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const fiber = yield* Effect.forkChild(Stream.runCollect(client.stream([1, 2])))
      const submitted = yield* takeMessage(stub)
      // What a reply or partial for request 0 would be, with the wrong content.
      const wrongReply = Msgpack.encode({ request_id: 0, status: "FAILED", generated_tokens: [666] })
      const wrongPartial = Msgpack.encode({ request_id: 0, new_tokens: [666] })
      const hostile: Array<Array<Uint8Array>> = [
        [hex("92 15 cb 0000000000000000"), wrongReply], // [21, 0.0] float64 id
        [hex("92 15 ca 00000000"), wrongReply], // [21, 0.0] float32 id
        [hex("92 cb 4035000000000000 00"), wrongReply], // [21.0, 0] float64 header
        [hex("92 ca 41a80000 00"), wrongReply], // [21.0, 0] float32 header
        [hex("92 16 cb 0000000000000000"), wrongPartial], // [22, 0.0]
        [hex("92 16 ca 00000000"), wrongPartial],
        [hex("92 cb 4036000000000000 00"), wrongPartial], // [22.0, 0]
        [hex("92 ca 41b00000 00"), wrongPartial]
      ]
      for (const frames of hostile) yield* stub.send(submitted.identity, frames)
      yield* stub.partial(submitted.identity, 0, [7])
      yield* stub.reply(submitted.identity, 0, { request_id: 0, status: "COMPLETED", generated_tokens: [7] })
      const events = yield* Fiber.join(fiber)
      expect(events.map((e) => (e._tag === "Final" ? ["Final", e.reply.status, e.reply.generated_tokens] : [e._tag, e.newTokens])))
        .toEqual([[events[0]!._tag, [7]], ["Final", "COMPLETED", [7]]])
      expect((yield* dropped("malformed")).count).toBe(hostile.length)
      expect((yield* dropped("unknown_request")).count).toBe(0)
      expect((yield* Metric.value(ClientMetrics.completed)).count).toBe(1)
    }).pipe(withRegistry, quiet))

  it.live("maps with keys that are not strings, or a key twice: a partial is dropped, a reply fails only its own request", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      const first = yield* Effect.forkChild(client.submit("a"))
      const second = yield* Effect.forkChild(client.submit("b"))
      const a = yield* takeMessage(stub)
      yield* takeMessage(stub)
      // Python's packb of {1: 2, 3: [4]}, {"1": 2, 1: 3}, {None: 1}; then {"request_id": 1,
      // "request_id": 1} and {"new_tokens": [9], "new_tokens": [9], "request_id": 1}, which no dict packs.
      const bodies = ["82 01 02 03 91 04", "82 a1 31 02 01 03", "81 c0 01"].map(hex)
      const twice = hex("82 aa 726571756573745f6964 01 aa 726571756573745f6964 01")
      const partialTwice = hex("83 aa 6e65775f746f6b656e73 91 09 aa 6e65775f746f6b656e73 91 09 aa 726571756573745f6964 01")
      for (const body of [...bodies, twice, partialTwice]) yield* stub.send(a.identity, [Msgpack.encode([22, 1]), body])
      yield* stub.reply(a.identity, 1, { request_id: 1, status: "COMPLETED", generated_text: "real" })
      expect(yield* Fiber.join(second)).toMatchObject({ status: "COMPLETED", generated_text: "real" })
      yield* stub.send(a.identity, [Msgpack.encode([21, 0]), bodies[0]!])
      const error = yield* Effect.flip(Fiber.join(first))
      expect(error.reason).toMatchObject({ _tag: "MalformedReply", requestId: 0, why: "a map key must be a string, got an integer" })
      expect((yield* dropped("malformed")).count).toBe(6)
      expect((yield* Metric.value(ClientMetrics.completed)).count).toBe(1)
    }).pipe(withRegistry, quiet))

  it.live("frame 0 carries temperature and top_p as float64, as the Python client's does, whole or not", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol })
      yield* Effect.forkChild(client.submit([1, 2], { num_tokens_to_generate: 16 }))
      yield* Effect.forkChild(Stream.runDrain(client.stream([1, 2], { temperature: 0, top_p: 1 })))
      const frames = [(yield* takeMessage(stub)).frames[0]!, (yield* takeMessage(stub)).frames[0]!].map((f) => f.toString("hex"))
      // "temperature" cb 1.0, "top_p" cb 0.0 (the defaults); then cb 0.0 and cb 1.0.
      expect(frames[0]).toContain("ab74656d7065726174757265cb3ff0000000000000a5746f705f6b00a5746f705f70cb0000000000000000")
      expect(frames[1]).toContain("ab74656d7065726174757265cb0000000000000000a5746f705f6b00a5746f705f70cb3ff0000000000000")
    }).pipe(withRegistry))

  it.live("closing the scope fails pending requests and streams with ClientClosed", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const scope = yield* Scope.make()
      const client = yield* InferenceClient.make({ address: stub.address, protocol: stub.protocol }).pipe(Scope.provide(scope))
      const submits = yield* Effect.forkChild(
        Effect.all([client.submit("a"), client.submit("b"), client.submit("c")], { concurrency: "unbounded" })
      )
      const stream = yield* Effect.forkChild(Stream.runCollect(client.stream("d")))
      for (let i = 0; i < 4; i++) yield* takeMessage(stub)
      expect(yield* client.pendingCount).toBe(4)
      yield* Scope.close(scope, Exit.void)
      expect((yield* Effect.flip(Fiber.join(submits))).reason._tag).toBe("ClientClosed")
      expect((yield* Effect.flip(Fiber.join(stream))).reason._tag).toBe("ClientClosed")
      expect(yield* client.pendingCount).toBe(0)
      expect(yield* reasonOf(client.submit("after"))).toBe("ClientClosed")
      expect(yield* reasonOf(client.pauseEngines())).toBe("ClientClosed")
    }).pipe(withRegistry))

  it.live("a coordinator that goes away fails what is pending with CoordinatorLost; the client recovers when it is back", () =>
    Effect.gen(function*() {
      const stub = yield* StubCoordinator.make()
      const client = yield* InferenceClient.make({
        address: stub.address,
        protocol: stub.protocol,
        heartbeatInterval: 50,
        heartbeatTimeout: 300
      })
      const pending = yield* Effect.forkChild(client.submit("a"))
      const stream = yield* Effect.forkChild(Stream.runCollect(client.stream("b")))
      yield* takeMessage(stub)
      yield* takeMessage(stub)
      yield* stub.close
      expect((yield* Effect.flip(Fiber.join(pending))).reason._tag).toBe("CoordinatorLost")
      expect((yield* Effect.flip(Fiber.join(stream))).reason._tag).toBe("CoordinatorLost")
      expect(yield* reasonOf(client.submit("while lost"))).toBe("CoordinatorLost")
      expect(yield* client.pendingCount).toBe(0)

      // Back on the same address: the client says CONNECT again and works at the CONNECT_ACK.
      const again = yield* StubCoordinator.make({ address: stub.address })
      const connect = yield* again.take
      expect(tagOf(connect)).toBe("Connect")
      const reply = yield* Effect.gen(function*() {
        for (;;) {
          const attempt = yield* Effect.result(client.submitWithId("after"))
          if (Result.isSuccess(attempt)) return attempt.success
          yield* Effect.sleep(10)
        }
      })
      const submitted = yield* takeMessage(again)
      yield* again.reply(submitted.identity, reply.requestId, { request_id: reply.requestId })
      expect((yield* reply.reply).request_id).toBe(reply.requestId)
    }).pipe(withRegistry))
})
