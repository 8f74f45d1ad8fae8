import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { Continuations, Generation, TestCluster, Vocabulary } from "../src/index.ts"
import * as RawClient from "./support/RawClient.ts"

const scripted = Vocabulary.tokenize("over the dog runs")
const script = Continuations.whenPromptHolds([{ when: Vocabulary.tokenize("weather"), then: scripted }])

describe("Continuations", () => {
  it.effect("a prompt the script knows gets its continuation, then finishes; others the deterministic stream", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1, engine: { continuations: script, defaultTokensToGenerate: 16 } })
      const client = yield* RawClient.make(cluster.address)
      yield* client.connect
      const known = Vocabulary.tokenize("the weather is")
      expect(Vocabulary.detokenize(scripted)).toBe("over the dog runs")
      const other = Vocabulary.tokenize("the quick fox")
      yield* client.submit(0, known)
      yield* client.submit(1, other, { params: { num_tokens_to_generate: 4 } })
      // Stop words and limits still apply to a scripted continuation.
      yield* client.submit(2, known, { params: { num_tokens_to_generate: 2 } })
      yield* client.submit(3, known, { params: { stop_words: [Vocabulary.detokenize(scripted.slice(2, 3))] } })
      const replies = (yield* client.untilReplies(4)).sort((a, b) => a.requestId - b.requestId)
      expect(replies.map((r) => r.body?.generated_tokens)).toEqual([
        scripted,
        Generation.tokens(other, 4),
        scripted.slice(0, 2),
        scripted.slice(0, 2)
      ])
    }).pipe(Effect.scoped))
})
