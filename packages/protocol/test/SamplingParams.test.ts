import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as fc from "fast-check"
import * as Messages from "../src/Messages.ts"
import * as Msgpack from "../src/Msgpack.ts"
import type { ProtocolError } from "../src/ProtocolError.ts"
import * as SamplingParams from "../src/SamplingParams.ts"
import { readFixture } from "./fixtureValues.ts"

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex")

const WIRE_ORDER = [
  "temperature",
  "top_k",
  "top_p",
  "return_log_probs",
  "skip_prompt_log_probs",
  "return_segments",
  "num_tokens_to_generate",
  "num_tokens_total",
  "termination_id",
  "top_n_logprobs",
  "return_prompt_top_n_logprobs",
  "add_BOS",
  "stop_words",
  "detokenize_stop_sequence",
  "return_prompt_tokens",
  "streaming",
  "streaming_interval",
  "do_kv_handoff"
]

/** frames.json `submit_text`, frame 0 (written by the Python peer). */
const SUBMIT_TEXT_FRAME0 =
  "941400de0012ab74656d7065726174757265cb3fe6666666666666a5746f705f6b00a5746f705f70cb3feccccccccccccdb07265" +
  "7475726e5f6c6f675f70726f6273c2b5736b69705f70726f6d70745f6c6f675f70726f6273c2af72657475726e5f7365676d656e" +
  "7473c2b66e756d5f746f6b656e735f746f5f67656e657261746520b06e756d5f746f6b656e735f746f74616cc0ae7465726d696e" +
  "6174696f6e5f6964c0ae746f705f6e5f6c6f6770726f627300bc72657475726e5f70726f6d70745f746f705f6e5f6c6f6770726f" +
  "6273c2a76164645f424f53c2aa73746f705f776f726473c0b86465746f6b656e697a655f73746f705f73657175656e6365c2b472" +
  "657475726e5f70726f6d70745f746f6b656e73c2a973747265616d696e67c2b273747265616d696e675f696e74657276616c01ad" +
  "646f5f6b765f68616e646f6666c2c0"

/** frames.json `submit_with_kv`, frame 0. */
const SUBMIT_WITH_KV_FRAME0 =
  "941803de0012ab74656d7065726174757265cb3fe6666666666666a5746f705f6b00a5746f705f70cb3feccccccccccccdb07265" +
  "7475726e5f6c6f675f70726f6273c2b5736b69705f70726f6d70745f6c6f675f70726f6273c2af72657475726e5f7365676d656e" +
  "7473c2b66e756d5f746f6b656e735f746f5f67656e657261746520b06e756d5f746f6b656e735f746f74616cc0ae7465726d696e" +
  "6174696f6e5f6964c0ae746f705f6e5f6c6f6770726f627300bc72657475726e5f70726f6d70745f746f705f6e5f6c6f6770726f" +
  "6273c2a76164645f424f53c2aa73746f705f776f726473c0b86465746f6b656e697a655f73746f705f73657175656e6365c2b472" +
  "657475726e5f70726f6d70745f746f6b656e73c2a973747265616d696e67c2b273747265616d696e675f696e74657276616c01ad" +
  "646f5f6b765f68616e646f6666c383a56167656e74a970726566696c6c2d30a2747002a66c61796f757493010203"

const ok = (input?: SamplingParams.SamplingParamsInput | null): SamplingParams.SamplingParams => {
  const result = SamplingParams.make(input)
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

const failure = (input: unknown): ProtocolError => {
  const result = SamplingParams.make(input as SamplingParams.SamplingParamsInput)
  if (Result.isSuccess(result)) throw new Error(`expected a failure, got ${JSON.stringify(result.success)}`)
  return result.failure
}

const invalid = (input: unknown): { readonly field: string; readonly why: string } => {
  const reason = failure(input).reason
  if (reason._tag !== "InvalidSamplingParams") throw new Error(`expected InvalidSamplingParams, got ${reason._tag}`)
  return reason
}

describe("SamplingParams.make", () => {
  it("fills the Python defaults, in wire order", () => {
    for (const input of [undefined, null, {}]) {
      const params = ok(input)
      expect(Object.keys(params)).toEqual(WIRE_ORDER)
      expect(params).toEqual(SamplingParams.defaults)
      expect(params).not.toBe(SamplingParams.defaults)
    }
    expect(Object.keys(SamplingParams.defaults)).toEqual(WIRE_ORDER)
  })

  it("reproduces the sampling params of the Python peer's frames byte for byte", () => {
    const params = ok({ temperature: 0.7, top_p: 0.9, num_tokens_to_generate: 32 })
    expect(hex(Msgpack.encode([20, 0, params, null]))).toBe(SUBMIT_TEXT_FRAME0)

    const kv = ok({ temperature: 0.7, top_p: 0.9, num_tokens_to_generate: 32, do_kv_handoff: true })
    const kvMeta = { agent: "prefill-0", tp: 2, layout: [1, 2, 3] }
    expect(hex(Msgpack.encode([24, 3, kv, kvMeta]))).toBe(SUBMIT_WITH_KV_FRAME0)
  })

  it("keeps the wire order whatever order the input is written in", () => {
    const params = ok({ do_kv_handoff: true, streaming: true, temperature: 0.5, top_k: 4 })
    expect(Object.keys(params)).toEqual(WIRE_ORDER)
    expect(params).toMatchObject({ do_kv_handoff: true, streaming: true, temperature: 0.5, top_k: 4 })
  })

  it("derives return_prompt_top_n_logprobs", () => {
    expect(ok({ top_n_logprobs: 3 }).return_prompt_top_n_logprobs).toBe(true)
    expect(ok({ top_n_logprobs: 3, skip_prompt_log_probs: true }).return_prompt_top_n_logprobs).toBe(false)
    expect(ok({ top_n_logprobs: 0 }).return_prompt_top_n_logprobs).toBe(false)
    // An explicit value that agrees is fine (a made params fed back in, for one).
    expect(ok({ top_n_logprobs: 2, return_prompt_top_n_logprobs: true }).return_prompt_top_n_logprobs).toBe(true)
    expect(ok({ return_prompt_top_n_logprobs: false }).return_prompt_top_n_logprobs).toBe(false)
  })

  it("refuses an explicit return_prompt_top_n_logprobs that contradicts the derivation", () => {
    expect(invalid({ return_prompt_top_n_logprobs: true }).field).toBe("return_prompt_top_n_logprobs")
    expect(
      invalid({ top_n_logprobs: 2, skip_prompt_log_probs: true, return_prompt_top_n_logprobs: true }).field
    ).toBe("return_prompt_top_n_logprobs")
    expect(invalid({ top_n_logprobs: 2, return_prompt_top_n_logprobs: false }).why).toContain("contradicts")
    expect(invalid({ return_prompt_top_n_logprobs: "yes" }).why).toContain("boolean")
  })

  it("never accepts num_tokens_to_generate and num_tokens_total together", () => {
    const reason = invalid({ num_tokens_to_generate: 8, num_tokens_total: 64 })
    expect(reason.field).toBe("num_tokens_total")
    expect(reason.why).toContain("num_tokens_to_generate")
    expect(ok({ num_tokens_total: 64 }).num_tokens_total).toBe(64)
    expect(ok({ num_tokens_to_generate: 0, num_tokens_total: null }).num_tokens_to_generate).toBe(0)
  })

  const bad: ReadonlyArray<readonly [string, unknown]> = [
    ["temperature", -0.1],
    ["temperature", Number.NaN],
    ["temperature", Infinity],
    ["temperature", "0.7"],
    ["temperature", null],
    ["top_k", -1],
    ["top_k", 1.5],
    ["top_k", 2 ** 53],
    ["top_p", 1.01],
    ["top_p", -0.5],
    ["top_p", Number.NaN],
    ["num_tokens_to_generate", -1],
    ["num_tokens_to_generate", 3.5],
    ["num_tokens_to_generate", "8"],
    ["num_tokens_total", -2],
    ["termination_id", 1.5],
    ["termination_id", "2"],
    ["top_n_logprobs", -1],
    ["top_n_logprobs", 0.5],
    ["stop_words", "stop"],
    ["stop_words", ["a", 1]],
    ["streaming_interval", 0],
    ["streaming_interval", 1.5],
    ["streaming_interval", true],
    ["streaming_interval", null],
    ["return_log_probs", 1],
    ["skip_prompt_log_probs", "false"],
    ["return_segments", null],
    ["add_BOS", 0],
    ["detokenize_stop_sequence", "true"],
    ["return_prompt_tokens", 1],
    ["streaming", "yes"],
    ["do_kv_handoff", {}]
  ]
  for (const [field, value] of bad) {
    it(`refuses ${field} = ${typeof value === "string" ? JSON.stringify(value) : String(value)}, naming the field`, () => {
      const reason = invalid({ [field]: value })
      expect(reason.field).toBe(field)
      expect(reason.why.length).toBeGreaterThan(0)
    })
  }

  it("accepts the edges of each range", () => {
    const params = ok({
      temperature: 0,
      top_p: 1,
      top_k: 50,
      termination_id: -1,
      num_tokens_to_generate: null,
      stop_words: [],
      streaming_interval: 16
    })
    expect(params).toMatchObject({ temperature: 0, top_p: 1, top_k: 50, termination_id: -1, stop_words: [] })
  })

  it("treats undefined as not given", () => {
    expect(ok({ temperature: undefined, stop_words: undefined, extra: { seed: undefined } })).toEqual(SamplingParams.defaults)
    expect(ok({ extra: undefined })).toEqual(SamplingParams.defaults)
  })

  it("refuses a non-object", () => {
    for (const input of [3, "x", [1], true]) expect(invalid(input).field).toBe("sampling_params")
  })

  it("does not compile an unknown key, and refuses it at run time naming the field it resembles", () => {
    // Type-level checks (`tsc -b` fails if any of these compiles again).
    // @ts-expect-error: a typo
    const typo = SamplingParams.make({ temprature: 0.5 })
    // @ts-expect-error: OpenAI's name, not Megatron's
    const foreign = SamplingParams.make({ max_tokens: 16 })
    // @ts-expect-error: an engine parameter at the top level instead of in `extra`
    const seed = SamplingParams.make({ temperature: 0.5, seed: 7 })
    // @ts-expect-error: extra is a map, not a value
    SamplingParams.make({ extra: 7 })

    const unknown = (made: Result.Result<SamplingParams.SamplingParams, ProtocolError>) => {
      if (Result.isSuccess(made)) throw new Error("expected a failure")
      const reason = made.failure.reason
      if (reason._tag !== "UnknownSamplingParam") throw new Error(`expected UnknownSamplingParam, got ${reason._tag}`)
      return reason
    }
    expect(unknown(typo)).toMatchObject({ field: "temprature", didYouMean: "temperature" })
    expect(unknown(typo).message).toBe(
      "invalid sampling params: \"temprature\" is not a SamplingParams field (did you mean temperature?); " +
        "to send an extra engine parameter on purpose, put it in `extra`"
    )
    expect(unknown(foreign)).toMatchObject({ field: "max_tokens", didYouMean: "num_tokens_to_generate" })
    expect(unknown(seed)).toMatchObject({ field: "seed", didYouMean: null })
    expect(unknown(seed).message).not.toContain("did you mean")

    // A variable is not checked for excess keys by TypeScript once it has a known one: run time catches it.
    const fromElsewhere = { temperature: 0.5, top_n_logprob: 2 }
    expect(unknown(SamplingParams.make(fromElsewhere))).toMatchObject({ field: "top_n_logprob", didYouMean: "top_n_logprobs" })
    // Case and separators do not hide a field; a near miss is named even with a value left undefined.
    expect(unknown(SamplingParams.make(JSON.parse("{\"topK\": 5}")))).toMatchObject({ didYouMean: "top_k" })
    expect(unknown(SamplingParams.make(JSON.parse("{\"add_bos\": true}")))).toMatchObject({ didYouMean: "add_BOS" })
    expect(unknown(SamplingParams.make({ extras: { seed: 1 } } as never))).toMatchObject({ didYouMean: "extra" })
    expect(unknown(SamplingParams.make({ stream: true } as never))).toMatchObject({ didYouMean: "streaming" })
    expect(unknown(SamplingParams.make({ temprature: undefined } as never)).field).toBe("temprature")
    // Nothing close: no guess.
    expect(unknown(SamplingParams.make({ tk: 1 } as never)).didYouMean).toBe(null)
    // The key is named before any other check: a typo next to a bad value is reported as the typo.
    expect(unknown(SamplingParams.make({ top_k: -1, temprature: 0.5 } as never)).field).toBe("temprature")
  })

  it("refuses an extra key that is a known field: it goes at the top level", () => {
    for (const key of Object.keys(SamplingParams.defaults)) {
      const reason = invalid({ extra: { [key]: SamplingParams.defaults[key] } })
      expect(reason.field).toBe(`extra.${key}`)
      expect(reason.why).toContain("top level")
    }
    // Even when its value would be the default, or left out: the key is the mistake.
    expect(invalid({ temperature: 0.5, extra: { temperature: 0.5 } }).field).toBe("extra.temperature")
    expect(invalid({ extra: { top_p: undefined } }).field).toBe("extra.top_p")
  })

  it("refuses an extra that is not a plain object", () => {
    for (const extra of [7, "seed=7", [["seed", 7]], null, new Map([["seed", 7]]), new Date(0)]) {
      const reason = invalid({ extra })
      expect(reason.field).toBe("extra")
      expect(reason.why).toContain("object")
    }
  })

  it("takes an extra key named extra, and keys that only resemble known fields, as written", () => {
    const params = ok({ extra: { extra: 1, temprature: 0.5 } })
    expect(Object.keys(params)).toEqual([...WIRE_ORDER, "extra", "temprature"])
    expect(params.temperature).toBe(1)
  })

  it("lets extra keys ride along after the known ones, in input order", () => {
    const params = ok({ extra: { seed: 7, detokenize_generations: false, meta: { a: [1, "x"] } }, temperature: 0.2 })
    expect(Object.keys(params)).toEqual([...WIRE_ORDER, "seed", "detokenize_generations", "meta"])
    expect(params.seed).toBe(7)
    const decoded = Msgpack.decode(Msgpack.encode(params)) as Record<string, unknown>
    expect(Object.keys(decoded)).toEqual([...WIRE_ORDER, "seed", "detokenize_generations", "meta"])
  })

  it("refuses an extra value msgpack cannot hold", () => {
    const reason = failure({ extra: { seed: 1, callback: () => 1 } }).reason
    expect(reason._tag).toBe("NotEncodable")
    if (reason._tag === "NotEncodable") expect(reason.what).toBe("sampling_params.extra.callback")

    const nested = failure({ extra: { meta: { when: new Date(0) } } }).reason
    expect(nested._tag).toBe("NotEncodable")
    if (nested._tag === "NotEncodable") expect(nested.path).toBe("when")

    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    expect(failure({ extra: { meta: cycle } }).reason._tag).toBe("NotEncodable")
    expect(failure({ extra: { big: 2n ** 64n } }).reason._tag).toBe("NotEncodable")
  })

  it("refuses extra keys the Python side could not set as attributes", () => {
    for (const key of ["__class__", "_private", "0", "42", "has space", "x-y", "", "serialize", "add_attributes"]) {
      expect(invalid({ extra: JSON.parse(JSON.stringify({ [key]: 1 })) }).field).toBe(`extra.${key}`)
    }
    // `__proto__` written as an own key (as JSON.parse does) is refused too, not turned into a prototype.
    expect(invalid({ extra: JSON.parse("{\"__proto__\": {\"x\": 1}}") }).field).toBe("extra.__proto__")
  })

  it("returns a fresh object and never touches the input", () => {
    const stop_words = ["END"]
    const input = { temperature: 0.3, stop_words, top_n_logprobs: 2, extra: { extra_flag: true } }
    const snapshot = structuredClone(input)
    const params = ok(input)
    expect(input).toEqual(snapshot)
    expect(params.stop_words).toEqual(["END"])
    stop_words.push("later")
    expect(params.stop_words).toEqual(["END"])
  })

  it.prop("accepts every value of the Schema (through toInput) and gives it back unchanged", [SamplingParams.SamplingParams], ([p]) => {
    const made = ok(SamplingParams.toInput(p))
    expect(made).toEqual(p)
    expect(Object.keys(made)).toEqual(Object.keys(p))
    expect(ok(SamplingParams.toInput(made))).toEqual(made)
  })

  it("builds a value the Schema decodes, for any valid partial input", () => {
    const input = fc.record(
      {
        temperature: fc.double({ min: 0, max: 4, noNaN: true }),
        top_k: fc.nat(1000),
        top_p: fc.double({ min: 0, max: 1, noNaN: true }),
        skip_prompt_log_probs: fc.boolean(),
        num_tokens_to_generate: fc.option(fc.nat(), { nil: null }),
        termination_id: fc.option(fc.integer(), { nil: null }),
        top_n_logprobs: fc.nat(20),
        stop_words: fc.option(fc.array(fc.string()), { nil: null }),
        streaming: fc.boolean(),
        streaming_interval: fc.integer({ min: 1, max: 64 }),
        extra: fc.record({ seed: fc.nat() })
      },
      { requiredKeys: [] }
    )
    const decode = Schema.decodeUnknownSync(SamplingParams.SamplingParams)
    fc.assert(
      fc.property(input, (i) => {
        const made = ok(i)
        expect(Object.keys(made).slice(0, WIRE_ORDER.length)).toEqual(WIRE_ORDER)
        expect(decode(made)).toEqual(made)
      })
    )
  })
})

describe("SamplingParams.toInput", () => {
  it("moves the wire map's extra keys into extra, in order, and leaves the known fields", () => {
    const wire = ok({ temperature: 0.5, extra: { seed: 3, tag: "x" } })
    const input = SamplingParams.toInput(wire)
    expect(input.extra).toEqual({ seed: 3, tag: "x" })
    expect(Object.keys(input.extra!)).toEqual(["seed", "tag"])
    expect(input.temperature).toBe(0.5)
    expect(Object.keys(input)).toEqual([...WIRE_ORDER, "extra"])
    expect(SamplingParams.toInput(SamplingParams.defaults)).not.toHaveProperty("extra")
  })
})

describe("SamplingParams.withStreaming", () => {
  it("forces streaming on without touching the input or the key order", () => {
    const params = ok({ temperature: 0.5, extra: { seed: 3 } })
    const streaming = SamplingParams.withStreaming(params)
    expect(streaming.streaming).toBe(true)
    expect(params.streaming).toBe(false)
    expect(Object.keys(streaming)).toEqual(Object.keys(params))
    expect({ ...streaming, streaming: false }).toEqual(params)
    expect(SamplingParams.withStreaming(streaming)).toBe(streaming)
  })
})

describe("SamplingParams (Schema)", () => {
  const decode = Schema.decodeUnknownResult(SamplingParams.SamplingParams)

  it("decodes what the Python peer sends, extra keys included", () => {
    const wire = Msgpack.decode(Buffer.from(SUBMIT_TEXT_FRAME0, "hex")) as ReadonlyArray<unknown>
    const decoded = decode({ ...(wire[2] as object), seed: 5 })
    expect(Result.isSuccess(decoded) && decoded.success.seed).toBe(5)
    expect(Result.isSuccess(decoded) && decoded.success.num_tokens_to_generate).toBe(32)
  })

  it("checks the cross-field rules", () => {
    expect(Result.isFailure(decode({ ...SamplingParams.defaults, num_tokens_to_generate: 1, num_tokens_total: 2 })))
      .toBe(true)
    expect(Result.isFailure(decode({ ...SamplingParams.defaults, top_n_logprobs: 2 }))).toBe(true)
    expect(Result.isSuccess(decode({ ...SamplingParams.defaults, top_n_logprobs: 2, return_prompt_top_n_logprobs: true })))
      .toBe(true)
  })

  it("refuses a missing known field", () => {
    const { streaming_interval: _, ...rest } = SamplingParams.defaults
    expect(Result.isFailure(decode(rest))).toBe(true)
  })
})

describe("frame 0 as the Python client writes it (sampling_params.json, Megatron's SamplingParams and Python's msgpack)", () => {
  interface Vector {
    readonly name: string
    readonly message: "SubmitRequest" | "SubmitRequestWithKv"
    readonly request_id: number
    readonly input: Record<string, unknown>
    readonly kv_meta: Record<string, unknown> | null
    readonly frame0_hex: string
  }
  const vectors = readFixture<{ readonly vectors: ReadonlyArray<Vector> }>("sampling_params.json").vectors

  const frame0 = (v: Vector, samplingParams: SamplingParams.SamplingParams): string => {
    const frames = Result.getOrThrow(
      v.message === "SubmitRequest"
        ? Messages.Client.encode({
          _tag: "SubmitRequest",
          requestId: v.request_id,
          samplingParams,
          mediaDescriptor: null,
          prompt: [1, 2, 3],
          blockHashes: null,
          media: null,
          offloadParams: null
        })
        : Messages.Client.encode({
          _tag: "SubmitRequestWithKv",
          requestId: v.request_id,
          samplingParams,
          kvMeta: v.kv_meta!,
          prompt: [1, 2, 3],
          srcBlockIds: [4]
        })
    )
    return hex(frames[0]!)
  }

  it("has whole-number floats among its vectors (temperature 1.0, top_p 0.0 and 1.0)", () => {
    expect(vectors.map((v) => v.frame0_hex).join()).toContain("ab74656d7065726174757265cb3ff0000000000000")
    expect(vectors.length).toBeGreaterThanOrEqual(8)
  })

  for (const v of vectors) {
    it(`${v.name}: the same bytes, float fields as float64 even when whole`, () => {
      const params = ok(v.input)
      expect(frame0(v, params)).toBe(v.frame0_hex)
      // What a peer decodes encodes back to the same bytes.
      const decoded = Result.getOrThrow(Messages.Client.decode([Buffer.from(v.frame0_hex, "hex"), ...restOf(v)]))
      expect(frame0(v, (decoded as { readonly samplingParams: SamplingParams.SamplingParams }).samplingParams)).toBe(v.frame0_hex)
    })
  }

  it("the streaming vector is what withStreaming gives", () => {
    const v = vectors.find((x) => x.input.streaming === true)!
    const { streaming: _, ...input } = v.input
    expect(frame0(v, SamplingParams.withStreaming(ok(input)))).toBe(v.frame0_hex)
  })

  it("only temperature and top_p are floats: the schema's numbers that are not integers", () => {
    const floats = Object.entries(SamplingParams.KnownFields.fields)
      .filter(([, schema]) => schema.ast._tag === "Number" && !JSON.stringify(schema.ast.checks?.map((c) => c.annotations)).includes("isInt"))
      .map(([key]) => key)
    expect(floats).toEqual(["temperature", "top_p"])
    // An extra map with a key Python's unpackb refuses never goes out.
    const refused = SamplingParams.make({ extra: { meta: new Map([[1, "x"]]) } })
    expect(Result.isFailure(refused) && refused.failure.reason).toMatchObject({
      _tag: "NotEncodable",
      what: "sampling_params.extra.meta"
    })
    // An extra key is not declared: a whole number there goes out as an integer (JavaScript cannot tell 1.0 from 1).
    expect(frame0(vectors[0]!, ok({ extra: { min_p: 1 } }))).toContain("a56d696e5f7001")
  })
})

/** Frames after frame 0 that make a vector's message whole (their content is not under test). */
const restOf = (v: { readonly message: string }): Array<Uint8Array> =>
  v.message === "SubmitRequest"
    ? [Msgpack.encode([1, 2, 3]), Msgpack.encode(null), Msgpack.encode(null), Msgpack.encode(null)]
    : [Msgpack.encode([1, 2, 3]), Msgpack.encode([4])]
