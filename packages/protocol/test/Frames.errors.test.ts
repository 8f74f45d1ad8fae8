import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import { Frames, Messages, MessageSpec, Msgpack, ProtocolError, SamplingParams } from "../src/index.ts"

const pack = (value: unknown) => Msgpack.encode(value)
const nil = pack(null)

const failureOf = <A>(result: Result.Result<A, ProtocolError.ProtocolError>): ProtocolError.ProtocolError => {
  if (Result.isSuccess(result)) throw new Error(`expected a failure, got ${JSON.stringify(result.success)}`)
  return result.failure
}

/** A valid five-frame SUBMIT to break in various ways. */
const params = Result.getOrThrow(
  Messages.Client.encode({
    _tag: "SubmitRequest",
    requestId: 1,
    samplingParams: SamplingParams.defaults,
    mediaDescriptor: null,
    prompt: [1, 2, 3],
    blockHashes: null,
    media: null,
    offloadParams: null
  })
)

describe("decoding checks the arity first", () => {
  it.each([1, 2, 3, 4, 6, 9])("a SUBMIT of %i frames is an ArityMismatch", (count) => {
    const frames = Array.from({ length: count }, (_, i) => params[i] ?? nil)
    const error = failureOf(Messages.Client.decode(frames))
    expect(error.reason).toMatchObject({ _tag: "ArityMismatch", messageTag: "SubmitRequest", expected: 5, actual: count })
    expect(error.message).toBe(`ArityMismatch: SubmitRequest takes 5 frame(s), got ${count}`)
  })

  it.each([1, 2, 4])("a KV handoff of %i frames is an ArityMismatch", (count) => {
    const head = pack([24, 3, {}, {}])
    const frames = [head, ...Array.from({ length: count - 1 }, () => pack([1]))]
    expect(failureOf(Messages.Client.decode(frames)).reason).toMatchObject({
      _tag: "ArityMismatch",
      expected: 3,
      actual: count
    })
  })

  it.each([1, 3])("a reply of %i frames is an ArityMismatch", (count) => {
    const frames = [pack([21, 7]), ...Array.from({ length: count - 1 }, () => pack({}))]
    expect(failureOf(Messages.Coordinator.decode(frames)).reason).toMatchObject({
      _tag: "ArityMismatch",
      messageTag: "EngineReply",
      expected: 2
    })
  })

  it("arity is checked before the metadata: a 4-frame SUBMIT with a bad frame 0 tail is still ArityMismatch", () => {
    const frames = [pack([20, "not an id", 5, 6]), nil, nil, nil]
    expect(failureOf(Messages.Client.decode(frames)).reason._tag).toBe("ArityMismatch")
  })

  it("a batched engine reply must have one body per entry", () => {
    const frames = [pack([21, [[1, false], [2, true]]]), pack({ request_id: 1 })]
    expect(failureOf(Messages.Engine.decode(frames)).reason).toMatchObject({
      _tag: "ArityMismatch",
      messageTag: "EngineReplyBatch",
      expected: 3,
      actual: 2
    })
  })
})

describe("malformed frames are typed, with the frame and the reason", () => {
  it("no frames at all", () => {
    expect(failureOf(Messages.Client.decode([])).reason).toMatchObject({ _tag: "MalformedFrame", frame: 0 })
  })

  it("frame 0 that is not msgpack", () => {
    const reason = failureOf(Messages.Client.decode([new Uint8Array([0xc1])])).reason
    expect(reason).toMatchObject({ _tag: "MalformedFrame", frame: 0 })
  })

  it("frame 0 with trailing bytes", () => {
    const reason = failureOf(Messages.Client.decode([new Uint8Array([0x91, 0x00, 0x00])])).reason
    expect(reason).toMatchObject({ _tag: "MalformedFrame", frame: 0 })
  })

  it("frame 0 that is not an array with a header", () => {
    for (const value of [{}, [], "x", 5, null]) {
      expect(failureOf(Messages.Client.decode([pack(value)])).reason).toMatchObject({ _tag: "MalformedFrame", frame: 0 })
    }
  })

  it("an unknown header", () => {
    expect(failureOf(Messages.Client.decode([pack([99])])).reason).toMatchObject({ _tag: "UnknownHeader", value: 99 })
  })

  it("an unknown header that is huge or nested deep: the message shows a short preview and never throws", () => {
    let nested: unknown = 1
    for (let i = 0; i < 500; i++) nested = [nested]
    const huge = { key: "x".repeat(1_000_000), list: new Array(100_000).fill(7) }
    for (const header of [nested, huge]) {
      const error = failureOf(Messages.Client.decode([pack([header])]))
      expect(error.reason._tag).toBe("UnknownHeader")
      expect(error.message.length).toBeLessThan(160)
    }
    expect(failureOf(Messages.Client.decode([pack([{ a: [1, "two"] }])])).message).toContain(`{"a":[1,"two"]}`)
  })

  it("a known header that does not travel in this direction", () => {
    const reason = failureOf(Messages.Coordinator.decode([pack([20, 1, {}, null]), nil, nil, nil, nil])).reason
    expect(reason._tag).toBe("MalformedFrame")
    expect(reason.message).toContain("SUBMIT_REQUEST (20) is not sent in this direction")
  })

  it("metadata with the wrong number of values", () => {
    const reason = failureOf(Messages.Client.decode([pack([23])])).reason
    expect(reason).toMatchObject({ _tag: "MalformedFrame", messageTag: "AbortRequest", frame: 0 })
    expect(reason.message).toContain("expected 1 metadata value(s) after the header, got 0")
  })

  it("a metadata value of the wrong type names the field", () => {
    const reason = failureOf(Messages.Client.decode([pack([23, -4])])).reason
    expect(reason).toMatchObject({ _tag: "MalformedFrame", frame: 0 })
    expect(reason.message).toContain("requestId")
  })

  it("a body that does not decode names its frame", () => {
    const frames = [...params]
    frames[1] = new Uint8Array([0xdd, 0xff, 0xff, 0xff, 0xff]) // an array claiming 4 billion elements
    expect(failureOf(Messages.Client.decode(frames)).reason).toMatchObject({ _tag: "MalformedFrame", frame: 1 })
    frames[1] = params[1]!
    frames[2] = pack(["not", "hashes"])
    const reason = failureOf(Messages.Client.decode(frames)).reason
    expect(reason).toMatchObject({ _tag: "MalformedFrame", frame: 2 })
    expect(reason.message).toContain("blockHashes")
  })

  it("a frame that is not bytes at all", () => {
    const frames = [params[0]!, "prompt" as unknown as Uint8Array, nil, nil, nil]
    expect(failureOf(Messages.Client.decode(frames)).reason).toMatchObject({ _tag: "MalformedFrame", frame: 1 })
  })
})

describe("headers and request ids are msgpack integers: a float is a malformed frame 0", () => {
  const hex = (h: string) => Buffer.from(h.replace(/ /g, ""), "hex")
  const body = pack({ request_id: 5, status: "COMPLETED" })
  // float64 5.0 is cb 40 14 00.., float32 ca 40 a0 00 00; 21.0 is cb 40 35 00.., ca 41 a8 00 00.
  // `packb([21, 5.0])` is 92 15 cb 40 14 00 00 00 00 00 00 (Python's msgpack 1.0.3).
  it.each([
    ["[21, 5.0] float64 id", "92 15 cb4014000000000000", "EngineReply", "requestId: integers on the wire are msgpack integers, got a float"],
    ["[21, 5.0] float32 id", "92 15 ca40a00000", "EngineReply", "requestId: integers on the wire are msgpack integers, got a float"],
    ["[22, 5.0] float64 id", "92 16 cb4014000000000000", "EngineReplyPartial", "requestId: integers on the wire are msgpack integers, got a float"],
    ["[21.0, 5] float64 header", "92 cb4035000000000000 05", null, "the header should be a msgpack integer, got a float"],
    ["[21.0, 5] float32 header", "92 ca41a80000 05", null, "the header should be a msgpack integer, got a float"],
    ["[1.0] float CONNECT_ACK", "91 cb3ff0000000000000", null, "the header should be a msgpack integer, got a float"]
  ])("%s", (_, frame0, messageTag, why) => {
    const frames = [hex(frame0), ...(messageTag === null && frame0.startsWith("91") ? [] : [body])]
    const expected = new ProtocolError.MalformedFrame({ messageTag, frame: 0, why })
    expect(failureOf(Messages.Coordinator.decodeEnvelope(frames)).reason).toEqual(expected)
    expect(failureOf(Messages.Coordinator.decode(frames)).reason).toEqual(expected)
  })

  it("the same integers in their other widths decode (uint8 .. int64)", () => {
    for (const id of ["05", "cc05", "cd0005", "ce00000005", "cf0000000000000005", "d005", "d10005", "d200000005", "d30000000000000005"]) {
      const decoded = Messages.Coordinator.decodeEnvelope([hex(`92 15 ${id}`), body])
      expect(Result.getOrThrow(decoded).metadata).toEqual({ requestId: 5 })
    }
  })

  it("ids inside the engines' batches, and the client's own messages, are held to the same rule", () => {
    const why = (key: string) => `${key}: integers on the wire are msgpack integers, got a float`
    expect(failureOf(Messages.Engine.decodeEnvelope([hex("92 15 91 92 cb4014000000000000 c3"), body])).reason)
      .toMatchObject({ messageTag: "EngineReplyBatch", why: why("entries") })
    expect(failureOf(Messages.Engine.decodeEnvelope([hex("92 16 92 01 ca40a00000"), body, body])).reason)
      .toMatchObject({ messageTag: "EngineReplyPartialBatch", why: why("requestIds") })
    expect(failureOf(Messages.Client.decode([hex("92 17 cb4014000000000000")])).reason)
      .toMatchObject({ messageTag: "AbortRequest", why: why("requestId") })
    expect(failureOf(Messages.Client.decode([hex("92 2c cb4014000000000000")])).reason)
      .toMatchObject({ messageTag: "SetGenerationEpoch", why: why("generationEpoch") })
    const submit = [...params]
    expect(params[0]!.subarray(0, 3)).toEqual(hex("94 14 01"))
    submit[0] = Buffer.concat([hex("94 14 cb3ff0000000000000"), params[0]!.subarray(3)])
    expect(failureOf(Messages.Client.decode(submit)).reason).toMatchObject({ messageTag: "SubmitRequest", why: why("requestId") })
    // The sampling map keeps its floats, and a SUBMIT with an integer id decodes.
    expect(Result.isSuccess(Messages.Client.decode(params))).toBe(true)
    expect(Result.isSuccess(Messages.Engine.decodeEnvelope([pack([21, [[5, true], [6, false]]]), body, body]))).toBe(true)
  })
})

describe("envelopes", () => {
  it("read frame 0 only and leave the bodies as sent", () => {
    const envelope = Result.getOrThrow(Messages.Client.decodeEnvelope(params))
    expect(envelope.spec.tag).toBe("SubmitRequest")
    expect(envelope.metadata.requestId).toBe(1)
    expect(envelope.frames).toBe(params)
    expect(Result.getOrThrow(Messages.Client.decodeBody(envelope, "blockHashes"))).toBeNull()
    expect(Result.getOrThrow(Messages.Client.decodeBody(envelope, "prompt"))).toEqual([1, 2, 3])
  })

  it("an envelope whose body is garbage still reads, and the body read fails typed", () => {
    const frames = [params[0]!, new Uint8Array([0xc1]), nil, nil, nil]
    const envelope = Result.getOrThrow(Messages.Client.decodeEnvelope(frames))
    expect(failureOf(Messages.Client.decodeBody(envelope, "prompt")).reason).toMatchObject({ frame: 1 })
  })
})

describe("encoding", () => {
  it("a value msgpack cannot hold is a typed NotEncodable naming the body and the path", () => {
    const error = failureOf(
      Messages.Client.encode({
        _tag: "SubmitRequest",
        requestId: 1,
        samplingParams: SamplingParams.defaults,
        mediaDescriptor: null,
        prompt: [1],
        blockHashes: null,
        media: null,
        offloadParams: { stage: { fn: () => 1 } }
      })
    )
    expect(error.reason).toMatchObject({ _tag: "NotEncodable", what: "SubmitRequest offloadParams", path: "stage.fn" })
  })

  it("a cycle is NotEncodable, not a stack overflow", () => {
    const cycle: Record<string, unknown> = {}
    cycle.self = cycle
    const error = failureOf(Messages.Client.encode({ _tag: "SetGenerationEpoch", generationEpoch: cycle as never }))
    expect(error.reason._tag).toBe("NotEncodable")
  })

  it("block hashes above 2^53 go out as uint64 and come back exact", () => {
    const hashes = new BigUint64Array([1n, 2n ** 53n + 1n, 2n ** 63n - 1n, 5_000_000_000n])
    const decoded = Result.getOrThrow(Messages.Client.decode(params))
    const frames = Result.getOrThrow(Messages.Client.encode({ ...decoded, blockHashes: hashes } as never))
    expect(Buffer.from(frames[2]!).toString("hex")).toBe(
      "9401cf0020000000000001cf7fffffffffffffffcf000000012a05f200"
    )
    const back = Result.getOrThrow(Messages.Client.decode(frames)) as { blockHashes: BigUint64Array }
    expect(Array.from(back.blockHashes)).toEqual(Array.from(hashes))
  })
})

describe("optional trailing bodies (Schema.optionalKey)", () => {
  const spec = MessageSpec.make("Tail", 20, {
    metadata: { requestId: Schema.Int },
    bodies: { a: Schema.Int, b: Schema.optionalKey(Schema.NullOr(Schema.Int)) }
  })
  const single = Frames.codec([spec], { framing: "single" })
  const multipart = Frames.codec([spec])
  const hexOf = (frames: ReadonlyArray<Uint8Array>) => frames.map((f) => Buffer.from(f).toString("hex"))

  it("one frame ends before an absent one, and reads it back absent; nil stays nil", () => {
    expect(spec.optionalTail).toBe(1)
    expect(hexOf(Result.getOrThrow(single.encode({ _tag: "Tail", requestId: 1, a: 2 })))).toEqual(["93140102"])
    expect(hexOf(Result.getOrThrow(single.encode({ _tag: "Tail", requestId: 1, a: 2, b: null })))).toEqual(["94140102c0"])
    expect(Result.getOrThrow(single.decode([Buffer.from("93140102", "hex")]))).toEqual({ _tag: "Tail", requestId: 1, a: 2 })
    expect(Result.getOrThrow(single.decode([Buffer.from("94140102c0", "hex")]))).toEqual({ _tag: "Tail", requestId: 1, a: 2, b: null })
    const envelope = Result.getOrThrow(single.decodeEnvelope([Buffer.from("93140102", "hex")]))
    expect(envelope.frames).toHaveLength(2)
    expect(Result.getOrThrow(single.decodeBody(envelope, "b"))).toBeUndefined()
    expect(failureOf(single.decode([Buffer.from("921401", "hex")])).message).toContain("expected 2 to 3 value(s) after the header, got 1")
  })

  it("multipart frames carry every body, an absent one as nil", () => {
    expect(hexOf(Result.getOrThrow(multipart.encode({ _tag: "Tail", requestId: 1, a: 2 })))).toEqual(["921401", "02", "c0"])
    expect(failureOf(multipart.decode([Buffer.from("921401", "hex"), Buffer.from("02", "hex")])).reason._tag).toBe("ArityMismatch")
  })

  it("only the last bodies may be optional, and never metadata", () => {
    expect(() =>
      MessageSpec.make("Bad", 20, { metadata: {}, bodies: { a: Schema.optionalKey(Schema.Int), b: Schema.Int } })
    ).toThrow("only the last bodies may be optional")
    expect(() => MessageSpec.make("Bad", 20, { metadata: { a: Schema.optionalKey(Schema.Int) }, bodies: {} })).toThrow(
      "metadata value a cannot be optional"
    )
  })
})
