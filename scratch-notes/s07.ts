import { Duration, Effect, Metric } from "effect"

const requests = Metric.counter("mcore_requests_total", { description: "requests", attributes: { service: "api" } })
const inflight = Metric.gauge("mcore_inflight")
const latency = Metric.histogram("mcore_latency_ms", {
  boundaries: Metric.linearBoundaries({ start: 0, width: 10, count: 5 }) // or exponentialBoundaries / boundariesFromIterable([...])
})
const timer = Metric.timer("mcore_op_duration") // Histogram<Duration>

const program = Effect.gen(function*() {
  yield* Metric.update(requests, 1)              // counter: adds (no Metric.increment in 4.x)
  yield* Metric.update(requests, 2)
  const tagged = Metric.withAttributes(requests, { route: "/x" }) // separate series per attribute set
  yield* Metric.update(tagged, 5)
  yield* Metric.update(inflight, 3)              // gauge: sets
  yield* Metric.modify(inflight, -1)             // gauge: adds delta
  yield* Metric.update(latency, 7)
  yield* Metric.update(latency, 42)
  yield* Metric.update(timer, Duration.millis(12))
  // track an effect's outcome: Effect.track(metric, (exit) => input)
  yield* Effect.succeed("ok").pipe(Effect.track(requests, () => 10))

  // Reading in tests
  const c = yield* Metric.value(requests)        // { count, incremental }
  const ct = yield* Metric.value(tagged)
  const g = yield* Metric.value(inflight)        // { value }
  const h = yield* Metric.value(latency)         // { buckets: [le, cumulativeCount][], count, min, max, sum }
  const snap = yield* Metric.snapshot            // all registered metrics: { id, type, attributes, state }
  return { c, ct, g, h, ids: snap.map((s) => `${s.type}:${s.id}`) }
})

// Registry is a Context.Reference whose default Map is SHARED process-wide: isolate tests with a fresh Map
Effect.runPromise(program.pipe(Effect.provideService(Metric.MetricRegistry, new Map()))).then((r) => console.dir(r, { depth: 4 }))
