/**
 * `stream` over a client whose dialect has no partial replies (Megatron-LM's releases): the
 * request goes out unstreamed (`submitWithId`; the client's `stream` would be refused) and the
 * stream is its whole text in one delta, then the Finish, as a streaming caller reads any stream.
 * The client is a stand-in speaking core_v0.19; the text layer is the thing under test.
 */
import { describe, expect, it } from "@effect/vitest"
import type { InferenceClient } from "@mcore-effect/client"
import { Dialects } from "@mcore-effect/protocol"
import { Generation } from "@mcore-effect/testkit"
import { Effect, Stream } from "effect"
import { TextGeneration } from "../src/index.ts"
import { words } from "./support/Setup.ts"

describe("TextGeneration.stream where the dialect has no partial replies", () => {
  it.effect("submits unstreamed; the text comes whole with the final reply, then the Finish", () =>
    Effect.gen(function*() {
      const tokenizer = yield* words
      const promptIds = tokenizer.encode("the quick fox")
      const generated = Generation.tokens(promptIds, 5)
      const submitted: Array<unknown> = []
      const standIn = {
        dialect: Dialects.get("core_v0.19"),
        submitWithId: (prompt: unknown, params: unknown) => {
          submitted.push({ prompt, params })
          return Effect.succeed({
            requestId: 4,
            reply: Effect.succeed({ latency: 0.01, request_id: 11, generated_tokens: generated, status: "COMPLETED" })
          })
        },
        stream: () => Stream.die(new Error("stream is refused on core_v0.19: it must not be called"))
      } as unknown as InferenceClient.Service
      const text = yield* TextGeneration.make(standIn, tokenizer)
      const parts = yield* Stream.runCollect(text.stream("the quick fox", { samplingParams: { num_tokens_to_generate: 5 } }))
      expect(parts.map((p) => p._tag)).toEqual(["TextDelta", "Finish"])
      const whole = yield* text.generate("the quick fox", { samplingParams: { num_tokens_to_generate: 5 } })
      const delta = parts[0] as TextGeneration.TextDelta
      expect(delta.text).toBe(whole.text)
      expect(delta.tokenIds).toEqual(generated)
      expect(parts[1]).toMatchObject({ _tag: "Finish", requestId: 4, finishReason: "length" })
      expect(submitted).toHaveLength(2)
    }))
})
