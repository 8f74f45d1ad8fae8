/**
 * The disaggregated client's one promise, as a property over the testkit (in-memory transport,
 * bounded runs): whatever happens to a hand-off (the caller interrupting it at any step, its
 * deadline, D's engine stalled, D or P's coordinator crashing or restarting), at the end every
 * block P pinned was released, except pins that died with P's connection (counted); no prefill
 * id was released twice or over a later connection; no release came before D's first output or
 * failure unless the decode was never submitted or D was lost; and every request ended once.
 */
import { describe, expect, it } from "@effect/vitest"
import { Faults, Vocabulary } from "@mcore-effect/testkit"
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Stream } from "effect"
import * as fc from "fast-check"
import * as Msgpack from "msgpackr"
import type { Disaggregated } from "../src/index.ts"
import { withRegistry } from "./support/Cluster.ts"
import { setup } from "./support/Disaggregation.ts"

const words = ["the", "quick", "fox", "runs", "over", "lazy", "dog", "a", "red", "cat", "sat", "on"]

/** The step of its hand-off at which a request is interrupted. */
type Step = "never" | "start" | "Pinned" | "DecodeSubmitted" | "DecodeOutput"

interface RequestPlan {
  readonly words: number
  readonly tokens: number
  readonly streaming: boolean
  readonly interruptAt: Step
  readonly timeoutMillis: number | undefined
}

interface Plan {
  readonly requests: ReadonlyArray<RequestPlan>
  /** D's engine stalled from the start, for this long (ms); `undefined`: never. */
  readonly decodeStall: number | undefined
  /** A coordinator event, this long (ms) after the start. */
  readonly event: { readonly what: "none" | "crashD" | "restartD" | "restartP"; readonly at: number }
  /** The members' requests through `start`'s queues rather than one-shot entries (see `setup`). */
  readonly viaStart: boolean
}

const plan: fc.Arbitrary<Plan> = fc.record({
  requests: fc.array(
    fc.record({
      words: fc.integer({ min: 1, max: 12 }),
      tokens: fc.integer({ min: 1, max: 12 }),
      streaming: fc.boolean(),
      interruptAt: fc.constantFrom<Step>("never", "never", "start", "Pinned", "DecodeSubmitted", "DecodeOutput"),
      timeoutMillis: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined })
    }),
    { minLength: 1, maxLength: 4 }
  ),
  decodeStall: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
  event: fc.record({
    what: fc.constantFrom("none", "none", "crashD", "restartD", "restartP"),
    at: fc.integer({ min: 0, max: 40 })
  }),
  viaStart: fc.boolean()
})

const runPlan = (p: Plan) =>
  Effect.gen(function*() {
    const events: Array<Disaggregated.Event> = []
    const steps = p.requests.map(() => new Map<Step, Deferred.Deferred<void>>())
    const { client, decodeCluster, disaggregated, prefillCluster } = yield* setup({
      stepMs: 1,
      decodeGrace: "100 millis",
      viaStart: p.viaStart,
      observe: (event) => {
        events.push(event)
        const step = steps[event.request]?.get(event._tag as Step)
        if (step !== undefined) Deferred.doneUnsafe(step, Exit.void)
      }
    })
    const dEngine = decodeCluster.engines[0]!
    if (p.decodeStall !== undefined) yield* dEngine.injectFault(Faults.hang)
    const pRestartFrom = { next: undefined as number | undefined }

    // The requests, in order (the disaggregated client numbers them 0, 1, ...).
    const fibers: Array<Fiber.Fiber<unknown, unknown>> = []
    for (const [i, r] of p.requests.entries()) {
      const prompt = Vocabulary.tokenize(words.slice(0, r.words).join(" "))
      const params = { num_tokens_to_generate: r.tokens }
      const options = r.timeoutMillis === undefined ? undefined : { timeout: Duration.millis(r.timeoutMillis) }
      const run: Effect.Effect<unknown, unknown> = r.streaming
        ? Stream.runDrain(client.stream(prompt, params, options))
        : client.submit(prompt, params, options)
      if (r.interruptAt !== "never" && r.interruptAt !== "start") {
        steps[i]!.set(r.interruptAt, Deferred.makeUnsafe<void>())
      }
      const fiber = yield* Effect.forkChild(run, { startImmediately: true })
      fibers.push(fiber)
      if (r.interruptAt === "start") yield* Effect.forkChild(Fiber.interrupt(fiber))
      const step = steps[i]!.get(r.interruptAt)
      if (step !== undefined) yield* Effect.forkChild(Effect.andThen(Deferred.await(step), Fiber.interrupt(fiber)))
    }

    // The coordinator event and the stall's end, meanwhile.
    const chaos = Effect.gen(function*() {
      yield* Effect.sleep(Duration.millis(p.event.at))
      switch (p.event.what) {
        case "crashD":
          yield* decodeCluster.coordinator.crash
          break
        case "restartD":
          yield* decodeCluster.coordinator.restart
          break
        case "restartP":
          yield* prefillCluster.coordinator.restart
          pRestartFrom.next = (yield* prefillCluster.coordinator.snapshot).nextRequestId
          break
      }
    })
    const stall = p.decodeStall === undefined
      ? Effect.void
      : Effect.andThen(Effect.sleep(Duration.millis(p.decodeStall)), dEngine.clearFaults())
    yield* Effect.all([chaos, stall], { concurrency: "unbounded", discard: true })

    // Every request ends (once: a fiber ends once), and every background wait with it.
    const exits = yield* Effect.forEach(fibers, Fiber.await)
    yield* disaggregated.idle.pipe(Effect.timeoutOrElse({ duration: "20 seconds", orElse: () => Effect.die("background waits never ended") }))

    const stats = yield* disaggregated.stats
    expect(stats.started).toBe(stats.decoded + stats.failed + stats.interrupted)
    expect(stats.started).toBeLessThanOrEqual(p.requests.length)
    expect(stats.released + stats.died).toBe(stats.pins)
    for (const exit of exits) {
      if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) {
        // A failure is a typed ClientError, never a defect.
        expect(Cause.findErrorOption(exit.cause)._tag).toBe("Some")
      }
    }

    const released = events.filter((e) => e._tag === "Released").map((e) => e.pin!.requestId)
    const died = events.filter((e) => e._tag === "Died").map((e) => e.pin!.requestId)
    expect(new Set(released).size).toBe(released.length)
    // RELEASE_KV is fire-and-forget: the engine has them once the coordinator has relayed them
    // (one sent just before P's coordinator went down may be lost with it).
    const pEngine = p.event.what === "restartP"
      ? yield* prefillCluster.engines[0]!.snapshot
      : yield* prefillCluster.engines[0]!.waitFor("every release", (s) => s.released.length >= released.length)
    // No release of something not pinned: none repeated, none foreign.
    expect(pEngine.counters.unknownRelease).toBe(0)
    if (p.event.what === "restartP") for (const id of pEngine.released) expect(released).toContain(id)
    else expect([...pEngine.released].sort()).toEqual([...released].sort())
    // A pin that died with P's connection is never released over a later one.
    for (const id of died) expect(pEngine.released).not.toContain(id)
    if (p.event.what !== "restartP") {
      expect(stats.died).toBe(0)
      expect(pEngine.pinned).toEqual([])
      expect(stats.releasedBlocks).toBe(stats.pinnedBlocks)
    } else {
      // What P's engine still holds died with the connection (counted), or its reply died with it.
      for (const id of died) expect(pEngine.pinned).toContain(id)
      const from = pRestartFrom.next ?? Infinity
      // The coordinator after the restart numbers on from `from`: it relays no release of a pin
      // numbered before (one made on the connection that died).
      const after = (yield* prefillCluster.coordinator.awaitEngines(1)).engines[0]!.received
        .filter((d) => d.name === "RELEASE_KV")
        .map((d) => (Msgpack.unpack(d.frames[0]!) as [number, number])[1])
      for (const id of after) expect(id).toBeGreaterThanOrEqual(from)
    }

    // The engines' own books (the testkit's KvPins): D's engine never died of what it was sent
    // (a text prompt, log probs, a wrong resume-token or block count), no release was repeated
    // or foreign, and, where D stayed reachable and answered, none came while D could still
    // read the blocks, and no import read freed blocks.
    expect((yield* decodeCluster.engines[0]!.snapshot).failure).toBeNull()
    const pins = yield* prefillCluster.kvPins
    expect(pins.repeated).toBe(0)
    expect(pins.foreign).toBe(0)
    const exempt = events.some((e) => e._tag === "DecodeLost" || e._tag === "DecodeSilent")
    if (!exempt) {
      expect(pins.releasedBeforeFirstOutput).toBe(0)
      expect((yield* decodeCluster.kvPins).importsAfterRelease + pins.importsAfterRelease).toBe(0)
    }

    // Per request: the release after D's first output or failure, unless the decode was never
    // submitted or D was lost.
    for (let request = 0; request < p.requests.length; request++) {
      const mine = events.filter((e) => e.request === request).map((e) => e._tag)
      const at = (tag: Disaggregated.Event["_tag"]) => mine.indexOf(tag)
      const release = at("Released")
      if (release === -1) continue
      expect(mine.filter((t) => t === "Released" || t === "Died")).toHaveLength(1)
      if (at("DecodeSubmitted") === -1) continue
      const safe = [at("DecodeOutput"), at("DecodeFailed"), at("DecodeLost"), at("DecodeSilent")].filter((i) => i !== -1)
      expect(safe.length).toBeGreaterThan(0)
      expect(Math.min(...safe)).toBeLessThan(release)
    }
  })

describe("Disaggregated, property", () => {
  it("every pin released once, after D's output, on the connection that made it, whatever the schedule", async () => {
    await fc.assert(
      fc.asyncProperty(plan, (p) => Effect.runPromise(runPlan(p).pipe(Effect.scoped, withRegistry))),
      { numRuns: 50, endOnFailure: true }
    )
  }, 240_000)
})
