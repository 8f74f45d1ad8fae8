/**
 * The test coordinator and engines in each Megatron-LM dialect, over real sockets: what the
 * coordinator forwards to engines and how it fans their batches out (raw peers speaking the
 * dialect through the protocol's codecs), what it does with a message its dialect lacks (drops it,
 * counts and logs it as malformed, keeps it in its records, and goes on), and the replies' shapes
 * against the ones Megatron's own processes sent at each ref (`packages/protocol/test/fixtures/megatron`).
 */
import { describe, expect, it } from "@effect/vitest"
import { Dialect, Dialects, Msgpack } from "@mcore-effect/protocol"
import { Effect, Result } from "effect"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Generation, TestCluster, TestCoordinator, TestSupport, Vocabulary } from "../src/index.ts"
import * as DialectPeer from "./support/DialectPeer.ts"

const singleFrame = ["main", "core_v0.19", "core_v0.18", "core_v0.17"] as const
const megatron = [...singleFrame, "pr-6497", "core_v0.16"] as const

const hex = (frame: Uint8Array) => Buffer.from(frame).toString("hex")
const noHashing = { blockSizeTokens: null, prefixCachingPolicy: null }
const prompt = "the quick fox runs over the dog"
const tokens = Vocabulary.tokenize(prompt)

/** A coordinator in `protocol` with one raw engine and one raw client, both speaking it. */
const rig = (protocol: Dialect.Name) =>
  Effect.gen(function*() {
    const coordinator = yield* TestCoordinator.make({ protocol })
    const engine = yield* DialectPeer.engine(coordinator.address, protocol, "mp-coord-0")
    yield* coordinator.awaitEngines(1)
    const client = yield* DialectPeer.client(coordinator.address, protocol)
    yield* client.connect
    return { coordinator, engine, client, dialect: Dialects.get(protocol) }
  })

describe("TestCoordinator: what each dialect's coordinator forwards and fans out", () => {
  for (const protocol of singleFrame) {
    it.effect(`${protocol}: the client's one frame, re-numbered; a batch frame fanned out as [h, rid, reply], generated_text filled`, () =>
      Effect.gen(function*() {
        const { client, dialect, engine } = yield* rig(protocol)
        yield* client.submit(5, prompt, { num_tokens_to_generate: 2, temperature: 0.5 })
        yield* client.submit(6, tokens, { num_tokens_to_generate: 3 })
        const forwarded = [yield* engine.next(), yield* engine.next()]
        // One frame each: what the client sent, with the coordinator's id (0, 1) in place of its own
        // (5, 6); at main, its four elements followed by a nil `multi_modal_data`, as main's
        // coordinator forwards them (`[20, crid, prompt, sp, None]`, handlers.py).
        const expected = (crid: number, p: string | ReadonlyArray<number>, samplingParams: object) =>
          Result.getOrThrow(Dialect.encodeClient(dialect, Result.getOrThrow(dialect.submit({ requestId: crid, prompt: p, samplingParams }, noHashing))))
            .map(hex)
            .map((frame) => (protocol === "main" ? "95" + frame.slice(2) + "c0" : frame))
        expect(forwarded.map((m) => m.frames.map(hex))).toEqual([
          expected(0, prompt, { num_tokens_to_generate: 2, temperature: 0.5 }),
          expected(1, tokens, { num_tokens_to_generate: 3 })
        ])
        // One engine step, both finished, in one frame: `[h, [reply, reply]]`.
        const reply = (crid: number, generated: ReadonlyArray<number>, p: string | null, extra?: object) => ({
          request_id: crid,
          prompt: p,
          prompt_tokens: ["tensor", p === null ? tokens : Vocabulary.tokenize(p)],
          generated_tokens: generated,
          generated_text: null,
          status: "COMPLETED",
          sampling_params: { detokenize_stop_sequence: false },
          ...extra
        })
        yield* engine.send([Msgpack.encode([dialect.headers.values.ENGINE_REPLY, [reply(1, [1, 2, 3], null), reply(0, [4, 0], prompt)]])])
        const [first, second] = yield* client.untilReplies(2)
        expect([first!.frames.length, first!.message.requestId, second!.message.requestId]).toEqual([1, 6, 5])
        // The coordinator detokenizes every reply (EOD removed); core_v0.17/18 also give a token prompt its text.
        expect(first!.message.reply).toMatchObject({ request_id: 1, generated_text: Vocabulary.detokenize([1, 2, 3]) })
        expect(first!.message.reply.prompt).toBe(protocol === "core_v0.17" || protocol === "core_v0.18" ? prompt : null)
        expect(second!.message.reply).toMatchObject({ request_id: 0, prompt, generated_text: Vocabulary.detokenize([4]) })
      }).pipe(Effect.scoped))
  }

  it.effect("core_v0.16: a record fanned out by its first request's id, each request detokenized; PAUSE_ACK relayed once every engine acked", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* rig("core_v0.16")
      yield* client.submit(5, tokens, { num_tokens_to_generate: 2 })
      expect((yield* engine.next()).message).toMatchObject({ _tag: "SubmitRequest", requestId: 0, prompt: tokens })
      const request = { request_id: 0, prompt: null, prompt_tokens: ["tensor", tokens], generated_tokens: [4, 0], generated_text: null }
      yield* engine.send([Msgpack.encode([4, [{ requests: [request], latency: null }]])])
      const reply = yield* client.next()
      expect(reply.message.requestId).toBe(5)
      // Its coordinator's `detokenize`: the text of the tokens (EOD removed), and a token prompt's text.
      expect(reply.message.reply).toEqual({
        requests: [{ ...request, prompt, generated_text: Vocabulary.detokenize([4]) }],
        latency: null
      })
      // PAUSE forwarded as [5]; the engine's [6] relayed as [6, identity] to the client and [6] to the engine.
      yield* client.sendMessage({ _tag: "Pause" })
      expect((yield* engine.next()).frames.map(hex)).toEqual(["9105"])
      yield* engine.send([Msgpack.encode([6])])
      expect((yield* client.next()).frames.map(hex)).toEqual([hex(Msgpack.encode([6, new Uint8Array(Buffer.from("mp-coord-0"))]))])
      expect((yield* engine.next()).frames.map(hex)).toEqual(["9106"])
    }).pipe(Effect.scoped))

  it.effect("main: Megatron's client's five-element SUBMIT_REQUEST (nil media) is forwarded as it came, re-numbered", () =>
    Effect.gen(function*() {
      const { client, dialect, engine } = yield* rig("main")
      const four = Result.getOrThrow(dialect.submit({ requestId: 4, prompt: tokens }, noHashing))
      const [frame] = Result.getOrThrow(Dialect.encodeClient(dialect, { ...four, multiModalData: null } as Dialect.Message))
      expect(hex(frame!).slice(0, 2)).toBe("95")
      yield* client.send([frame!])
      const forwarded = yield* engine.next()
      expect(forwarded.frames.map(hex)).toEqual([hex(frame!).replace(/^951404/, "951400")])
      expect(forwarded.message).toMatchObject({ _tag: "SubmitRequest", requestId: 0, prompt: tokens, multiModalData: null })
    }).pipe(Effect.scoped))

  it.effect("main: a batch of partials fans out as [22, rid, partial]; ABORT goes to the engine as [23, crid]", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* rig("main")
      yield* client.submit(9, tokens, { num_tokens_to_generate: 4 })
      yield* engine.next()
      yield* engine.send([Msgpack.encode([22, [{ request_id: 0, new_tokens: [3, 4] }]])])
      const partial = yield* client.next()
      expect(partial.frames.map(hex)).toEqual([hex(Msgpack.encode([22, 9, { request_id: 0, new_tokens: [3, 4] }]))])
      yield* client.sendMessage({ _tag: "AbortRequest", requestId: 9 })
      expect((yield* engine.next()).frames.map(hex)).toEqual([hex(Msgpack.encode([23, 0]))])
    }).pipe(Effect.scoped))

  it.effect("pr-6497: [20, crid, sp] and the prompt frame forwarded; [21, [[crid, detokenize]]] + bodies fanned out as [21, rid] + body", () =>
    Effect.gen(function*() {
      const { client, engine } = yield* rig("pr-6497")
      yield* client.submit(3, prompt, { num_tokens_to_generate: 2 })
      const forwarded = yield* engine.next()
      expect(forwarded.frames.length).toBe(2)
      expect(forwarded.message).toMatchObject({ _tag: "SubmitRequest", requestId: 0, prompt })
      const body = { request_id: 0, generated_tokens: [5, 6], generated_text: null, status: "COMPLETED" }
      yield* engine.send([Msgpack.encode([21, [[0, true]]]), Msgpack.encode(body)])
      const reply = yield* client.next()
      expect(reply.frames.map(hex)[0]).toBe(hex(Msgpack.encode([21, 3])))
      expect(reply.message.reply).toMatchObject({ request_id: 0, generated_text: Vocabulary.detokenize([5, 6]) })
    }).pipe(Effect.scoped))
})

describe("TestCoordinator: a message its dialect lacks", () => {
  it.effect("is dropped, counted and logged as malformed, kept in the records; the coordinator goes on (core_v0.19, core_v0.17)", () =>
    TestSupport.withLogs((logs) =>
      Effect.gen(function*() {
        const v019 = yield* rig("core_v0.19")
        // The reference protocol's ABORT and a partial: unknown headers that kill Megatron's core_v0.19 coordinator.
        yield* v019.client.send([Msgpack.encode([23, 0])])
        yield* v019.client.send([Msgpack.encode([24, 0, [1], {}, {}, [0]])])
        yield* v019.client.send([Msgpack.encode([99])])
        const after = yield* v019.coordinator.waitFor("3 rejections", (s) => s.rejected.length === 3)
        expect(after.counters).toMatchObject({ malformed: 2, unknownHeader: 1 })
        expect(after.rejected.map((r) => [r.kind, r.why.split(":")[0]])).toEqual([
          ["malformed", "header 23 is not in the core_v0.19 protocol (ABORT_REQUEST in the reference protocol)"],
          ["malformed", "header 24 is not in the core_v0.19 protocol (SUBMIT_REQUEST_WITH_KV in the reference protocol)"],
          ["unknownHeader", "unknown header 99"]
        ])
        expect(logs.filter((l) => l.includes("(malformed): header 23 is not in the core_v0.19 protocol"))).toHaveLength(1)
        // Still serving.
        yield* v019.client.submit(0, tokens, { num_tokens_to_generate: 1 })
        expect((yield* v019.engine.next()).message).toMatchObject({ _tag: "SubmitRequest", requestId: 0 })

        // core_v0.17 numbers from 1: the reference protocol's CONNECT (0) and profiler (46) are not its.
        const v017 = yield* rig("core_v0.17")
        yield* v017.client.send([Msgpack.encode([0])])
        yield* v017.client.send([Msgpack.encode([46])])
        const v017After = yield* v017.coordinator.waitFor("2 rejections", (s) => s.rejected.length === 2)
        expect(v017After.counters.malformed).toBe(2)
        expect(v017After.engines[0]!.receivedTotal).toBe(0)
      }).pipe(Effect.scoped), "Warn"))

  it.effect("main: a reference-framed (five-frame) SUBMIT is a wrong arity; a bad batch from an engine is malformed; nothing is forwarded", () =>
    Effect.gen(function*() {
      const { client, coordinator, engine } = yield* rig("main")
      const reference = Result.getOrThrow(Dialect.encodeClient(
        Dialects.get("reference"),
        Result.getOrThrow(Dialects.get("reference").submit({ requestId: 0, prompt: "hi" }, noHashing))
      ))
      yield* client.send(reference)
      yield* engine.send([Msgpack.encode([21, 5])])
      yield* engine.send([Msgpack.encode([21, [{ generated_tokens: [1] }]])])
      const after = yield* coordinator.waitFor("3 rejections", (s) => s.rejected.length === 3)
      expect(after.counters).toMatchObject({ badArity: 1, malformed: 2 })
      expect(after.engines[0]!.receivedTotal).toBe(0)
    }).pipe(Effect.scoped, TestSupport.quiet))
})

interface Captured {
  readonly scenario: string
  readonly direction: string
  readonly header: string
  readonly frames: ReadonlyArray<string>
}

/** The reply maps Megatron's coordinator sent its client at this ref, by scenario. */
const capturedReplies = (protocol: (typeof megatron)[number]): ReadonlyMap<string, Record<string, unknown>> => {
  const path = fileURLToPath(new URL(`../../protocol/test/fixtures/megatron/${protocol}.json`, import.meta.url))
  const fixture = JSON.parse(readFileSync(path, "utf8")) as { readonly messages: ReadonlyArray<Captured> }
  const out = new Map<string, Record<string, unknown>>()
  for (const m of fixture.messages) {
    if (m.direction !== "coordinator->client" || m.header !== "ENGINE_REPLY") continue
    const frames = m.frames.map((f) => Msgpack.decode(Buffer.from(f, "hex")) as Array<any>)
    out.set(m.scenario, (frames.length > 1 ? frames[1] : frames[0]![2]) as Record<string, unknown>)
  }
  return out
}

describe("TestEngine: each dialect's reply map is that ref's", () => {
  for (const protocol of megatron) {
    it.effect(`${protocol}: the keys of a reply and of its sampling_params, in order, as Megatron's processes sent them`, () =>
      Effect.gen(function*() {
        const captured = capturedReplies(protocol)
        const cluster = yield* TestCluster.make({ engines: 1, protocol })
        const client = yield* DialectPeer.client(cluster.address, protocol)
        yield* client.connect
        yield* client.submit(0, prompt, { num_tokens_to_generate: 3, temperature: 0.5, top_k: 3, top_p: 0.9 })
        yield* client.submit(1, tokens, { num_tokens_to_generate: 2 })
        const replies = (yield* client.untilReplies(2)).map((m) => m.message)
        const byId = new Map(replies.map((r) => [r.requestId as number, r.reply as Record<string, unknown>]))
        /** core_v0.16's reply is a record: its keys, then its request's. */
        const requestIn = (reply: Record<string, unknown>) => (protocol === "core_v0.16" ? (reply.requests as Array<Record<string, unknown>>)[0]! : reply)
        for (const [id, scenario] of [[0, "submit-text"], [1, "submit-token-ids"]] as const) {
          if (protocol === "core_v0.16") expect(Object.keys(byId.get(id)!)).toEqual(Object.keys(captured.get(scenario)!))
          const ours = requestIn(byId.get(id)!)
          const theirs = requestIn(captured.get(scenario)!)
          expect([scenario, Object.keys(ours)]).toEqual([scenario, Object.keys(theirs)])
          expect(Object.keys(ours.sampling_params as object)).toEqual(Object.keys(theirs.sampling_params as object))
          expect(ours.generated_tokens).toEqual(Generation.tokens(tokens, id === 0 ? 3 : 2))
        }
      }).pipe(Effect.scoped))
  }
})
