import { describe, expect, it } from "@effect/vitest"
import { Msgpack } from "@mcore-effect/protocol"
import { Effect, Result } from "effect"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { Trace } from "../src/index.ts"

/** Plain Uint8Array frames, as the reader returns them (Msgpack.encode gives a Buffer). */
const pack = (value: unknown) => Uint8Array.from(Msgpack.encode(value))

const connect: Trace.Entry = { dir: "client->coordinator", peer: "client-0", t: 0, frames: [pack([0])] }
const ack: Trace.Entry = { dir: "coordinator->client", peer: "client-0", t: 17, frames: [pack([1])] }
const reply: Trace.Entry = {
  dir: "coordinator->client",
  peer: "client-0",
  t: 90,
  frames: [pack([21, 0]), pack({ request_id: 0, generated_tokens: [1, 2] }), new Uint8Array(0)]
}
const header = Trace.makeHeader({ meta: { by: "Trace.test" }, created: new Date("2025-01-02T03:04:05.000Z") })

const headerLine = '{"format":"mcore-effect-trace","version":1,"created":"2025-01-02T03:04:05.000Z","meta":{}}'

const tempDir = Effect.acquireRelease(
  Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), "trace-test-"))),
  (dir) => Effect.promise(() => Fs.rm(dir, { recursive: true, force: true }))
)

const failureOf = <A>(result: Result.Result<A, { readonly reason: unknown }>) => {
  if (Result.isSuccess(result)) throw new Error("expected a failure")
  return result.failure.reason
}

describe("Trace: the format", () => {
  it("writes a header line, then one line per message with base64 frames, and reads it back", () => {
    const text = Trace.stringify({ header, entries: [connect, ack, reply] })
    const lines = text.split("\n")
    expect(lines).toHaveLength(5)
    expect(lines[4]).toBe("")
    expect(JSON.parse(lines[0]!)).toEqual({
      format: "mcore-effect-trace",
      version: 1,
      created: "2025-01-02T03:04:05.000Z",
      meta: { by: "Trace.test" }
    })
    expect(JSON.parse(lines[1]!)).toEqual({ dir: "client->coordinator", peer: "client-0", t: 0, frames: ["kQA="] })
    const back = Result.getOrThrow(Trace.parse(text))
    expect(back.header).toEqual(header)
    expect(back.entries).toEqual([connect, ack, reply])
    // An empty frame survives (the engines' registration frame is one).
    expect(back.entries[2]!.frames[2]).toEqual(new Uint8Array(0))
  })

  it("reads what a later version of the same major adds: unknown fields ignored, unknown directions skipped", () => {
    const text = [
      '{"format":"mcore-effect-trace","version":1,"created":"2025-01-02T03:04:05.000Z","meta":{},"writer":"v1.7"}',
      '{"dir":"client->coordinator","peer":"client-0","t":0,"frames":["kQA="],"identity":"00aabbccdd","size":2}',
      '{"dir":"engine->engine","peer":"engine-0","t":3,"frames":[],"kv":true}',
      "",
      '{"dir":"coordinator->client","peer":"client-0","t":17,"frames":["kQE="]}\r',
      ""
    ].join("\n")
    const trace = Result.getOrThrow(Trace.parse(text))
    expect(trace.header.meta).toEqual({})
    expect(trace.entries).toEqual([connect, ack])
  })

  it("refuses a newer major version with UnsupportedVersion, before looking at the rest of the header", () => {
    const reason = failureOf(Trace.parse('{"format":"mcore-effect-trace","version":3,"something":"else"}\n'))
    expect(reason).toMatchObject({ _tag: "UnsupportedVersion", version: 3, supported: 2 })
  })

  it("records its dialect: a trace in another one is version 2 with its protocol; the reference protocol's is version 1, named if given; one without reads as the reference protocol", () => {
    const main = Trace.makeHeader({ protocol: "main", created: new Date("2025-01-02T03:04:05.000Z") })
    const text = Trace.stringify({ header: main, entries: [connect] })
    expect(JSON.parse(text.split("\n")[0]!)).toEqual({
      format: "mcore-effect-trace",
      version: 2,
      created: "2025-01-02T03:04:05.000Z",
      meta: {},
      protocol: "main"
    })
    const back = Result.getOrThrow(Trace.parse(text))
    expect(Trace.protocolOf(back)).toBe("main")
    // A trace whose dialect was not given names none, version 1 as before; old ones read as the reference protocol.
    expect(header).not.toHaveProperty("protocol")
    expect(Trace.protocolOf(Result.getOrThrow(Trace.parse(`${headerLine}\n`)))).toBe("reference")
    // Told it is the reference protocol, the header says so, still version 1 (an older reader ignores the field).
    const reference = Trace.makeHeader({ protocol: "reference", created: new Date("2025-01-02T03:04:05.000Z") })
    expect(reference).toEqual({ format: "mcore-effect-trace", version: 1, created: "2025-01-02T03:04:05.000Z", meta: {}, protocol: "reference" })
    expect(Result.getOrThrow(Trace.parse(Trace.stringify({ header: reference, entries: [connect] }))).header.protocol).toBe("reference")
    // A dialect this version does not know is not guessed at.
    expect(failureOf(Trace.parse(text.replace('"main"', '"core_v0.15"')))).toMatchObject({ _tag: "InvalidTrace", line: 1 })
  })

  it("says which line is wrong and why", () => {
    expect(failureOf(Trace.parse(""))).toMatchObject({ _tag: "InvalidTrace", line: 1 })
    expect(failureOf(Trace.parse('{"format":"something-else","version":1}'))).toMatchObject({ _tag: "InvalidTrace", line: 1 })
    expect(failureOf(Trace.parse('{"format":"mcore-effect-trace","version":0}'))).toMatchObject({ _tag: "InvalidTrace", line: 1 })
    expect(failureOf(Trace.parse(`${headerLine}\n{"dir":"client->coordinator","peer":"client-0","t":0,"frames":["kQA="]}\nnot json`)))
      .toMatchObject({ _tag: "InvalidTrace", line: 3 })
    expect(failureOf(Trace.parse(`${headerLine}\n{"dir":"client->coordinator","peer":"client-0","t":-1,"frames":[]}`)))
      .toMatchObject({ _tag: "InvalidTrace", line: 2 })
    expect(failureOf(Trace.parse(`${headerLine}\n{"dir":"client->coordinator","peer":"client-0","t":0,"frames":["not base64!"]}`)))
      .toMatchObject({ _tag: "InvalidTrace", line: 2 })
    expect(failureOf(Trace.parse(`${headerLine}\n[1,2]`))).toMatchObject({ _tag: "InvalidTrace", line: 2 })
  })
})

describe("Trace: files", () => {
  it.effect("write then read gives the same trace", () =>
    Effect.gen(function*() {
      const path = Path.join(yield* tempDir, "a.trace.jsonl")
      yield* Trace.write(path, { header, entries: [connect, reply] })
      expect(yield* Trace.read(path)).toEqual({ header, entries: [connect, reply] })
    }).pipe(Effect.scoped))

  it.effect("a writer puts the header first and every appended message in order; closing the scope writes the rest", () =>
    Effect.gen(function*() {
      const path = Path.join(yield* tempDir, "b.trace.jsonl")
      yield* Effect.gen(function*() {
        const writer = yield* Trace.writer(path, header)
        writer.append(connect)
        yield* writer.flush
        expect(yield* Trace.read(path)).toEqual({ header, entries: [connect] })
        writer.append(ack)
        writer.append(reply)
      }).pipe(Effect.scoped)
      expect(yield* Trace.read(path)).toEqual({ header, entries: [connect, ack, reply] })
    }).pipe(Effect.scoped))

  it.effect("a missing file is a TraceIoFailed", () =>
    Effect.gen(function*() {
      const path = Path.join(yield* tempDir, "missing.trace.jsonl")
      const error = yield* Effect.flip(Trace.read(path))
      expect(error.reason).toMatchObject({ _tag: "TraceIoFailed", operation: "read", path })
    }).pipe(Effect.scoped))
})
