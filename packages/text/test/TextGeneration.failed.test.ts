/**
 * A final reply `FAILED` (its engine, or the coordinator, gave up on the request): the request
 * fails with the client's `RequestFailed`, saying what the reply's FAIL event says, never as a
 * finished text made of the tokens it had. The client here is a stand-in handing out such
 * replies; the text layer is the thing under test.
 */
import { describe, expect, it } from "@effect/vitest"
import type { InferenceClient } from "@mcore-effect/client"
import { Dialects } from "@mcore-effect/protocol"
import { Effect, Stream } from "effect"
import { TextGeneration } from "../src/index.ts"
import { words } from "./support/Setup.ts"

const standIn = (reply: InferenceClient.Reply) =>
  ({
    dialect: Dialects.get("reference"),
    submitWithId: () => Effect.succeed({ requestId: 7, reply: Effect.succeed(reply) }),
    stream: () =>
      Stream.fromArray<InferenceClient.StreamEvent>([
        { _tag: "Tokens", requestId: 7, newTokens: [1] },
        { _tag: "Final", reply }
      ])
  }) as unknown as InferenceClient.Service

const failed = (events: ReadonlyArray<Record<string, unknown>> | null): InferenceClient.Reply => ({
  latency: 0.01,
  request_id: 3,
  status: "FAILED",
  generated_tokens: [1],
  events
})

describe("TextGeneration, a final reply FAILED", () => {
  it.effect("generate and stream fail with RequestFailed, the reason from the FAIL event", () =>
    Effect.gen(function*() {
      const lost = failed([{ type: "ADD", timestamp: 1 }, { type: "FAIL", timestamp: 2, payload: "engine mp-coord-0 was lost" }])
      const text = yield* TextGeneration.make(standIn(lost), yield* words)
      const generated = yield* Effect.flip(text.generate("the fox"))
      expect(generated._tag === "ClientError" && generated.reason).toMatchObject({ _tag: "RequestFailed", requestId: 7, why: "engine mp-coord-0 was lost" })
      const parts: Array<TextGeneration.StreamPart> = []
      const streamed = yield* Effect.flip(Stream.runForEach(text.stream("the fox"), (part) => Effect.sync(() => parts.push(part))))
      expect(streamed.message).toBe("RequestFailed: request 7 failed: engine mp-coord-0 was lost")
      // What streamed before it is kept; no end of text follows.
      expect(parts.map((p) => p._tag)).toEqual(["TextDelta"])
      // core_v0.16's client refuses a FAIL event with a reason: ours then has none to give.
      const silent = yield* TextGeneration.make(standIn(failed(null)), yield* words)
      expect((yield* Effect.flip(silent.generate("the fox"))).message).toBe("RequestFailed: request 7 failed: the reply says FAILED and gives no reason")
    }))
})
