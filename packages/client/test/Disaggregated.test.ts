/**
 * The disaggregated client against two test clusters (a prefill one and a decode one) over the
 * in-memory transport: each path of a hand-off, and the one RELEASE_KV each pin gets.
 */
import { describe, expect, it } from "@effect/vitest"
import { Faults, Generation, TestCluster, Vocabulary } from "@mcore-effect/testkit"
import { MemorySocket } from "@mcore-effect/protocol"
import { Effect, Fiber, Schedule, Stream } from "effect"
import { Disaggregated, InferenceClient, Transport } from "../src/index.ts"
import { withRegistry } from "./support/Cluster.ts"
import { prefillParams } from "../src/internal/handoff/params.ts"
import { pinsOf, setup } from "./support/Disaggregation.ts"

const tokens = Vocabulary.tokenize("the quick fox runs over the lazy dog")

/** Polls `connected` until it is `wanted` (every few milliseconds: a sync loop would starve the sockets). */
const until = (connected: Effect.Effect<boolean>, wanted: boolean) =>
  Effect.repeat(connected, { until: (up) => up === wanted, schedule: Schedule.spaced("5 millis") })

const reasonOf = <A>(effect: Effect.Effect<A, { readonly reason: { readonly _tag: string } }>) =>
  Effect.map(Effect.flip(effect), (error) => error.reason._tag)

describe("Disaggregated", () => {
  for (const protocol of ["main", "pr-6497", "reference"] as const) {
    it.live(`${protocol}: submit prefills on P, decodes on D with P's kv_meta and blocks, and releases the pin once`, () =>
      Effect.gen(function*() {
        const { client, decodeCluster, disaggregated, prefillCluster } = yield* setup({ protocol })
        const reply = yield* client.submit(tokens, { num_tokens_to_generate: 6 })
        expect(reply.generated_tokens).toEqual(Generation.tokens(tokens, 6))
        yield* disaggregated.idle
        const p = yield* prefillCluster.engines[0]!.waitFor("the release", (s) => s.released.length === 1)
        expect(p.pinned).toEqual([])
        expect(p.counters.unknownRelease).toBe(0)
        // The prefill: do_kv_handoff, nothing to generate.
        const d = yield* decodeCluster.engines[0]!.snapshot
        expect(d.kvHandoffs).toHaveLength(1)
        const handoff = d.kvHandoffs[0]!
        expect(handoff.srcBlockIds).toHaveLength(Math.ceil(tokens.length / 4))
        expect(handoff.kvMeta.resume_tokens).toEqual(Generation.tokens(tokens, 1))
        const stats = yield* disaggregated.stats
        expect(stats).toMatchObject({ started: 1, decoded: 1, pins: 1, released: 1, died: 0, background: 0 })
        expect(stats.pinnedBlocks).toBe(stats.releasedBlocks)
        expect(yield* client.pendingCount).toBe(0)
      }).pipe(Effect.scoped, withRegistry))
  }

  it.live("members without the one-shot start (a wrapper's copy): the same hand-off through start's queues", () =>
    Effect.gen(function*() {
      const { client, disaggregated, prefillCluster } = yield* setup({ viaStart: true })
      const replies = yield* Effect.all(
        [client.submit(tokens, { num_tokens_to_generate: 3 }), client.submit(tokens, { num_tokens_to_generate: 5 })],
        { concurrency: "unbounded" }
      )
      expect(replies.map((r) => r.generated_tokens)).toEqual([Generation.tokens(tokens, 3), Generation.tokens(tokens, 5)])
      yield* disaggregated.idle
      const p = yield* prefillCluster.engines[0]!.waitFor("the releases", (s) => s.released.length === 2)
      expect(p.pinned).toEqual([])
      expect(yield* disaggregated.stats).toMatchObject({ started: 2, decoded: 2, pins: 2, released: 2, died: 0 })
    }).pipe(Effect.scoped, withRegistry))

  it("the prefill's parameters: one object per user's object while it is unchanged, a fresh one once it changes", () => {
    const params: { num_tokens_to_generate: number; temperature?: number } = { num_tokens_to_generate: 8, temperature: 0.5 }
    const first = prefillParams(params)
    expect(first).toEqual({ num_tokens_to_generate: 0, temperature: 0.5, do_kv_handoff: true })
    expect(prefillParams(params)).toBe(first)
    params.temperature = 0.7
    const changed = prefillParams(params)
    expect(changed).not.toBe(first)
    expect(changed).toEqual({ num_tokens_to_generate: 0, temperature: 0.7, do_kv_handoff: true })
    delete params.temperature
    expect(prefillParams(params)).toEqual({ num_tokens_to_generate: 0, do_kv_handoff: true })
    expect(prefillParams({ num_tokens_to_generate: 8 })).toEqual({ num_tokens_to_generate: 0, do_kv_handoff: true })
    expect(prefillParams(undefined)).toEqual({ num_tokens_to_generate: 0, do_kv_handoff: true })
  })

  it.live("stream: D's partials in order under the disaggregated client's id, then the final; the pin released", () =>
    Effect.gen(function*() {
      const { client, disaggregated, prefillCluster } = yield* setup({ stepMs: 2 })
      const events = yield* Stream.runCollect(client.stream(tokens, { num_tokens_to_generate: 8 }))
      const streamed = events.flatMap((e) => (e._tag === "Tokens" ? e.newTokens : []))
      const final = events.at(-1)
      expect(streamed.length).toBeGreaterThan(0)
      expect(streamed).toEqual(Generation.tokens(tokens, 8).slice(0, streamed.length))
      expect(final?._tag === "Final" && final.reply.generated_tokens).toEqual(Generation.tokens(tokens, 8))
      expect(events.every((e) => e._tag === "Final" || e.requestId === 0)).toBe(true)
      yield* disaggregated.idle
      yield* prefillCluster.engines[0]!.waitFor("the release", (s) => s.released.length === 1 && s.pinned.length === 0)
      expect((yield* disaggregated.stats).released).toBe(1)
    }).pipe(Effect.scoped, withRegistry))

  it.live("refused before any frame: a text prompt, log probs, num_tokens_total, media", () =>
    Effect.gen(function*() {
      const { client, prefillCluster } = yield* setup()
      expect(yield* reasonOf(client.submit("hello there", { num_tokens_to_generate: 2 }))).toBe("InvalidArgument")
      expect(yield* reasonOf(client.submit(tokens, { return_log_probs: true }))).toBe("InvalidArgument")
      expect(yield* reasonOf(client.submit(tokens, { top_n_logprobs: 2 }))).toBe("InvalidArgument")
      expect(yield* reasonOf(client.submit(tokens, { num_tokens_total: 40 }))).toBe("InvalidArgument")
      expect(yield* reasonOf(Stream.runCollect(client.stream("text", {})))).toBe("InvalidArgument")
      expect(yield* reasonOf(client.submitWithId(tokens, { return_log_probs: true }))).toBe("InvalidArgument")
      const p = yield* prefillCluster.engines[0]!.snapshot
      expect(p.receivedTotal).toBe(0)
    }).pipe(Effect.scoped, withRegistry))

  it.live("a dialect without the hand-off is refused by name", () =>
    Effect.gen(function*() {
      const network = new MemorySocket.Network()
      const cluster = yield* TestCluster.make({ engines: 1, protocol: "core_v0.19", network })
      const member = yield* InferenceClient.make({ address: cluster.address, protocol: "core_v0.19" }).pipe(
        Effect.provide(Transport.layerMemory(network))
      )
      const error = yield* Effect.flip(
        Disaggregated.make({ prefill: [{ name: "p", client: member }], decode: [{ name: "d", client: member }] })
      )
      expect(error.reason._tag).toBe("InvalidRequest")
      expect(error.message).toContain("core_v0.19")
    }).pipe(Effect.scoped, withRegistry))

  it.live("a decode that cannot start (D gone): DecodeRefused, and the pin released at once", () =>
    Effect.gen(function*() {
      const { client, decode, decodeCluster, disaggregated, prefillCluster } = yield* setup()
      yield* decodeCluster.coordinator.crash
      yield* until(decode.connected, false)
      expect(yield* reasonOf(client.submit(tokens, { num_tokens_to_generate: 4 }))).toBe("DecodeRefused")
      yield* prefillCluster.engines[0]!.waitFor("the release", (s) => s.released.length === 1)
      expect(yield* disaggregated.stats).toMatchObject({ started: 1, failed: 1, decodes: 0, pins: 1, released: 1 })
    }).pipe(Effect.scoped, withRegistry))

  it.live("interrupted before D's first output: ABORT to D, D's output awaited, then the one release", () =>
    Effect.gen(function*() {
      const { client, decodeCluster, disaggregated, prefillCluster } = yield* setup()
      const dEngine = decodeCluster.engines[0]!
      yield* dEngine.injectFault(Faults.hang)
      const fiber = yield* Effect.forkChild(client.submit(tokens, { num_tokens_to_generate: 50 }))
      yield* decodeCluster.coordinator.waitFor("the hand-off", (s) => s.inFlight === 1)
      yield* Fiber.interrupt(fiber)
      // D has not answered: nothing released yet.
      expect((yield* pinsOf(prefillCluster)).released).toEqual([])
      expect((yield* disaggregated.stats).background).toBe(1)
      yield* dEngine.clearFaults()
      yield* disaggregated.idle
      const pins = yield* prefillCluster.engines[0]!.waitFor("the release", (s) => s.released.length === 1)
      expect(pins.pinned).toEqual([])
      expect(yield* disaggregated.stats).toMatchObject({ started: 1, interrupted: 1, released: 1 })
      expect((yield* dEngine.snapshot).aborted).toHaveLength(1)
    }).pipe(Effect.scoped, withRegistry))

  it.live("the deadline before D's first output: RequestTimeout now, the release after D's output", () =>
    Effect.gen(function*() {
      const { client, decodeCluster, disaggregated, prefillCluster } = yield* setup({ requestTimeout: "200 millis" })
      const dEngine = decodeCluster.engines[0]!
      yield* dEngine.injectFault(Faults.hang)
      expect(yield* reasonOf(client.submit(tokens, { num_tokens_to_generate: 50 }))).toBe("RequestTimeout")
      expect((yield* pinsOf(prefillCluster)).released).toEqual([])
      yield* dEngine.clearFaults()
      yield* disaggregated.idle
      yield* prefillCluster.engines[0]!.waitFor("the release", (s) => s.released.length === 1)
    }).pipe(Effect.scoped, withRegistry))

  it.live("D lost before its first output: the pin released after the grace period", () =>
    Effect.gen(function*() {
      const { client, decodeCluster, disaggregated, prefillCluster } = yield* setup({ decodeGrace: "50 millis" })
      yield* decodeCluster.engines[0]!.injectFault(Faults.hang)
      const fiber = yield* Effect.forkChild(reasonOf(client.submit(tokens, { num_tokens_to_generate: 50 })))
      yield* decodeCluster.coordinator.waitFor("the hand-off", (s) => s.inFlight === 1)
      yield* decodeCluster.coordinator.crash
      expect(yield* Fiber.join(fiber)).toBe("CoordinatorLost")
      yield* disaggregated.idle
      yield* prefillCluster.engines[0]!.waitFor("the release", (s) => s.released.length === 1)
      expect(yield* disaggregated.stats).toMatchObject({ failed: 1, released: 1, died: 0 })
    }).pipe(Effect.scoped, withRegistry))

  it.live("P restarted while D decodes: the pin died with P's connection, no release on the new one", () =>
    Effect.gen(function*() {
      const { client, decodeCluster, disaggregated, prefill, prefillCluster } = yield* setup()
      const dEngine = decodeCluster.engines[0]!
      yield* dEngine.injectFault(Faults.hang)
      const fiber = yield* Effect.forkChild(client.submit(tokens, { num_tokens_to_generate: 5 }))
      yield* decodeCluster.coordinator.waitFor("the hand-off", (s) => s.inFlight === 1)
      yield* prefillCluster.coordinator.restart
      yield* prefillCluster.coordinator.waitFor("the client back", (s) => s.clients === 1)
      yield* until(prefill.connected, true)
      yield* dEngine.clearFaults()
      const reply = yield* Fiber.join(fiber)
      expect(reply.generated_tokens).toEqual(Generation.tokens(tokens, 5))
      yield* disaggregated.idle
      const stats = yield* disaggregated.stats
      expect(stats).toMatchObject({ decoded: 1, pins: 1, released: 0, died: 1 })
      // Nothing reached P's engine under the dead connection's id.
      const p = yield* pinsOf(prefillCluster)
      expect(p.released).toEqual([])
      expect(p.unknownRelease).toBe(0)
    }).pipe(Effect.scoped, withRegistry))

  it.live("the InferenceClient layer: connected, dialect, and a plain submit through the service tag", () =>
    Effect.gen(function*() {
      const { client } = yield* setup()
      expect(yield* client.connected).toBe(true)
      expect(client.dialect.name).toBe("main")
      const settled = yield* Stream.runCollect(
        client.submitAllSettled([{ prompt: tokens, samplingParams: { num_tokens_to_generate: 3 } }, { prompt: "text" }])
      )
      expect(settled.map((s) => s.exit._tag).sort()).toEqual(["Failure", "Success"])
    }).pipe(Effect.scoped, withRegistry))
})
