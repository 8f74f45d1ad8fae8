/**
 * Every dialect against the bytes Megatron-LM's own Python client, coordinator and engines put
 * on the wire at its ref (`fixtures/megatron/`, captured by `scripts/megatron/capture.py`): each
 * message decodes with the dialect's codec of its direction and names the header it was sent
 * as; what a client sends re-encodes to the same bytes; and a submission built by the dialect
 * from the same prompt and parameters is byte for byte what Megatron's client sent, but at main,
 * whose client always sends `multi_modal_data` (nil without media) where ours leaves it out (the
 * four elements PR 6639's client sends, which main's coordinator reads as the same request).
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { Unpackr } from "msgpackr"
import { Dialect, DialectCatalog, type Frames, SamplingParams } from "../src/index.ts"
import { hex, readFixture } from "./fixtureValues.ts"

interface Captured {
  readonly seq: number
  readonly scenario: string
  readonly direction: "client->coordinator" | "coordinator->client" | "coordinator->engine" | "engine->coordinator"
  readonly header: string
  readonly frames: ReadonlyArray<string>
}

interface Fixture {
  readonly dialect: string
  readonly ref: string
  readonly commit: string
  readonly headers: Readonly<Record<string, number>>
  readonly messages: ReadonlyArray<Captured>
}

const bytes = (frames: ReadonlyArray<string>): Frames.Frames => frames.map((f) => Uint8Array.from(Buffer.from(f, "hex")))

/**
 * The codec of a direction: the coordinator forwards the client's layouts to engines, but for
 * core_v0.16's PAUSE_ACK and STOP_ACK, which it sends engines in their own layout (`[6]`, `[11]`).
 */
const codecOf = (dialect: Dialect.Dialect, m: Captured) =>
  m.direction === "coordinator->client"
    ? dialect.coordinator
    : m.direction === "engine->coordinator" || m.header === "PAUSE_ACK" || m.header === "STOP_ACK"
    ? dialect.engine
    : dialect.client

const hashing = { blockSizeTokens: null, prefixCachingPolicy: null }

/**
 * The captures, each with the dialect that speaks to that ref: PR 6639 (Megatron's frontend
 * capacity benchmark, branched from main before media) is served by `main`.
 */
const captures = [
  { file: "main", name: "main" },
  { file: "pr-6639", name: "main" },
  { file: "pr-6497", name: "pr-6497" },
  { file: "core_v0.19", name: "core_v0.19" },
  { file: "core_v0.18", name: "core_v0.18" },
  { file: "core_v0.17", name: "core_v0.17" },
  { file: "core_v0.16", name: "core_v0.16" }
] as const

/**
 * Megatron-LM main's client sends `[20, id, prompt, sp, multi_modal_data]` always, nil when there
 * is no media; the `main` dialect sends `[20, id, prompt, sp]` then. So at main, our frame is
 * Megatron's without its last element: a fixarray one shorter (0x95 -> 0x94), the trailing nil
 * (0xc0) gone, every other byte the same. Anywhere else, Megatron's frame itself.
 */
const ourSubmit = (file: string, frames: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (file !== "main") return frames
  const [frame] = frames
  expect(frames).toHaveLength(1)
  expect([frame!.slice(0, 2), frame!.slice(-2)]).toEqual(["95", "c0"])
  return ["94" + frame!.slice(2, -2)]
}

const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" })

/**
 * What main's coordinator takes from a SUBMIT_REQUEST frame (`handlers.py:86` at d98e8a64dd),
 * decoded with msgpackr, not our codec: `fields = payload[1:]`; three fields are `(id, prompt,
 * sp)` with `multi_modal_data = None`, else `fields[:4]`. It sends engines `[20, crid, prompt, sp,
 * multi_modal_data]` from these four values.
 */
const mainCoordinatorReads = (frame: Uint8Array): ReadonlyArray<unknown> => {
  const fields = (unpackr.unpack(frame) as Array<unknown>).slice(1)
  return fields.length === 3 ? [...fields, null] : fields.slice(0, 4)
}

for (const { file, name } of captures) {
  const fixture = readFixture<Fixture>(`megatron/${file}.json`)
  const dialect = DialectCatalog.get(name)

  describe(`the ${name} dialect against Megatron-LM ${fixture.commit.slice(0, 10)} (${fixture.ref})`, () => {
    it("has the ref's header values for every header it declares", () => {
      for (const [header, value] of Object.entries(dialect.headers.values)) {
        expect([header, fixture.headers[header]]).toEqual([header, value])
      }
    })

    const messages = fixture.messages.filter((m) => m.header !== "REGISTER")

    it(`decodes all ${messages.length} captured messages, each as the header it was sent as`, () => {
      for (const m of messages) {
        const envelope = codecOf(dialect, m).decodeEnvelope(bytes(m.frames))
        if (Result.isFailure(envelope)) throw new Error(`#${m.seq} ${m.direction} ${m.header}: ${envelope.failure.message}`)
        expect(envelope.success.spec.headerName).toBe(m.header)
        expect(Result.isSuccess(codecOf(dialect, m).decode(bytes(m.frames)))).toBe(true)
      }
    })

    it("re-encodes what a client sends to the same bytes", () => {
      for (const m of messages.filter((m) => m.direction === "client->coordinator")) {
        const decoded = Result.getOrThrow(dialect.client.decode(bytes(m.frames)))
        const frames = Result.getOrThrow(Dialect.encodeClient(dialect, decoded as Dialect.Message))
        expect([m.seq, frames.map(hex)]).toEqual([m.seq, m.frames])
      }
    })

    it(
      file === "main"
        ? "builds Megatron's client's SUBMIT_REQUEST bytes from its prompt and parameters, but the nil media"
        : "builds Megatron's client's SUBMIT_REQUEST bytes from its prompt and parameters",
      () => {
      const submits = messages.filter((m) => m.direction === "client->coordinator" && m.header === "SUBMIT_REQUEST")
      expect(submits.length).toBeGreaterThan(0)
      for (const m of submits) {
        const decoded = Result.getOrThrow(dialect.client.decode(bytes(m.frames))) as unknown as {
          readonly requestId: number
          readonly prompt: unknown
          readonly samplingParams: SamplingParams.SamplingParams
        }
        const message = Result.getOrThrow(dialect.submit({
          requestId: decoded.requestId,
          prompt: decoded.prompt,
          samplingParams: SamplingParams.toInput(decoded.samplingParams)
        }, hashing))
        const frames = Result.getOrThrow(Dialect.encodeClient(dialect, message))
        expect([m.scenario, frames.map(hex)]).toEqual([m.scenario, ourSubmit(file, m.frames)])
        if (name === "main") {
          // Main's coordinator reads one request from either, and so forwards the same one.
          expect(mainCoordinatorReads(frames[0]!)).toEqual(mainCoordinatorReads(bytes(m.frames)[0]!))
        }
      }
    })
  })
}

describe("main's SUBMIT_REQUEST: four elements, five with media", () => {
  const main = DialectCatalog.get("main")
  const frameOf = (input: Parameters<typeof main.submit>[0]) =>
    Result.getOrThrow(Dialect.encodeClient(main, Result.getOrThrow(main.submit(input, hashing))))

  it("sends the media as the fifth element, and reads both forms back as they were", () => {
    const plain = frameOf({ requestId: 3, prompt: "hi" })
    const media = frameOf({ requestId: 3, prompt: "hi", multiModalData: { image: new Uint8Array([7]) } })
    expect(Array.isArray(unpackr.unpack(plain[0]!)) && (unpackr.unpack(plain[0]!) as Array<unknown>).length).toBe(4)
    const withMedia = unpackr.unpack(media[0]!) as Array<unknown>
    expect(withMedia).toHaveLength(5)
    expect(Object.keys(withMedia[4] as object)).toEqual(["image"])
    const four = Result.getOrThrow(main.client.decode(plain)) as Record<string, unknown>
    expect("multiModalData" in four).toBe(false)
    expect(Result.getOrThrow(Dialect.encodeClient(main, four as Dialect.Message)).map(hex)).toEqual(plain.map(hex))
    const five = Result.getOrThrow(main.client.decode(media)) as Record<string, unknown>
    expect(Result.getOrThrow(Dialect.encodeClient(main, five as Dialect.Message)).map(hex)).toEqual(media.map(hex))
  })

  it("reads three or four fields after the header, no fewer and no more", () => {
    const rest = hex(frameOf({ requestId: 0, prompt: "h" })[0]!).slice(2) // after the fixarray byte 0x94
    for (const [frame, ok] of [
      ["9314" + "00" + "a168", false], // [20, 0, "h"]
      ["94" + rest, true],
      ["95" + rest + "c0", true],
      ["96" + rest + "c0" + "c0", false]
    ] as const) {
      const decoded = main.client.decode([Buffer.from(frame, "hex")])
      expect([frame, Result.isSuccess(decoded)]).toEqual([frame, ok])
      if (!ok) expect(Result.isFailure(decoded) && decoded.failure.message).toContain("3 to 4 value(s) after the header")
    }
  })
})

describe("what a dialect lacks is refused before anything is built", () => {
  const release = DialectCatalog.get("core_v0.19")

  it("streaming, abort, the KV hand-off, media, offload params and client hashes on core_v0.19", () => {
    const reasons = [
      release.submit({ requestId: 0, prompt: "hi", streaming: true }, hashing),
      Dialect.encodeClient(release, { _tag: "AbortRequest", requestId: 0 }),
      release.submitWithKv({ requestId: 0, prompt: [1, 2], kvMeta: { agent: "p" }, srcBlockIds: [0] }),
      release.submit({ requestId: 0, prompt: "hi", multiModalData: { image: new Uint8Array([1]) } }, hashing),
      release.submit({ requestId: 0, prompt: "hi", offloadParams: { a: 1 } }, hashing),
      release.submit({ requestId: 0, prompt: [1, 2, 3] }, { blockSizeTokens: 2, prefixCachingPolicy: "longest_prefix" })
    ].map((r: Result.Result<unknown, { readonly reason: { readonly _tag: string } }>) =>
      Result.isFailure(r) ? r.failure.reason._tag : "built"
    )
    expect(reasons).toEqual(Array(6).fill("UnsupportedByDialect"))
  })

  it("a sampling field the release has not got, unless it holds its default (then it is left out)", () => {
    const v017 = DialectCatalog.get("core_v0.17")
    const refused = v017.submit({ requestId: 0, prompt: "hi", samplingParams: { return_prompt_tokens: true } }, hashing)
    expect(Result.isFailure(refused) && refused.failure.message).toContain("return_prompt_tokens")
    const built = Result.getOrThrow(v017.submit({ requestId: 0, prompt: "hi", samplingParams: { temperature: 0.5 } }, hashing))
    expect(Object.keys(built.samplingParams as object)).toEqual(v017.samplingFields)
  })

  it("control signals a release lacks (profiler on core_v0.17) and media on pr-6497", () => {
    const v017 = Result.getOrThrow(Result.flip(Dialect.encodeClient(DialectCatalog.get("core_v0.17"), { _tag: "StartCudaProfiler" })))
    expect(v017.message).toContain("profiler")
    const pr = DialectCatalog.get("pr-6497").submit({ requestId: 0, prompt: "hi", multiModalData: { image: new Uint8Array([1]) } }, hashing)
    expect(Result.isFailure(pr) && pr.failure.reason._tag).toBe("UnsupportedByDialect")
  })

  it("core_v0.16 has pause, suspend and stop, and no epoch, profiler, shutdown, streaming or abort", () => {
    const v016 = DialectCatalog.get("core_v0.16")
    const has = (["pause", "suspend", "stop", "generationEpoch", "profiler", "shutdown", "streaming", "abort", "kvHandoff", "media"] as const)
      .filter((f) => Dialect.supports(v016, f))
    expect(has).toEqual(["pause", "suspend", "stop"])
    expect(v016.closedClientReply).toBe("drop")
    const refused = ["SetGenerationEpoch", "StartCudaProfiler", "Shutdown", "Disconnect", "AbortRequest"].map((_tag) =>
      Result.isFailure(Dialect.encodeClient(v016, { _tag, generationEpoch: 1, requestId: 1 }))
    )
    expect(refused).toEqual(Array(5).fill(true))
    // UNPAUSE is 7 there (SUSPEND's value in 0.17): the trap DIALECTS.md names.
    expect(Result.getOrThrow(Dialect.encodeClient(v016, { _tag: "Unpause" })).map(hex)).toEqual(["9107"])
  })

  it("core_v0.16's parameters stop at stop_words: detokenize_stop_sequence is refused unless default", () => {
    const v016 = DialectCatalog.get("core_v0.16")
    expect(v016.samplingFields.at(-1)).toBe("stop_words")
    const refused = v016.submit({ requestId: 0, prompt: "hi", samplingParams: { detokenize_stop_sequence: true } }, hashing)
    expect(Result.isFailure(refused) && refused.failure.message).toContain("detokenize_stop_sequence")
  })

  it("core_v0.16's coordinator relays the acks with the engine's identity; the engines ack bare", () => {
    const v016 = DialectCatalog.get("core_v0.16")
    const notice = Result.getOrThrow(v016.coordinator.decode([Buffer.from("9206c40a6d702d636f6f72642d30", "hex")]))
    expect(notice._tag).toBe("PauseAck")
    expect(Buffer.from(notice.engineIdentity as Uint8Array).toString()).toBe("mp-coord-0")
    expect(Result.getOrThrow(v016.engine.decode([Buffer.from("910b", "hex")]))).toEqual({ _tag: "StopAck" })
    // A client cannot send an acknowledgement (the coordinator asserts it came from an engine).
    expect(Result.isFailure(Dialect.encodeClient(v016, { _tag: "PauseAck" }))).toBe(true)
  })

  it("core_v0.17's headers count from 1: CONNECT is pack([1])", () => {
    const frames = Result.getOrThrow(Dialect.encodeClient(DialectCatalog.get("core_v0.17"), { _tag: "Connect" }))
    expect(frames.map(hex)).toEqual(["9101"])
  })
})

describe("single-frame decoding never throws", () => {
  const main = DialectCatalog.get("main")

  it("refuses trailing bytes, a wrong count, a second frame and bytes that are not msgpack", () => {
    const reply = Buffer.from("9315" + "05" + "80", "hex") // [21, 5, {}]
    expect(Result.isSuccess(main.coordinator.decode([reply]))).toBe(true)
    const cases: ReadonlyArray<Frames.Frames> = [
      [Buffer.concat([reply, Buffer.from("00", "hex")])],
      [Buffer.from("921505", "hex")],
      [reply, reply],
      [Buffer.from("93150", "hex")],
      [Buffer.from("c1", "hex")],
      [Buffer.from("dd", "hex")],
      [new Uint8Array(0)]
    ]
    for (const frames of cases) {
      const decoded = main.coordinator.decode(frames)
      expect(Result.isFailure(decoded)).toBe(true)
    }
  })

  it("gives a reply's body as a view of its bytes", () => {
    const reply = Buffer.from("9315" + "05" + "81a16101", "hex") // [21, 5, {a: 1}]
    const envelope = Result.getOrThrow(main.coordinator.decodeEnvelope([reply]))
    expect(envelope.metadata).toEqual({ requestId: 5 })
    expect(hex(envelope.frames[1]!)).toBe("81a16101")
    expect(Result.getOrThrow(main.coordinator.decodeBody(envelope, "reply"))).toEqual({ a: 1 })
  })
})

describe("the catalog's former name", () => {
  it("Dialects is DialectCatalog, so imports of the old name keep working", async () => {
    const Protocol = await import("../src/index.ts")
    expect(Protocol.Dialects).toBe(Protocol.DialectCatalog)
    expect(Protocol.Dialects.get("main")).toBe(DialectCatalog.get("main"))
  })
})
