import { describe, expect, it } from "@effect/vitest"
import { Dialects, Headers, Msgpack } from "@mcore-effect/protocol"
import { Effect } from "effect"
import * as fc from "fast-check"
import { TestCluster } from "../src/index.ts"
import * as DialectPeer from "./support/DialectPeer.ts"
import * as PackageCluster from "./support/PackageCluster.ts"
import * as RawClient from "./support/RawClient.ts"

const H = Headers.values
const headers = Object.values(H)

/** A msgpack value of any shape, as frames carry them. */
const anyValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer(),
  fc.double(),
  fc.string({ maxLength: 20 }),
  fc.uint8Array({ maxLength: 20 }),
  fc.array(fc.integer(), { maxLength: 5 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.integer(), { maxKeys: 4 })
)

/** Frames a confused or hostile client might send: raw bytes, or plausible metadata with wrong parts. */
const frame = fc.oneof(
  fc.uint8Array({ maxLength: 40 }),
  fc.tuple(fc.constantFrom(...headers, 99, -1), fc.array(anyValue, { maxLength: 4 })).map(([h, rest]) =>
    Msgpack.encode([h, ...rest])
  )
)

/** Keeps the fixture alive: no SHUTDOWN, STOP or CONNECT (as a header table numbers them) in the noise. */
const harmlessIn = (table: { readonly SHUTDOWN?: number; readonly STOP?: number; readonly CONNECT?: number }) =>
(frames: ReadonlyArray<Uint8Array>) => {
  try {
    const head = Msgpack.decode(frames[0]!) as Array<unknown>
    return !Array.isArray(head) || ![table.SHUTDOWN, table.STOP, table.CONNECT].includes(head[0] as never)
  } catch {
    return true
  }
}

const isHarmless = harmlessIn(H)

describe("Robustness", () => {
  for (const policy of ["longest_prefix", "load_balanced"] as const) {
    it.effect(`${policy}: random messages are counted or handled, never crash a loop; a valid request still completes`, () =>
      Effect.gen(function*() {
        const cluster = yield* TestCluster.make({ engines: 2, coordinator: { policy } })
        const client = yield* RawClient.make(cluster.address)
        yield* client.connect
        const noise = fc.sample(fc.array(frame, { minLength: 1, maxLength: 6 }), { numRuns: 300, seed: 42 })
        for (const frames of noise.filter(isHarmless)) yield* client.send(frames)
        // SUBMITs with garbage bodies: under load_balanced the coordinator forwards them unread, so the
        // engines meet them.
        for (let id = 0; id < 20; id++) {
          const [metadata] = RawClient.submitFrames(id, "x")
          yield* client.send([metadata!, ...fc.sample(fc.uint8Array({ maxLength: 12 }), { numRuns: 4, seed: id })])
        }
        // Whatever state the noise left: back to RUNNING.
        yield* client.signal(H.UNPAUSE)
        yield* client.signal(H.RESUME)
        yield* client.signal(H.UNPAUSE)
        yield* client.submit(1_000, "the quick fox", { params: { num_tokens_to_generate: 2 } })
        const reply = yield* Effect.gen(function*() {
          for (;;) {
            const r = yield* client.nextReply()
            if (r.header === H.ENGINE_REPLY && r.requestId === 1_000) return r
          }
        })
        expect(reply.body?.generated_length).toBe(2)
        const snapshot = yield* cluster.coordinator.snapshot
        expect(snapshot.running).toBe(true)
        expect(snapshot.engines.map((e) => e.identity)).toEqual(["mp-coord-0", "mp-coord-1"])
        const c = snapshot.counters
        expect(c.internalErrors).toBe(0)
        expect(c.malformed + c.badArity + c.unknownHeader + c.notFromEngine).toBeGreaterThan(100)
        const engines = yield* Effect.all(cluster.engines.map((e) => e.snapshot))
        expect(engines.every((e) => e.running)).toBe(true)
        if (policy === "load_balanced") expect(engines[0]!.counters.malformed + engines[1]!.counters.malformed).toBeGreaterThan(0)
      }).pipe(Effect.scoped))
  }
})

describe("Robustness in a Megatron-LM dialect", () => {
  // The test coordinator, and the coordinator package's own (no test faults): the same demands.
  const runs = [
    ["main", "the test coordinator"],
    ["core_v0.17", "the test coordinator"],
    ["main", "the package's Coordinator"],
    ["core_v0.19", "the package's Coordinator"]
  ] as const
  for (const [protocol, which] of runs) {
    it.effect(`${protocol}, ${which}: random messages from a client and from an engine are counted, never crash a loop`, () =>
      Effect.gen(function*() {
        const dialect = Dialects.get(protocol)
        const wire = dialect.headers.values
        const values = Object.values(wire) as Array<number>
        const cluster: PackageCluster.Cluster = which === "the test coordinator"
          ? yield* TestCluster.make({ engines: 2, protocol })
          : yield* PackageCluster.make({ protocol })
        const client = yield* DialectPeer.client(cluster.address, protocol)
        yield* client.connect
        // One frame, as the dialect frames messages, or several: whatever the header.
        const single = fc.tuple(fc.constantFrom(...values, 99, 0, 23), fc.array(anyValue, { maxLength: 5 }))
          .map(([h, rest]) => [Msgpack.encode([h, ...rest])])
        const noise = fc.sample(fc.oneof(single, fc.array(frame, { minLength: 1, maxLength: 4 })), { numRuns: 300, seed: 7 })
        for (const frames of noise.filter(harmlessIn(wire))) yield* client.send(frames)
        // An engine whose batches are nonsense: not arrays, maps without ids, ids not in flight.
        const engine = yield* DialectPeer.engine(cluster.address, protocol, "mp-coord-9")
        yield* cluster.coordinator.awaitEngines(3)
        const element = fc.oneof(anyValue, fc.record({ request_id: fc.oneof(fc.nat(), fc.double(), fc.string()) }))
        const batches = fc.sample(fc.tuple(fc.constantFrom(wire.ENGINE_REPLY!, 22), fc.oneof(anyValue, fc.array(element, { maxLength: 3 }))), {
          numRuns: 100,
          seed: 9
        })
        for (const [h, body] of batches) yield* engine.send([Msgpack.encode([h, body])])
        yield* engine.send([Msgpack.encode([wire.DISCONNECT])])
        yield* cluster.coordinator.waitFor("the noisy engine to leave", (s) => s.engines.length === 2)
        yield* client.sendMessage({ _tag: "Unpause" })
        yield* client.sendMessage({ _tag: "Resume" })
        yield* client.sendMessage({ _tag: "Unpause" })
        yield* client.submit(1_000, "the quick fox", { num_tokens_to_generate: 2 })
        const reply = yield* Effect.gen(function*() {
          for (;;) {
            const m = yield* client.next()
            if (m.message._tag === "EngineReply" && m.message.requestId === 1_000) return m.message
          }
        })
        expect(reply.reply.generated_length).toBe(2)
        const snapshot = yield* cluster.coordinator.snapshot
        expect(snapshot.running).toBe(true)
        const c = snapshot.counters
        expect(c.internalErrors).toBe(0)
        expect(c.malformed + c.badArity + c.unknownHeader).toBeGreaterThan(100)
        expect(c.unknownRequest + c.malformed).toBeGreaterThan(0)
        const engines = yield* Effect.all(cluster.engines.map((e) => e.snapshot))
        expect(engines.every((e) => e.running)).toBe(true)
      }).pipe(Effect.scoped))
  }
})
