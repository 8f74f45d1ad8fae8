/**
 * A property, for every dialect: whatever the prompt and parameters (the testkit's arbitraries),
 * a test engine's reply and partials, batched as the engine batches them, decode with the
 * protocol's codec of that dialect (what a coordinator of it reads), as a reply map the client's
 * reader takes; and passed on as the test coordinator passes them on, they decode with the
 * dialect's coordinator codec (what the client reads), answering the client's id, with the
 * tokens generated and `generated_text` filled where that ref's coordinator fills it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Dialect, Dialects, Msgpack, Reply } from "@mcore-effect/protocol"
import { Result } from "effect"
import * as fc from "fast-check"
import * as Arbitraries from "../src/arbitraries/Arbitraries.ts"
import { DialectWire } from "@mcore-effect/coordinator/internal"
import { EngineRequest } from "../src/internal/engineRequest.ts"
import * as CoordinatorTokenizer from "../src/CoordinatorTokenizer.ts"
import { GeneratedText } from "@mcore-effect/coordinator/internal"
import * as ReplyShapes from "../src/internal/replyShapes.ts"
import * as Vocabulary from "../src/Vocabulary.ts"

type Decoded = Record<string, any> & { readonly _tag: string }

const decodeOrThrow = (codec: Dialect.Dialect["engine"], frames: ReadonlyArray<Uint8Array>): Decoded => {
  const decoded = codec.decode(frames)
  if (Result.isFailure(decoded)) throw new Error(decoded.failure.message)
  return decoded.success as Decoded
}

describe("the test engine's replies decode with each dialect's codecs", () => {
  for (const name of Dialect.names) {
    const dialect = Dialects.get(name)
    const wire = DialectWire.of(name)
    /** core_v0.16 sends each request in a record of its own; the others the request itself. */
    const requestIn = (map: Record<string, any>): Record<string, any> => {
      if (!wire.records) return map
      expect(Object.keys(map)).toEqual(["requests", "latency"])
      expect(map.requests).toHaveLength(1)
      return map.requests[0]
    }

    it(`${name}: replies and partials, as the engine sends them and as the coordinator passes them on`, () => {
      fc.assert(
        fc.property(
          Arbitraries.prompt({ maxTokens: 24 }),
          Arbitraries.samplingParams(),
          fc.nat({ max: 1_000 }),
          fc.nat({ max: 1_000_000 }),
          fc.integer({ min: 0, max: 6 }),
          (prompt, params, clientRequestId, requestId, steps) => {
            // What this dialect's client would send: its fields only (a release's lacks the later ones).
            const projected = Dialect.samplingParamsFor(dialect, params)
            fc.pre(Result.isSuccess(projected))
            const samplingParams = { ...(projected as Result.Success<Record<string, unknown>, unknown>).success }
            const text = typeof prompt === "string" ? prompt : null
            const promptTokens = text === null ? Array.from(prompt as ArrayLike<number>) : Vocabulary.tokenize(text)
            const request = new EngineRequest({
              requestId,
              prompt: text,
              promptTokens,
              samplingParams,
              mediaCacheKey: null,
              blockSizeTokens: 16,
              blockHashes: [],
              numCachedTokens: 0,
              numMatchedPrefixBlocks: 0,
              defaultTokensToGenerate: 8,
              generationEpoch: null,
              disaggregatedParams: null,
              uid: "chatcmpl-0",
              now: 1,
              shape: ReplyShapes.of(name)
            })
            const partials: Array<Record<string, unknown>> = []
            for (let i = 0; i < steps && !request.step(1 + i); i++) {
              const partial = wire.ENGINE_REPLY_PARTIAL === undefined ? null : request.partial()
              if (partial !== null) partials.push(partial)
            }
            const encoded = request.encode(2, new Msgpack.Writer())
            const body = wire.records ? DialectWire.asRecord(encoded) : encoded
            // The coordinator routes by the (record's first) request's id.
            expect(DialectWire.replyIdOf(wire, body)).toBe(requestId)

            // Engine to coordinator.
            const batch = decodeOrThrow(dialect.engine, DialectWire.replyBatch(wire, [[requestId, request.needsDetokenize]], [body]))
            expect(batch._tag).toBe("EngineReplyBatch")
            const sent = requestIn(batch.replies[0])
            expect(sent.request_id).toBe(requestId)
            expect(Result.isSuccess(Reply.decodeReply(sent))).toBe(true)
            if (partials.length > 0) {
              const partialBatch = decodeOrThrow(dialect.engine, DialectWire.partialBatch(wire, partials))
              expect(partialBatch.partials.map((p: { new_tokens: unknown }) => p.new_tokens)).toEqual(partials.map((p) => p.new_tokens))
            }

            // Coordinator to client.
            const detokenized = wire.single || request.needsDetokenize
            const passed = wire.single ? DialectWire.finishReply(wire, body, CoordinatorTokenizer.vocabulary) : detokenized ? GeneratedText.fill(body, CoordinatorTokenizer.vocabulary) : body
            const client = Uint8Array.of(0, 0, 0, 0x2d)
            const [addressee, ...finalFrames] = DialectWire.toClient(wire, client, wire.ENGINE_REPLY, clientRequestId, passed)
            expect(addressee).toBe(client)
            const final = decodeOrThrow(dialect.coordinator, finalFrames)
            expect([final._tag, final.requestId]).toEqual(["EngineReply", clientRequestId])
            const reply = requestIn(final.reply)
            expect(reply.request_id).toBe(requestId)
            expect(reply.generated_tokens).toEqual(request.generated)
            expect(reply.generated_text).toBe(
              detokenized
                ? Vocabulary.detokenize(request.generated, { removeEod: samplingParams.detokenize_stop_sequence !== true })
                : null
            )
            if (wire.fillsPrompt) expect(reply.prompt).toBe(text ?? Vocabulary.detokenize(promptTokens))
            for (const partial of partials) {
              const frames = DialectWire.toClient(wire, client, wire.ENGINE_REPLY_PARTIAL!, clientRequestId, Msgpack.encode(partial)).slice(1)
              const decoded = decodeOrThrow(dialect.coordinator, frames)
              expect([decoded._tag, decoded.requestId, decoded.partial.request_id]).toEqual(["EngineReplyPartial", clientRequestId, requestId])
            }
          }
        ),
        { numRuns: 150 }
      )
    })
  }
})
