/**
 * The listener's handler on its own, fed frames as the coordinator would send them: the
 * handshake, replies and partials for pending requests, and everything that must be dropped
 * without taking anything else down.
 */
import { describe, expect, it } from "@effect/vitest"
import { Dialects, Msgpack } from "@mcore-effect/protocol"
import { TestSupport } from "@mcore-effect/testkit"
import { Effect, Exit, Metric } from "effect"
import { ClientMetrics } from "../src/index.ts"
import { Recorder } from "../src/ClientMetrics.ts"
import * as Listener from "../src/internal/listener.ts"
import { PendingRequests, singles } from "../src/internal/pendingRequests.ts"

const setup = (options?: { readonly awaitingFirstAck?: boolean; readonly deserialize?: boolean; readonly maxFrameBytes?: number }) =>
  Effect.map(Effect.context<never>(), (context) => {
    const metrics = new Recorder(context)
    const pending = new PendingRequests(metrics)
    const log: Array<string> = []
    let awaiting = options?.awaitingFirstAck ?? false
    const listener: Listener.Options = {
      dialect: Dialects.get("reference"),
      pending,
      metrics,
      deserialize: options?.deserialize ?? false,
      maxFrameBytes: options?.maxFrameBytes ?? 1 << 20,
      maxDecodedBytes: 1 << 24,
      warn: (message) => log.push(`warn: ${message}`),
      handshake: {
        awaitingFirstAck: () => awaiting,
        received: () => log.push("received"),
        acknowledged: () => {
          awaiting = false
          log.push("acknowledged")
        },
        rejected: (received) => log.push(`rejected: ${received}`)
      }
    }
    const single = (requestId: number) => {
      const entry = singles({ cancel: () => {} })(requestId)
      pending.add(entry)
      return entry
    }
    return { listener, pending, log, single }
  })

const reply = (requestId: number, body: unknown) => [Msgpack.encode([21, requestId]), Msgpack.encode(body)]
const dropped = (reason: string) =>
  Effect.map(Metric.value(Metric.withAttributes(ClientMetrics.messagesDropped, { reason })), (s) => s.count)

describe("Listener.handle", () => {
  it.effect("CONNECT_ACK acknowledges; anything else before it rejects the handshake", () =>
    Effect.gen(function*() {
      const { listener, log } = yield* setup({ awaitingFirstAck: true })
      Listener.handle(listener, reply(0, { request_id: 0 }))
      Listener.handle(listener, [Msgpack.encode([1])])
      expect(log).toEqual(["received", "rejected: EngineReply", "received", "acknowledged"])
    }).pipe(TestSupport.withRegistry))

  it.effect("a reply finishes its pending request, with latency added to the raw map", () =>
    Effect.gen(function*() {
      const { listener, pending, single } = yield* setup()
      const entry = single(3)
      Listener.handle(listener, reply(3, { request_id: 40, generated_tokens: [1, 2] }))
      expect(pending.size).toBe(0)
      expect(Exit.isSuccess(entry.exit!)).toBe(true)
      const got = (entry.exit as unknown as Exit.Success<Record<string, unknown>>).value
      expect(got.generated_tokens).toEqual([1, 2])
      expect(typeof got.latency).toBe("number")
    }).pipe(TestSupport.withRegistry))

  it.effect("with deserialize, a reply is typed; a reply that is not a reply fails only its own request", () =>
    Effect.gen(function*() {
      const { listener, single } = yield* setup({ deserialize: true })
      const good = single(1)
      const bad = single(2)
      Listener.handle(listener, reply(1, { request_id: 1, status: "COMPLETED" }))
      Listener.handle(listener, reply(2, { request_id: "two" }))
      expect(Exit.isSuccess(good.exit!)).toBe(true)
      expect(Exit.isFailure(bad.exit!) && bad.exit.cause.toString()).toContain("MalformedReply")
      expect(yield* dropped("malformed")).toBe(1)
    }).pipe(TestSupport.withRegistry))

  it.effect("drops, counts and survives: garbage, a reply for an id not pending, an oversized reply", () =>
    Effect.gen(function*() {
      const { listener, log, single } = yield* setup({ maxFrameBytes: 64 })
      Listener.handle(listener, [Uint8Array.of(0xc1)])
      Listener.handle(listener, [])
      Listener.handle(listener, reply(99, { request_id: 99 }))
      const big = single(5)
      Listener.handle(listener, reply(5, { request_id: 5, generated_text: "x".repeat(100) }))
      expect(yield* dropped("malformed")).toBe(2)
      expect(yield* dropped("unknown_request")).toBe(1)
      expect(yield* dropped("too_large")).toBe(1)
      expect(Exit.isFailure(big.exit!) && big.exit.cause.toString()).toContain("ReplyTooLarge")
      expect(log.filter((line) => line.startsWith("warn")).length).toBe(3)
    }).pipe(TestSupport.withRegistry))
})
