import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import * as Msgpack from "../src/Msgpack.ts"
import type { ProtocolError } from "../src/ProtocolError.ts"
import * as Reply from "../src/Reply.ts"

/** frames.json `engine_reply`, frame 1 (packed by the Python peer). */
const ENGINE_REPLY_FRAME1 =
  "8aaa726571756573745f696407a6737461747573a9434f4d504c45544544b067656e6572617465645f746f6b656e7393050607ae" +
  "67656e6572617465645f74657874a3616263ad70726f6d70745f6c656e67746828a474746674cb3f8999999999999aa474706f74" +
  "92cb3f50624dd2f1a9fccb3f60624dd2f1a9fca66576656e747390ad70726f6d70745f746f6b656e7392a674656e736f72920102" +
  "b2756e6b6e6f776e5f6675747572655f6b657981a66e65737465649301c0a178"

/** frames.json `engine_reply_partial`, frame 1. */
const ENGINE_REPLY_PARTIAL_FRAME1 = "82aa726571756573745f696407aa6e65775f746f6b656e7392090a"

const ok = (map: unknown): Reply.DynamicInferenceRequest => {
  const result = Reply.decodeReply(map)
  if (Result.isFailure(result)) throw new Error(result.failure.message)
  return result.success
}

const malformed = (map: unknown): { readonly messageTag: string | null; readonly frame: number; readonly why: string } => {
  const result = Reply.decodeReply(map)
  if (Result.isSuccess(result)) throw new Error("expected a failure")
  const reason = (result.failure as ProtocolError).reason
  if (reason._tag !== "MalformedFrame") throw new Error(`expected MalformedFrame, got ${reason._tag}`)
  return reason
}

const fromSchema = Schema.decodeUnknownSync(Reply.DynamicInferenceRequestFromMap)
const toMap = Schema.encodeSync(Reply.DynamicInferenceRequestFromMap)

/** A tensor in the binary form newer engines send: `{dtype, shape, data}` with little-endian bytes. */
const binary = (dtype: string, shape: ReadonlyArray<number>, bytes: ArrayBufferView) => [
  "tensor",
  { dtype, shape, data: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) }
]

describe("Reply.decodeReply", () => {
  it("decodes the Python peer's reply, keeping the unknown key and unwrapping prompt_tokens", () => {
    const map = Msgpack.decode(Buffer.from(ENGINE_REPLY_FRAME1, "hex"))
    const reply = ok(map)
    expect(reply).toBeInstanceOf(Reply.DynamicInferenceRequest)
    expect(reply.request_id).toBe(7)
    expect(reply.status).toBe("COMPLETED")
    expect(reply.generated_tokens).toEqual([5, 6, 7])
    expect(reply.generated_text).toBe("abc")
    expect(reply.prompt_length).toBe(40)
    expect(reply.ttft).toBe(0.0125)
    expect(reply.tpot).toEqual([0.001, 0.002])
    expect(reply.events).toEqual([])
    expect(reply.prompt_tokens).toEqual([1, 2])
    expect(reply.extra).toEqual({ unknown_future_key: { nested: [1, null, "x"] } })
    expect(reply.latency).toBeUndefined()
  })

  it("gives the same value as the Schema path, and encodes back to the wire map", () => {
    const map = Msgpack.decode(Buffer.from(ENGINE_REPLY_FRAME1, "hex")) as Record<string, unknown>
    const fast = ok(map)
    const slow = fromSchema(map)
    expect(fast).toStrictEqual(slow)
    expect(Schema.is(Reply.DynamicInferenceRequest)(fast)).toBe(true)
    expect(toMap(fast)).toEqual({ ...map, prompt_tokens: [1, 2] })
    expect(String(fast)).toContain("DynamicInferenceRequest(")
  })

  it("takes a reply with no known field at all, or only some", () => {
    expect(ok({}).extra).toEqual({})
    expect(ok({ request_id: 3 }).request_id).toBe(3)
    expect(ok({ status: null }).status).toBe(null)
  })

  it("decodes every status", () => {
    for (const status of Reply.Status.literals) expect(ok({ status }).status).toBe(status)
  })

  it("refuses a value that is not a map, as frame 1", () => {
    for (const value of [null, [1, 2], "reply", 3, new Uint8Array([1]), new Map([["request_id", 1]])]) {
      const reason = malformed(value)
      expect(reason.frame).toBe(1)
      expect(reason.messageTag).toBe("EngineReply")
    }
  })

  const bad: ReadonlyArray<readonly [string, unknown]> = [
    ["request_id", -1],
    ["request_id", "7"],
    ["status", "DONE"],
    ["status", 4],
    ["prompt", 5],
    ["generated_tokens", [1, -2]],
    ["generated_tokens", [1, 1.5]],
    ["generated_tokens", "abc"],
    ["prompt_tokens", ["tensor", [1, "x"]]],
    ["generated_log_probs", [0.5, "x"]],
    ["generated_top_n_logprobs", [{ a: "x" }]],
    ["tpot", 0.1],
    ["events", [1]],
    ["sampling_params", [1]],
    ["policy_epoch", [[0, 1.5]]],
    ["num_cached_tokens", -3],
    ["payload_offloaded", "no"],
    ["latency", "1s"]
  ]
  for (const [field, value] of bad) {
    it(`refuses ${field} = ${JSON.stringify(value)}, naming the field`, () => {
      const reason = malformed({ request_id: 1, [field]: value })
      expect(reason.why).toContain(`field ${field} `)
      expect(Result.isFailure(Schema.decodeUnknownResult(Reply.DynamicInferenceRequestFromMap)({ [field]: value })))
        .toBe(true)
    })
  }

  it("unwraps every top-level tensor and ndarray wrapper, known keys and unknown ones", () => {
    const reply = ok({
      generated_log_probs: ["ndarray", { data: [-0.5, -1.25], dtype: "float32" }],
      routing_indices: ["ndarray", { data: [[[1, 2]], [[3, 4]]], dtype: "int32" }],
      remaining_prompt_tokens: ["tensor", [4, 5]],
      not_a_wrapper: ["tensors", [1]],
      three_long: ["tensor", [1], 2]
    })
    expect(reply.generated_log_probs).toEqual([-0.5, -1.25])
    expect(reply.extra).toEqual({
      routing_indices: [[[1, 2]], [[3, 4]]],
      remaining_prompt_tokens: [4, 5],
      not_a_wrapper: ["tensors", [1]],
      three_long: ["tensor", [1], 2]
    })
  })

  it("decodes the binary tensor form of newer engines", () => {
    const bf16 = (x: number) => new Uint32Array(new Float32Array([x]).buffer)[0]! >>> 16
    const reply = ok({
      prompt_tokens: binary("torch.int64", [3], new BigInt64Array([1n, 2n, 125416n])),
      generated_log_probs: binary("torch.float32", [2], new Float32Array([-0.5, -2])),
      prompt_log_probs: binary("bfloat16", [2], new Uint16Array([bf16(-0.25), bf16(-3)])),
      a: binary("torch.float16", [2, 2], new Uint16Array([0x3c00, 0xc000, 0x3555, 0x7c00])),
      b: binary("torch.bool", [3], new Uint8Array([1, 0, 1])),
      c: binary("torch.int32", [2, 0], new Int32Array(0)),
      d: binary("torch.float64", [], new Float64Array([0.1])),
      e: binary("torch.int64", [1], new BigInt64Array([2n ** 60n])),
      short: binary("torch.int32", [3], new Int32Array([1, 2])),
      strange: binary("torch.complex64", [1], new Float32Array([1, 2]))
    })
    expect(reply.prompt_tokens).toEqual([1, 2, 125416])
    expect(reply.generated_log_probs).toEqual([-0.5, -2])
    expect(reply.prompt_log_probs).toEqual([-0.25, -3])
    expect(reply.extra.a).toEqual([[1, -2], [0.333251953125, Infinity]])
    expect(reply.extra.b).toEqual([true, false, true])
    expect(reply.extra.c).toEqual([[], []])
    expect(reply.extra.d).toBe(0.1)
    expect(reply.extra.e).toEqual([2n ** 60n])
    // Not decodable as the binary form: left as it came.
    expect((reply.extra.short as Array<unknown>)[0]).toBe("tensor")
    expect((reply.extra.strange as Array<unknown>)[0]).toBe("tensor")
  })

  it("keeps an unknown __proto__ key as a plain own key", () => {
    // As JSON.parse builds it (msgpackr's decoder renames the key, so this is the only way to get one).
    const map = JSON.parse("{\"request_id\": 1, \"__proto__\": {\"polluted\": true}}")
    const reply = ok(map)
    expect(Object.getPrototypeOf(reply.extra)).toBe(Object.prototype)
    expect(Object.keys(reply.extra)).toContain("__proto__")
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(fromSchema(map).extra).toEqual(reply.extra)
    expect(Object.keys(toMap(reply))).toContain("__proto__")
  })

  it.prop("agrees with the Schema path on every instance of the class", [Reply.DynamicInferenceRequest], ([request]) => {
    const map = toMap(request)
    const fast = ok(map)
    expect(fast).toStrictEqual(fromSchema(map))
    // toEqual: the arbitrary builds its maps without a prototype, decoding with one.
    expect(fast).toEqual(request)
  })
})

describe("Reply.withLatency", () => {
  it("sets latency on a copy", () => {
    const reply = ok({ request_id: 2, unknown: 1 })
    const timed = Reply.withLatency(reply, 0.125)
    expect(timed.latency).toBe(0.125)
    expect(timed.extra).toEqual({ unknown: 1 })
    expect(timed).toBeInstanceOf(Reply.DynamicInferenceRequest)
    expect(reply.latency).toBeUndefined()
  })
})

describe("Reply.PartialReply", () => {
  it("decodes the Python peer's partial body", () => {
    const map = Msgpack.decode(Buffer.from(ENGINE_REPLY_PARTIAL_FRAME1, "hex"))
    expect(Schema.decodeUnknownSync(Reply.PartialReply)(map)).toEqual({ request_id: 7, new_tokens: [9, 10] })
    const fast = Reply.decodePartialReply(map)
    expect(Result.isSuccess(fast) && fast.success).toEqual({ request_id: 7, new_tokens: [9, 10] })
  })

  it("carries new_log_probs, as Megatron main's engine sends them with return_log_probs", () => {
    const map = Msgpack.decode(Msgpack.encode({ request_id: 7, new_tokens: [9, 10], new_log_probs: [-0.25, -1.5] }))
    const fast = Reply.decodePartialReply(map)
    expect(Result.isSuccess(fast) && fast.success).toEqual({ request_id: 7, new_tokens: [9, 10], new_log_probs: [-0.25, -1.5] })
    // None (older engines, or log probs not asked for): absent.
    const none = Reply.decodePartialReply({ request_id: 7, new_tokens: [9], new_log_probs: null })
    expect(Result.isSuccess(none) && none.success).toEqual({ request_id: 7, new_tokens: [9] })
  })

  it("refuses a malformed partial body, as frame 1", () => {
    for (const value of [null, [7, [1]], { request_id: -1, new_tokens: [] }, { request_id: 1, new_tokens: [0.5] }, { request_id: 1 }, { request_id: 1, new_tokens: [1], new_log_probs: ["a"] }, { request_id: 1, new_tokens: [1], new_log_probs: 0.5 }]) {
      const result = Reply.decodePartialReply(value)
      expect(Result.isFailure(result)).toBe(true)
      if (Result.isFailure(result)) {
        expect(result.failure.reason._tag).toBe("MalformedFrame")
        if (result.failure.reason._tag === "MalformedFrame") expect(result.failure.reason.frame).toBe(1)
      }
      expect(Result.isFailure(Schema.decodeUnknownResult(Reply.PartialReply)(value))).toBe(true)
    }
  })

  it.prop("decodes every value of its Schema", [Reply.PartialReply], ([partial]) => {
    const result = Reply.decodePartialReply(Msgpack.decode(Msgpack.encode(partial)))
    expect(Result.isSuccess(result) && result.success).toEqual(partial)
  })
})

describe("Reply.ReplyMap", () => {
  it("is a map of anything", () => {
    expect(Result.isSuccess(Schema.decodeUnknownResult(Reply.ReplyMap)({ a: 1, b: [null] }))).toBe(true)
    expect(Result.isFailure(Schema.decodeUnknownResult(Reply.ReplyMap)([1]))).toBe(true)
  })
})
