import { describe, expect, it } from "@effect/vitest"
import { Media, Messages, type MessageSpec, Msgpack, Prompt, Reply, SamplingParams } from "@mcore-effect/protocol"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import * as Arbitraries from "../src/arbitraries/Arbitraries.ts"

const TWO_53 = 1n << 53n
const UINT63_MAX = (1n << 63n) - 1n

describe("Arbitraries: fields", () => {
  it("sampling params pass the protocol's own validation, unchanged", () => {
    fc.assert(
      fc.property(Arbitraries.samplingParams(), (params) => {
        // The wire map's extra keys sit at the top level; the input has them in `extra`.
        const again = SamplingParams.make(SamplingParams.toInput(params))
        expect(Result.isSuccess(again)).toBe(true)
        if (Result.isSuccess(again)) {
          expect(again.success).toEqual(params)
          expect(Object.keys(again.success)).toEqual(Object.keys(params))
        }
        expect(Schema.is(SamplingParams.SamplingParams)(params)).toBe(true)
      }),
      { numRuns: 200 }
    )
    const samples = fc.sample(Arbitraries.samplingParams(), { numRuns: 300, seed: 7 })
    expect(samples.some((p) => Object.keys(p).length > Object.keys(SamplingParams.defaults).length)).toBe(true)
    expect(samples.some((p) => p.num_tokens_to_generate !== null)).toBe(true)
    expect(samples.some((p) => p.return_prompt_top_n_logprobs)).toBe(true)
  })

  it("prompts: text and token ids, plain and typed, all valid", () => {
    const samples = fc.sample(Arbitraries.prompt(), { numRuns: 400, seed: 3 })
    expect(samples.every((p) => Result.isSuccess(Prompt.validate(p)))).toBe(true)
    const kinds = new Set(samples.map((p) => (typeof p === "string" ? "text" : p.constructor.name)))
    expect(kinds).toEqual(new Set(["text", "Array", "Int32Array", "Uint32Array", "Int16Array", "Uint16Array", "Float64Array"]))
  })

  it("block hashes lie in [1, 2^63 - 1], many above 2^53", () => {
    const hashes = fc.sample(Arbitraries.blockHashes(), { numRuns: 300, seed: 5 })
    expect(hashes.every((h) => h instanceof BigUint64Array)).toBe(true)
    const all = hashes.flatMap((h) => Array.from(h))
    expect(all.every((h) => h >= 1n && h <= UINT63_MAX)).toBe(true)
    expect(all.filter((h) => h > TWO_53).length).toBeGreaterThan(all.length / 4)
    expect(hashes.some((h) => h.length === 0)).toBe(true)
  })

  it("media: descriptor and body belong together", () => {
    fc.assert(
      fc.property(Arbitraries.submittedMedia(), ({ media, mediaDescriptor }) => {
        const bytes = media instanceof Msgpack.Raw ? media.bytes : Msgpack.encode(media, { sortKeys: true })
        expect(Media.mediaCacheKey(bytes)).toBe(mediaDescriptor.media_cache_key)
        expect(Schema.is(Media.MediaDescriptor)(mediaDescriptor)).toBe(true)
        const decoded = Schema.decodeUnknownSync(Media.MediaWire)(Msgpack.decode(bytes))
        for (const modality of ["image", "video"] as const) {
          expect(decoded[modality] !== undefined).toBe(mediaDescriptor.modalities[modality] !== undefined)
        }
      }),
      { numRuns: 100 }
    )
    const kinds = fc.sample(Arbitraries.submittedMedia(), { numRuns: 100, seed: 2 }).map((m) => m.media instanceof Msgpack.Raw)
    expect(new Set(kinds)).toEqual(new Set([true, false]))
  })

  it("replies decode as the engine's DynamicInferenceRequest, with the request id asked for", () => {
    fc.assert(
      fc.property(fc.nat(), fc.nat().chain((id) => Arbitraries.replyMap(id).map((m) => [id, m] as const)), (_, [id, map]) => {
        const reply = Reply.decodeReply(Msgpack.decode(Msgpack.encode(map)))
        if (Result.isFailure(reply)) throw new Error(reply.failure.message)
        expect(reply.success.request_id).toBe(id)
      }),
      { numRuns: 100 }
    )
  })
})

describe("Arbitraries: messages", () => {
  const directions = [
    ["Client", Messages.Client, Arbitraries.clientMessages()],
    ["Coordinator", Messages.Coordinator, Arbitraries.coordinatorMessages()],
    ["Engine", Messages.Engine, Arbitraries.engineMessages()]
  ] as const
  for (const [direction, codec, arbitraries] of directions) {
    it(`${direction}: one arbitrary per message, each value valid for its schema`, () => {
      const specs = codec.specs as ReadonlyArray<MessageSpec.Any>
      expect(Object.keys(arbitraries).sort()).toEqual(specs.map((s) => s.tag).sort())
      for (const spec of specs) {
        const is = Schema.is(spec.schema)
        const arbitrary = (arbitraries as Record<string, fc.Arbitrary<unknown>>)[spec.tag]!
        fc.assert(fc.property(arbitrary, (m) => is(m) && (m as { _tag: string })._tag === spec.tag), { numRuns: 30 })
      }
    })
  }

  it("batched engine messages have one body per entry, carrying its id", () => {
    const { EngineReplyBatch, EngineReplyPartialBatch } = Arbitraries.engineMessages()
    fc.assert(
      fc.property(EngineReplyBatch, EngineReplyPartialBatch, (replies, partials) => {
        expect(replies.replies.map((r) => r.request_id)).toEqual(replies.entries.map(([id]) => id))
        expect(partials.partials.map((p) => p.request_id)).toEqual(partials.requestIds)
      }),
      { numRuns: 50 }
    )
  })

  it("union arbitraries reach every message", () => {
    for (const [arb, codec] of [
      [Arbitraries.clientMessage(), Messages.Client],
      [Arbitraries.coordinatorMessage(), Messages.Coordinator],
      [Arbitraries.engineMessage(), Messages.Engine]
    ] as const) {
      const tags = new Set(fc.sample(arb as fc.Arbitrary<{ _tag: string }>, { numRuns: 300, seed: 11 }).map((m) => m._tag))
      expect(tags).toEqual(new Set((codec.specs as ReadonlyArray<MessageSpec.Any>).map((s) => s.tag)))
    }
  })
})

describe("Arbitraries: conversations", () => {
  const idOf = (m: { readonly _tag: string }): number | undefined => (m as { requestId?: number }).requestId

  it("requests go out with ids 0, 1, 2, ...; the coordinator answers only submitted ids, partials before the reply", () => {
    fc.assert(
      fc.property(Arbitraries.conversation(), ({ events, outcomes }) => {
        expect(events[0]).toEqual({ from: "client", message: { _tag: "Connect" } })
        expect(events[1]).toEqual({ from: "coordinator", message: { _tag: "ConnectAck" } })
        const submitted: Array<number> = []
        const streaming = new Set<number>()
        const replied = new Set<number>()
        for (const { from, message } of events) {
          const id = idOf(message)
          if (from === "client" && (message._tag === "SubmitRequest" || message._tag === "SubmitRequestWithKv")) {
            expect(id).toBe(submitted.length)
            submitted.push(id!)
            if (message.samplingParams.streaming) streaming.add(id!)
            continue
          }
          if (message._tag === "EngineReply" || message._tag === "EngineReplyPartial" || message._tag === "AbortRequest" || message._tag === "ReleaseKv") {
            expect(submitted).toContain(id)
            // Nothing about a request follows its reply, except the release of its KV blocks.
            expect(replied.has(id!)).toBe(message._tag === "ReleaseKv")
          }
          if (message._tag === "EngineReplyPartial") {
            expect(streaming.has(id!)).toBe(true)
            expect(message.partial.request_id).toBe(id)
          }
          if (message._tag === "EngineReply") {
            expect(message.reply.request_id).toBe(id)
            replied.add(id!)
          }
        }
        expect(submitted.length).toBe(outcomes.length)
        outcomes.forEach((outcome, id) => {
          expect(replied.has(id)).toBe(outcome === "completed" || outcome === "streamed" || outcome === "abortedAfterReply")
        })
      }),
      { numRuns: 100 }
    )
  })

  it("every message of a conversation encodes in its direction", () => {
    fc.assert(
      fc.property(Arbitraries.conversation({ maxRequests: 3 }), ({ events }) => {
        for (const { from, message } of events) {
          const frames = from === "client" ? Messages.Client.encode(message as Messages.ClientMessage) : Messages.Coordinator.encode(message as Messages.CoordinatorMessage)
          expect(Result.isSuccess(frames)).toBe(true)
        }
      }),
      { numRuns: 50 }
    )
  })

  it("produces the interesting shapes", () => {
    const samples = fc.sample(Arbitraries.conversation(), { numRuns: 200, seed: 9 })
    const outcomes = new Set(samples.flatMap((c) => c.outcomes))
    expect(outcomes).toEqual(new Set(["completed", "streamed", "aborted", "abortedAfterReply", "unanswered"]))
    expect(samples.some((c) => c.events.some((e) => e.message._tag === "Pause"))).toBe(true)
    expect(samples.some((c) => c.events.some((e) => e.message._tag === "ReleaseKv"))).toBe(true)
    // Interleaved: some reply comes before a later request's submission.
    expect(samples.some((c) => {
      const tags = c.events.map((e) => e.message._tag)
      return tags.indexOf("EngineReply") >= 0 && tags.lastIndexOf("SubmitRequest") > tags.indexOf("EngineReply")
    })).toBe(true)
  })
})
