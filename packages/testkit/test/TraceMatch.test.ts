import { describe, expect, it } from "@effect/vitest"
import { Msgpack } from "@mcore-effect/protocol"
import { TraceMatch } from "../src/index.ts"

const replyHead = Msgpack.encode([21, 0])
const reply = (body: Uint8Array) => TraceMatch.decode("coordinator->client", [replyHead, body])

describe("TraceMatch", () => {
  it("compares decoded values: float width and map key order do not matter", () => {
    // {"x": 0.5} with 0.5 as float32 (0xca), as another packer may write it; ours writes float64.
    const float32 = Uint8Array.of(0x81, 0xa1, 0x78, 0xca, 0x3f, 0x00, 0x00, 0x00)
    expect(TraceMatch.difference(reply(float32), reply(Msgpack.encode({ x: 0.5 })))).toBeUndefined()
    expect(TraceMatch.difference(reply(Msgpack.encode({ a: 1, b: [2] })), reply(Msgpack.encode({ b: [2], a: 1 }))))
      .toBeUndefined()
  })

  it("ignores the volatile reply keys by default, and only the ones asked for otherwise", () => {
    const a = Msgpack.encode({ generated_tokens: [1], ttft: 0.1, uid: "x", events: [{ timestamp: 1 }] })
    const b = Msgpack.encode({ generated_tokens: [1], ttft: 0.2, uid: "y", events: [{ timestamp: 2 }] })
    expect(TraceMatch.difference(reply(a), reply(b))).toBeUndefined()
    const strict = { ignoreReplyKeys: ["uid", "events"] }
    expect(TraceMatch.difference(
      TraceMatch.decode("coordinator->client", [replyHead, a], strict),
      TraceMatch.decode("coordinator->client", [replyHead, b], strict)
    )).toEqual({ path: "reply.ttft", why: "expected 0.1, got 0.2" })
  })

  it("locates the first difference: an element, a missing key, an extra key, another message", () => {
    expect(TraceMatch.difference(reply(Msgpack.encode({ t: [1, 2, 3] })), reply(Msgpack.encode({ t: [1, 5, 3] }))))
      .toEqual({ path: "reply.t[1]", why: "expected 2, got 5" })
    expect(TraceMatch.difference(reply(Msgpack.encode({ t: 1, u: 2 })), reply(Msgpack.encode({ t: 1 }))))
      .toEqual({ path: "reply.u", why: "missing" })
    expect(TraceMatch.difference(reply(Msgpack.encode({ t: 1 })), reply(Msgpack.encode({ t: 1, v: true }))))
      .toEqual({ path: "reply.v", why: "not expected, got true" })
    const abort = TraceMatch.decode("client->coordinator", [Msgpack.encode([23, 7])])
    const pause = TraceMatch.decode("client->coordinator", [Msgpack.encode([40])])
    expect(TraceMatch.difference(abort, pause)).toEqual({ path: "", why: "expected AbortRequest, got Pause" })
  })

  it("compares messages the codec refuses by their bytes, and never takes one for a decodable message", () => {
    const garbage = TraceMatch.decode("coordinator->client", [Uint8Array.of(0xc1)])
    expect(garbage._tag).toBe("Undecodable")
    expect(TraceMatch.difference(garbage, TraceMatch.decode("coordinator->client", [Uint8Array.of(0xc1)]))).toBeUndefined()
    expect(TraceMatch.difference(garbage, TraceMatch.decode("coordinator->client", [Uint8Array.of(0xc2)]))?.path).toBe("frames[0]")
    expect(TraceMatch.difference(garbage, reply(Msgpack.encode({})))).toBeDefined()
    expect(TraceMatch.groupOf(garbage)).toBe("undecodable")
    expect(TraceMatch.groupOf(reply(Msgpack.encode({})))).toBe("request 0")
    expect(TraceMatch.groupOf(TraceMatch.decode("coordinator->client", [Msgpack.encode([1])]))).toBe("ConnectAck")
  })

  it("matches the coordinator's ids as ids: renamed once, then held both ways for the whole replay", () => {
    const finalOf = (clientId: number, coordinatorId: number) =>
      TraceMatch.decode("coordinator->client", [
        Msgpack.encode([21, clientId]),
        Msgpack.encode({ request_id: coordinatorId, generated_tokens: [1] })
      ])
    const partialOf = (clientId: number, coordinatorId: number) =>
      TraceMatch.decode("coordinator->client", [
        Msgpack.encode([22, clientId]),
        Msgpack.encode({ request_id: coordinatorId, new_tokens: [1] })
      ])
    const ids = TraceMatch.renaming()
    // Recorded against a fresh coordinator (0, 1), observed against one that served 40 requests.
    expect(TraceMatch.difference(partialOf(0, 0), partialOf(0, 40), ids)).toBeUndefined()
    expect(TraceMatch.difference(finalOf(0, 0), finalOf(0, 40), ids)).toBeUndefined()
    expect(TraceMatch.difference(finalOf(1, 1), finalOf(1, 41), ids)).toBeUndefined()
    // Once paired, 0 stands for 40 and 40 for 0.
    expect(TraceMatch.difference(finalOf(0, 0), finalOf(0, 41), ids)).toEqual({
      path: "reply.request_id",
      why: "expected coordinator id 0 (seen as 40 earlier in this replay), got 41"
    })
    expect(TraceMatch.difference(finalOf(1, 2), finalOf(1, 40), ids)).toEqual({
      path: "reply.request_id",
      why: "expected coordinator id 2, got 40, which already stands for recorded id 0"
    })
    // The client's own id (frame 0) stays a literal.
    expect(TraceMatch.difference(finalOf(0, 0), finalOf(5, 40), ids)).toEqual({ path: "requestId", why: "expected 0, got 5" })
    // A message that differs elsewhere pairs nothing.
    const other = TraceMatch.decode("coordinator->client", [
      Msgpack.encode([21, 2]),
      Msgpack.encode({ request_id: 42, generated_tokens: [2] })
    ])
    expect(TraceMatch.difference(finalOf(2, 2), other, ids)?.path).toBe("reply.generated_tokens[0]")
    expect(TraceMatch.difference(finalOf(3, 3), finalOf(3, 42), ids)).toBeUndefined()
    // Told so, ids are literals again.
    expect(TraceMatch.difference(finalOf(0, 0), finalOf(0, 40), TraceMatch.renaming(), { coordinatorIds: [] })).toEqual({
      path: "reply.request_id",
      why: "expected 0, got 40"
    })
  })
})
