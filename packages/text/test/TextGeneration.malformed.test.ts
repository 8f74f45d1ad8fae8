/**
 * A final reply whose known fields have the wrong types (a raw reply map the client passed
 * through): the request fails with the client's own MalformedReply, never as text made of
 * nothing. The client here is a stand-in handing out one such reply; the text layer is the thing
 * under test.
 */
import { describe, expect, it } from "@effect/vitest"
import type { InferenceClient } from "@mcore-effect/client"
import { Dialects } from "@mcore-effect/protocol"
import { Effect, Stream } from "effect"
import { TextGeneration } from "../src/index.ts"
import { words } from "./support/Setup.ts"

const malformed: InferenceClient.Reply = { latency: 0.01, request_id: 3, generated_tokens: "not ids" }

const standIn = {
  dialect: Dialects.get("reference"),
  submitWithId: () => Effect.succeed({ requestId: 7, reply: Effect.succeed(malformed) }),
  stream: () =>
    Stream.fromArray<InferenceClient.StreamEvent>([
      { _tag: "Tokens", requestId: 7, newTokens: [1] },
      { _tag: "Final", reply: malformed }
    ])
} as unknown as InferenceClient.Service

describe("TextGeneration, a malformed final reply", () => {
  it.effect("generate and stream fail with MalformedReply naming the request", () =>
    Effect.gen(function*() {
      const text = yield* TextGeneration.make(standIn, yield* words)
      const generated = yield* Effect.flip(text.generate("the fox"))
      expect(generated._tag === "ClientError" && generated.reason._tag).toBe("MalformedReply")
      expect(generated.message).toContain("request 7")
      const parts: Array<TextGeneration.StreamPart> = []
      const streamed = yield* Effect.flip(Stream.runForEach(text.stream("the fox"), (part) => Effect.sync(() => parts.push(part))))
      expect(streamed._tag === "ClientError" && streamed.reason._tag).toBe("MalformedReply")
      expect(parts.map((p) => p._tag)).toEqual(["TextDelta"])
    }))
})
