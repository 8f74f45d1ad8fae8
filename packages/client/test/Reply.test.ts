/**
 * `Reply.requestOf`: the request a reply is about, whichever dialect sent it. A core_v0.16 record
 * holds one request per checkpoint (an evicted request continues as a new one holding only what
 * it generated since), merged as Megatron's `DynamicInferenceRequestRecord.merge()` merges them
 * (core_v0.16.0 `inference_request.py`); any other reply is itself.
 */
import { describe, expect, it } from "@effect/vitest"
import { Reply } from "../src/index.ts"

const checkpoint = (generated: Array<number>, text: string | null, status: string) => ({
  request_id: 4,
  prompt: "Hello",
  sampling_params: { num_tokens_to_generate: 5 },
  generated_text: text,
  generated_tokens: generated,
  generated_log_probs: generated.map((t) => -t / 10),
  generated_top_n_logprobs: null,
  generated_length: null,
  tpot: generated.map(() => 0.01),
  status,
  events: [{ type: status }]
})

describe("Reply.requestOf", () => {
  it("a record of one request: that request, with the record's latency", () => {
    const request = checkpoint([1, 2], "ab", "COMPLETED")
    expect(Reply.requestOf({ requests: [request], latency: 0.5 })).toEqual({ ...request, latency: 0.5 })
  })

  it("a record of checkpoints: merged as Megatron merges them", () => {
    const record = {
      requests: [checkpoint([1, 2], "ab", "ACTIVE_AND_GENERATING_TOKENS"), { ...checkpoint([3, 4, 5], "cde", "COMPLETED"), prompt: null }],
      latency: 0.75
    }
    expect(Reply.requestOf(record)).toMatchObject({
      request_id: 4,
      prompt: "Hello",
      sampling_params: { num_tokens_to_generate: 5 },
      generated_tokens: [1, 2, 3, 4, 5],
      generated_length: 5,
      generated_log_probs: [-0.1, -0.2, -0.3, -0.4, -0.5],
      generated_top_n_logprobs: null,
      tpot: [0.01, 0.01, 0.01, 0.01, 0.01],
      generated_text: "abcde",
      status: "COMPLETED",
      events: [{ type: "ACTIVE_AND_GENERATING_TOKENS" }, { type: "COMPLETED" }],
      latency: 0.75
    })
    // A checkpoint without text: no text (Python's join raises TypeError, merge gives None).
    const untexted = { requests: [checkpoint([1], "a", "X"), checkpoint([2], null, "COMPLETED")], latency: 1 }
    expect((Reply.requestOf(untexted) as Reply.RawReply).generated_text).toBeNull()
  })

  it("any other reply is returned as it is", () => {
    const reply = { ...checkpoint([1], "a", "COMPLETED"), latency: 0.1 }
    expect(Reply.requestOf(reply)).toBe(reply)
    // A map with both is a request that happens to have a `requests` key, not a record.
    const odd = { ...reply, requests: [reply] }
    expect(Reply.requestOf(odd)).toBe(odd)
    const notMaps = { requests: [1, 2], latency: 0.1 }
    expect(Reply.requestOf(notMaps)).toBe(notMaps)
  })
})
