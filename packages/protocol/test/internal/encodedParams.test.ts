/**
 * The per-object cache of validated, encoded sampling parameters: its bytes are always those a
 * fresh validation and encode would give, whatever the caller does to its object in between.
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
import { Result } from "effect"
import * as fc from "fast-check"
import { Messages, Msgpack, SamplingParams, Submission } from "../../src/index.ts"
import * as EncodedParams from "../../src/internal/encodedParams.ts"

const prompt = [1, 2, 3, 4]

/** Frame 0 of a SUBMIT_REQUEST through the client's path (the cache). */
const cachedFrame0 = (input: SamplingParams.SamplingParamsInput | undefined, streaming: boolean): Uint8Array => {
  const message = Result.getOrThrow(Submission.submitRequest({ requestId: 7, prompt, samplingParams: input, streaming }, {}))
  return Result.getOrThrow(Messages.Client.encode(message))[0]!
}

/** Frame 0 with parameters validated and encoded afresh (no cache, nothing remembered). */
const freshFrame0 = (input: SamplingParams.SamplingParamsInput | undefined, streaming: boolean): Uint8Array => {
  const made = Result.getOrThrow(SamplingParams.make(input))
  const samplingParams = streaming ? SamplingParams.withStreaming(made) : made
  expect(Msgpack.rememberedBytes(samplingParams)).toBeUndefined()
  return Result.getOrThrow(Messages.Client.encode({
    _tag: "SubmitRequest",
    requestId: 7,
    samplingParams,
    mediaDescriptor: null,
    prompt,
    blockHashes: null,
    media: null,
    offloadParams: null
  } as never))[0]!
}

/** A caller's own object with the same content as `p` (its stop_words array its own too; extras in `extra`). */
const inputOf = (p: SamplingParams.SamplingParams): Record<string, unknown> => {
  const input: Record<string, unknown> = { ...SamplingParams.toInput(p) }
  if (Array.isArray(p.stop_words)) input.stop_words = [...p.stop_words]
  return input
}

const params = Arbitraries.samplingParams()

describe("EncodedParams", () => {
  it("gives the bytes of a fresh encode, on the first use of an object and on every reuse", () => {
    fc.assert(
      fc.property(params, fc.boolean(), (p, streaming) => {
        const input = inputOf(p)
        const fresh = freshFrame0(input, streaming)
        expect(cachedFrame0(input, streaming)).toEqual(fresh)
        expect(cachedFrame0(input, streaming)).toEqual(fresh)
        expect(cachedFrame0(input, !streaming)).toEqual(freshFrame0(input, !streaming))
      })
    )
  })

  it("never reuses stale bytes after the object changes, or for a different object", () => {
    fc.assert(
      fc.property(params, params, fc.boolean(), (p, q, streaming) => {
        const input = inputOf(p)
        cachedFrame0(input, streaming)
        // The same object, now holding q's content (keys removed, changed, added, reordered).
        for (const key of Object.keys(input)) delete input[key]
        Object.assign(input, inputOf(q))
        expect(cachedFrame0(input, streaming)).toEqual(freshFrame0(input, streaming))
        // A different object with p's content.
        const other = inputOf(p)
        expect(cachedFrame0(other, streaming)).toEqual(freshFrame0(other, streaming))
      })
    )
  })

  it("sees a change inside the object's stop_words array", () => {
    const input: Record<string, unknown> = { num_tokens_to_generate: 4, stop_words: ["END"] }
    const before = cachedFrame0(input, false)
    ;(input.stop_words as Array<string>).push("STOP")
    const after = cachedFrame0(input, false)
    expect(after).not.toEqual(before)
    expect(after).toEqual(freshFrame0(input, false))
    ;(input.stop_words as Array<string>)[0] = "FIN"
    expect(cachedFrame0(input, false)).toEqual(freshFrame0(input, false))
  })

  it("does not cache an object holding a nested extra value, which could change unseen", () => {
    const input: Record<string, unknown> = { temperature: 0.5, extra: { depth: [1] } }
    const before = cachedFrame0(input, false)
    ;(input.extra as { depth: Array<number> }).depth.push(2)
    const after = cachedFrame0(input, false)
    expect(after).not.toEqual(before)
    expect(after).toEqual(freshFrame0(input, false))
  })

  it("validates again after a change: a value made invalid fails", () => {
    const input: Record<string, unknown> = { temperature: 1 }
    expect(Result.isSuccess(EncodedParams.make(input, false))).toBe(true)
    input.temperature = -1
    const made = EncodedParams.make(input, false)
    expect(Result.isFailure(made) && made.failure.reason._tag).toBe("InvalidSamplingParams")
    input.temperature = 2
    expect(cachedFrame0(input, false)).toEqual(freshFrame0(input, false))
  })

  it("hands out a frozen value, the same one while the object is unchanged, and never touches the input", () => {
    const input = { temperature: 1, stop_words: ["a"] }
    const a = Result.getOrThrow(EncodedParams.make(input, false))
    const b = Result.getOrThrow(EncodedParams.make(input, false))
    expect(b).toBe(a)
    expect(Object.isFrozen(a) && Object.isFrozen(a.stop_words)).toBe(true)
    expect(Object.isFrozen(input) || Object.isFrozen(input.stop_words)).toBe(false)
    expect(Result.getOrThrow(EncodedParams.make(input, true)).streaming).toBe(true)
    expect(cachedFrame0(undefined, false)).toEqual(freshFrame0(undefined, false))
    expect(cachedFrame0(undefined, true)).toEqual(freshFrame0(undefined, true))
  })

  it("writes temperature and top_p as float64 from the cache too (1.0 as cb 3f f0 ..)", () => {
    const frame = cachedFrame0({ temperature: 1, top_p: 0 }, false)
    const hex = Buffer.from(frame).toString("hex")
    expect(hex).toContain(Buffer.from("temperature").toString("hex") + "cb3ff0000000000000")
    expect(hex).toContain(Buffer.from("top_p").toString("hex") + "cb0000000000000000")
  })
})

describe("Msgpack.remember", () => {
  it("refuses a value that is not frozen", () => {
    expect(() => Msgpack.remember({}, Uint8Array.of(0x80))).toThrow(TypeError)
  })
})
