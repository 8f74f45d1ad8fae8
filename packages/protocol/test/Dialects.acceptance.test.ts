/**
 * Nothing a client builds in a dialect can kill that dialect's coordinator: for arbitrary
 * submissions (good and bad prompts and parameters, media, offload params, KV hand-offs) and
 * every control message, either the dialect refuses it (a typed `ProtocolError`, nothing to
 * send) or its frames pass every check Megatron-LM's coordinator makes before it would raise
 * (packages/protocol/DIALECTS.md, "What kills or wedges each coordinator"). The checks are
 * written here from Megatron's code with msgpackr, not with the project's codecs, and the header
 * values come from the fixtures captured at each ref. `main` also serves PR 6639's coordinator
 * (Megatron's frontend capacity benchmark, branched from main before media): whatever `main`
 * sends without media passes that coordinator's checks too.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import { Unpackr } from "msgpackr"
import { Dialect, DialectCatalog } from "../src/index.ts"
import { readFixture } from "./fixtureValues.ts"

const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: "number" })

/** One msgpack value filling the frame exactly (Megatron's `msgpack.unpackb` raises otherwise). */
const unpackWhole = (frame: Uint8Array): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  try {
    const values = unpackr.unpackMultiple(Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength)) as Array<unknown>
    return values.length === 1 ? { ok: true, value: values[0] } : { ok: false }
  } catch {
    return { ok: false }
  }
}

const isInt = (value: unknown): boolean => typeof value === "number" && Number.isInteger(value)
const isMap = (value: unknown): boolean => value !== null && typeof value === "object" && !Array.isArray(value) && !(value instanceof Uint8Array)
const isPrompt = (value: unknown): boolean => typeof value === "string" || (Array.isArray(value) && value.every(isInt))

/** The client headers each ref's coordinator has a handler for (anything else kills it). */
const handled: Record<string, ReadonlyArray<string>> = {
  main: [
    "CONNECT", "SUBMIT_REQUEST", "SUBMIT_REQUEST_WITH_KV", "ABORT_REQUEST", "RELEASE_KV", "PAUSE", "UNPAUSE", "SUSPEND",
    "RESUME", "SET_GENERATION_EPOCH", "STOP", "START_CUDA_PROFILER", "STOP_CUDA_PROFILER", "DISCONNECT", "SHUTDOWN"
  ],
  "core_v0.19": [
    "CONNECT", "SUBMIT_REQUEST", "PAUSE", "UNPAUSE", "SUSPEND", "RESUME", "SET_GENERATION_EPOCH", "STOP",
    "START_CUDA_PROFILER", "STOP_CUDA_PROFILER", "DISCONNECT", "SHUTDOWN"
  ],
  "core_v0.17": ["CONNECT", "SUBMIT_REQUEST", "PAUSE", "UNPAUSE", "SUSPEND", "RESUME", "SET_GENERATION_EPOCH", "STOP", "DISCONNECT", "SHUTDOWN"],
  // data_parallel_inference_coordinator.py at core_v0.16.0: CONNECT, SUBMIT_REQUEST and the five
  // controls from clients; PAUSE_ACK, STOP_ACK and ENGINE_REPLY assert an engine sent them.
  "core_v0.16": ["CONNECT", "SUBMIT_REQUEST", "PAUSE", "UNPAUSE", "SUSPEND", "RESUME", "STOP"]
}
handled["pr-6497"] = handled.main!
handled["pr-6639"] = handled.main!
handled["core_v0.18"] = handled["core_v0.17"]!

/** A coordinator checked: a dialect's ref, or PR 6639's (c90affc9fc), which `main` serves. */
type Ref = Dialect.Name | "pr-6639"

/**
 * Why Megatron's coordinator at this ref would raise on these frames (or wedge the request: a
 * malformed KV submission is logged and dropped), or `undefined` when it would not.
 */
const killedBy = (name: Ref, headers: Readonly<Record<string, number>>, frames: ReadonlyArray<Uint8Array>): string | undefined => {
  const single = name !== "pr-6497"
  if (single && frames.length !== 1) return `${frames.length} frames`
  const first = unpackWhole(frames[0]!)
  if (!first.ok) return "frame 0 is not one msgpack value"
  const v = first.value
  if (!Array.isArray(v) || v.length === 0) return "frame 0 is not a non-empty array"
  const header = Object.entries(headers).find(([, value]) => value === v[0])?.[0]
  if (header === undefined) return `unknown header ${String(v[0])}`
  if (!handled[name]!.includes(header)) return `no handler for ${header}`
  const bodies = frames.slice(1).map(unpackWhole)
  if (bodies.some((body) => !body.ok)) return "a body frame is not one msgpack value"
  const body = (i: number) => (bodies[i] as { readonly value: unknown }).value
  switch (header) {
    case "SUBMIT_REQUEST": {
      if (!isInt(v[1])) return "an unhashable or non-integer request id"
      if (name === "pr-6497") {
        if (v.length !== 3 || frames.length !== 2) return `metadata of ${v.length} and ${frames.length - 1} bodies`
        if (!isMap(v[2])) return "sampling params not a map"
        return isPrompt(body(0)) ? undefined : "a prompt neither str nor int list"
      }
      // main: `fields[:4]` unless there are three (handlers.py:86); PR 6639 and the releases unpack exactly three.
      if (name === "main" ? v.length < 4 : v.length !== 4) return `${v.length} elements`
      if (!isPrompt(v[2])) return "a prompt neither str nor int list"
      return isMap(v[3]) ? undefined : "sampling params not a map"
    }
    case "SUBMIT_REQUEST_WITH_KV": {
      if (!isInt(v[1])) return "a non-integer request id"
      if (name === "pr-6497") {
        if (v.length !== 4 || frames.length !== 3) return `metadata of ${v.length} and ${frames.length - 1} bodies`
        return isMap(v[2]) && isMap(v[3]) && isPrompt(body(0)) && Array.isArray(body(1)) ? undefined : "a malformed field"
      }
      if (v.length !== 6) return `${v.length} elements`
      return isPrompt(v[2]) && isMap(v[3]) && isMap(v[4]) && Array.isArray(v[5]) ? undefined : "a malformed field"
    }
    case "ABORT_REQUEST":
    case "RELEASE_KV":
      return isInt(v[1]) ? undefined : "no integer id"
    case "SET_GENERATION_EPOCH":
      // The engines read data[1]: without it they raise.
      return isInt(v[1]) ? undefined : "no epoch"
    default:
      return single || frames.length === 1 ? undefined : "a signal of more than one frame"
  }
}

const hashing = { blockSizeTokens: null, prefixCachingPolicy: null }

const prompt = fc.oneof(
  fc.string(),
  fc.array(fc.integer({ min: 0, max: 2 ** 31 }), { maxLength: 40 }),
  fc.array(fc.integer({ min: 0, max: 65535 })).map((ids) => Uint32Array.from(ids)),
  // Not prompts: refused, never sent.
  fc.constantFrom(null, 5, { text: "x" }, [1.5, 2], ["a"], new Uint8Array([1, 2]))
)

/** Sampling fields every release's `SamplingParams` has. */
const everyReleaseHas = {
  temperature: fc.double({ min: 0, max: 2, noNaN: true }),
  top_k: fc.integer({ min: 0, max: 50 }),
  top_p: fc.double({ min: 0, max: 1, noNaN: true }),
  num_tokens_to_generate: fc.integer({ min: 1, max: 4096 }),
  return_log_probs: fc.boolean(),
  stop_words: fc.array(fc.string({ minLength: 1 }), { maxLength: 3 }),
  termination_id: fc.integer({ min: -1, max: 100 }),
  extra: fc.dictionary(fc.constantFrom("seed", "detokenize_generations"), fc.oneof(fc.integer(), fc.boolean()))
}

const someOf = <T extends Record<string, fc.Arbitrary<unknown>>>(fields: T) =>
  fc.option(fc.record(fields, { requiredKeys: [] }), { nil: undefined })

/** Any of them, and fields only some releases have. */
const samplingParams = someOf({
  ...everyReleaseHas,
  return_prompt_tokens: fc.boolean(),
  detokenize_stop_sequence: fc.boolean(),
  streaming: fc.boolean(),
  streaming_interval: fc.integer({ min: 1, max: 4 })
})

/** What every release can carry: a text or token prompt, no media, no streaming. */
const plainSubmission = fc.record({
  requestId: fc.nat(),
  // Not empty: an empty prompt is refused in every dialect.
  prompt: fc.oneof(fc.string({ minLength: 1 }), fc.array(fc.integer({ min: 0, max: 2 ** 31 }), { minLength: 1, maxLength: 40 })),
  samplingParams: someOf(everyReleaseHas)
})

const submission = fc.record({
  requestId: fc.nat(),
  prompt,
  samplingParams,
  multiModalData: fc.option(fc.record({ image: fc.uint8Array({ minLength: 1, maxLength: 8 }) }), { nil: undefined }),
  offloadParams: fc.option(fc.record({ stage: fc.string() }), { nil: undefined }),
  streaming: fc.option(fc.boolean(), { nil: undefined })
})

const signals = fc.oneof(
  fc.constantFrom(
    "Connect", "Pause", "Unpause", "Suspend", "Resume", "Stop", "StartCudaProfiler", "StopCudaProfiler", "Disconnect", "Shutdown",
    "PauseAck", "StopAck"
  )
    .map((_tag): Dialect.Message => ({ _tag })),
  fc.nat().map((requestId): Dialect.Message => ({ _tag: "AbortRequest", requestId })),
  fc.nat().map((requestId): Dialect.Message => ({ _tag: "ReleaseKv", requestId })),
  fc.nat().map((generationEpoch): Dialect.Message => ({ _tag: "SetGenerationEpoch", generationEpoch }))
)

const pr6639 = readFixture<{ readonly headers: Readonly<Record<string, number>> }>("megatron/pr-6639.json").headers

describe("nothing a client builds can kill its dialect's coordinator", () => {
  for (const name of ["main", "pr-6497", "core_v0.19", "core_v0.18", "core_v0.17", "core_v0.16"] as const) {
    const dialect = DialectCatalog.get(name)
    const { headers } = readFixture<{ readonly headers: Readonly<Record<string, number>> }>(`megatron/${name}.json`)

    /** The frames of a built message, or `undefined` when the dialect refused it. */
    const framesOf = (built: Result.Result<Dialect.Message, unknown>) => {
      if (Result.isFailure(built)) return undefined
      const frames = Dialect.encodeClient(dialect, built.success)
      return Result.isSuccess(frames) ? frames.success : undefined
    }

    it(`${name}: submissions are refused or parse`, () => {
      fc.assert(fc.property(submission, (input) => {
        const frames = framesOf(dialect.submit(input, hashing))
        if (frames !== undefined) expect(killedBy(name, headers, frames)).toBeUndefined()
      }), { numRuns: 400 })
    })

    it(`${name}: a submission every release can carry is sent, and parses`, () => {
      fc.assert(fc.property(plainSubmission, (input) => {
        const frames = framesOf(dialect.submit(input, hashing))
        expect(frames).toBeDefined()
        expect(killedBy(name, headers, frames!)).toBeUndefined()
        if (name === "main") expect(killedBy("pr-6639", pr6639, frames!)).toBeUndefined()
      }), { numRuns: 200 })
    })

    if (name === "main") {
      it("main: submissions without media parse at PR 6639's coordinator too; with media, only at main", () => {
        fc.assert(fc.property(submission, (input) => {
          const frames = framesOf(dialect.submit(input, hashing))
          if (frames === undefined) return
          const media = input.multiModalData !== undefined
          expect(killedBy("pr-6639", pr6639, frames)).toBe(media ? "5 elements" : undefined)
        }), { numRuns: 400 })
      })
    }

    it(`${name}: KV hand-off submissions are refused or parse`, () => {
      const input = fc.record({
        requestId: fc.nat(),
        prompt,
        samplingParams,
        kvMeta: fc.record({ agent_name: fc.string(), resume_tokens: fc.array(fc.nat(), { maxLength: 2 }) }),
        srcBlockIds: fc.array(fc.nat(), { maxLength: 4 }),
        streaming: fc.option(fc.boolean(), { nil: undefined })
      })
      fc.assert(fc.property(input, (kv) => {
        const frames = framesOf(dialect.submitWithKv(kv))
        if (frames !== undefined) expect(killedBy(name, headers, frames)).toBeUndefined()
      }), { numRuns: 200 })
    })

    it(`${name}: control messages are refused or parse`, () => {
      fc.assert(fc.property(signals, (message) => {
        const frames = framesOf(Result.succeed(message))
        if (frames !== undefined) expect(killedBy(name, headers, frames)).toBeUndefined()
      }), { numRuns: 200 })
    })
  }

  it("the checks catch what kills: the reference SUBMIT at main, a v0.19 header at v0.17, ABORT at v0.19", () => {
    const reference = DialectCatalog.get("reference")
    const submit = Result.getOrThrow(Dialect.encodeClient(reference, Result.getOrThrow(reference.submit({ requestId: 0, prompt: "hi" }, hashing))))
    const main = readFixture<{ readonly headers: Readonly<Record<string, number>> }>("megatron/main.json").headers
    const v017 = readFixture<{ readonly headers: Readonly<Record<string, number>> }>("megatron/core_v0.17.json").headers
    const v019 = readFixture<{ readonly headers: Readonly<Record<string, number>> }>("megatron/core_v0.19.json").headers
    expect(killedBy("main", main, submit)).toBe("5 frames")
    // Megatron main's own client's SUBMIT (media always sent, nil without any) at PR 6639's coordinator.
    const mainClient = readFixture<{ readonly messages: ReadonlyArray<{ readonly header: string; readonly frames: ReadonlyArray<string> }> }>(
      "megatron/main.json"
    ).messages.find((m) => m.header === "SUBMIT_REQUEST")!.frames.map((f) => Buffer.from(f, "hex"))
    expect(killedBy("main", main, mainClient)).toBeUndefined()
    expect(killedBy("pr-6639", pr6639, mainClient)).toBe("5 elements")
    expect(killedBy("pr-6497", main, submit)).toBe("metadata of 4 and 4 bodies")
    const connect = Result.getOrThrow(Dialect.encodeClient(DialectCatalog.get("main"), { _tag: "Connect" }))
    expect(killedBy("core_v0.17", v017, connect)).toBe("unknown header 0")
    const abort = Result.getOrThrow(Dialect.encodeClient(DialectCatalog.get("main"), { _tag: "AbortRequest", requestId: 1 }))
    expect(killedBy("core_v0.19", v019, abort)).toBe("unknown header 23")
    const ack = Result.getOrThrow(DialectCatalog.get("main").coordinator.encode({ _tag: "ConnectAck" } as never))
    expect(killedBy("main", main, ack)).toBe("no handler for CONNECT_ACK")
    const v016 = readFixture<{ readonly headers: Readonly<Record<string, number>> }>("megatron/core_v0.16.json").headers
    expect(killedBy("core_v0.16", v016, connect)).toBe("unknown header 0")
    // 0.17's UNPAUSE is 6, 0.16's PAUSE_ACK, which a client may not send.
    const unpause = Result.getOrThrow(Dialect.encodeClient(DialectCatalog.get("core_v0.17"), { _tag: "Unpause" }))
    expect(killedBy("core_v0.16", v016, unpause)).toBe("no handler for PAUSE_ACK")
  })
})
