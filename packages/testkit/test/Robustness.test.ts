import { describe, expect, it } from "@effect/vitest"
import { Headers, Msgpack } from "@mcore-effect/protocol"
import { Effect } from "effect"
import * as fc from "fast-check"
import { TestCluster } from "../src/index.ts"
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

/** Keeps the fixture alive: no SHUTDOWN, STOP or CONNECT in the noise. */
const isHarmless = (frames: ReadonlyArray<Uint8Array>) => {
  try {
    const head = Msgpack.decode(frames[0]!) as Array<unknown>
    return !Array.isArray(head) || ![H.SHUTDOWN, H.STOP, H.CONNECT].includes(head[0] as never)
  } catch {
    return true
  }
}

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
