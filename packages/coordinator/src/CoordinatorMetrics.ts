/**
 * The coordinator's metrics in Prometheus' text format, read from its `Snapshot` when scraped:
 * nothing is recorded per request beyond the counters the coordinator keeps anyway, so serving
 * metrics costs the hot loop nothing. `mcore coordinator --metrics-port` serves them at
 * `/metrics`; {@link layerHttp} adds that route to any `HttpRouter`.
 *
 * | metric | type | what |
 * |---|---|---|
 * | `mcore_coordinator_engines` | gauge | engines registered |
 * | `mcore_coordinator_clients` | gauge | clients connected that completed CONNECT |
 * | `mcore_coordinator_requests_in_flight` | gauge | requests on an engine, not yet answered |
 * | `mcore_coordinator_requests_waiting` | gauge | submissions waiting for a first engine |
 * | `mcore_coordinator_requests_routed_total` | counter | submissions routed |
 * | `mcore_coordinator_engine_requests_routed_total{engine}` | counter | per engine, since it registered |
 * | `mcore_coordinator_engine_requests_in_flight{engine}` | gauge | per engine |
 * | `mcore_coordinator_requests_failed_back_total` | counter | held by an engine that left, answered FAILED |
 * | `mcore_coordinator_requests_refused_total` | counter | answered FAILED rather than routed |
 * | `mcore_coordinator_messages_undelivered_total` | counter | replies (and other messages) to a peer gone, dropped |
 * | `mcore_coordinator_messages_refused_total{reason}` | counter | messages dropped, by reason (`malformed`, `bad_arity`, ...) |
 * | `mcore_coordinator_connections_refused_total{reason}` | counter | connections closed, by reason (`not-allowed`, `signature`, ...) |
 * | `mcore_coordinator_prefix_table_hashes` | gauge | hashes in the prefix table |
 * | `mcore_coordinator_held_hashes` | gauge | block hashes held for requests in flight |
 * | `mcore_coordinator_state{state}` | gauge | 1 for the control state it is in (`RUNNING`, `PAUSED`, `SUSPENDED`) |
 * | `mcore_coordinator_internal_errors_total` | counter | exceptions caught in the loop (a bug) |
 * | `process_cpu_seconds_total`, `process_resident_memory_bytes`, ... | | the process ({@link processText}) |
 *
 * @example
 * ```ts
 * import { Coordinator, CoordinatorMetrics } from "@mcore-effect/coordinator"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const coordinator = yield* Coordinator.make({ address: "tcp://127.0.0.1:0", protocol: "main" })
 *   const text = CoordinatorMetrics.prometheus(yield* coordinator.snapshot)
 *   return text.includes("mcore_coordinator_engines 0") // true
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import type * as Layer from "effect/Layer"
import * as ControlState from "./ControlState.ts"
import type { Snapshot } from "./Coordinator.ts"
import type { Counters } from "./internal/coordinatorConfig.ts"

/** The `Counters` that count messages dropped, and their `reason` label. */
const REFUSED_MESSAGES: ReadonlyArray<readonly [keyof Counters, string]> = [
  ["malformed", "malformed"],
  ["badArity", "bad_arity"],
  ["unknownHeader", "unknown_header"],
  ["unknownRequest", "unknown_request"],
  ["neverConnected", "never_connected"],
  ["notFromEngine", "not_from_engine"],
  ["duplicateConnect", "duplicate_connect"],
  ["abortsDropped", "abort_not_in_flight"],
  ["controlRejected", "control_rejected"],
  ["controlIdempotent", "control_idempotent"]
]

/** A label value as Prometheus' text format writes it: backslash, quote and newline escaped. */
const labelValue = (value: string): string => value.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\n/g, "\\n")

/** One metric family: its name, type, help and samples (labels as written, and the value). */
type Family = readonly [name: string, type: "gauge" | "counter", help: string, samples: ReadonlyArray<readonly [string, number]>]

/** The families as a page of Prometheus' text format (0.0.4). */
const page = (families: ReadonlyArray<Family>): string => {
  const lines: Array<string> = []
  for (const [name, type, help, samples] of families) {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`)
    for (const [labels, value] of samples) lines.push(`${name}${labels} ${value}`)
  }
  return `${lines.join("\n")}\n`
}

/** A sample without labels. */
const one = (value: number): ReadonlyArray<readonly [string, number]> => [["", value]]

/** Samples labelled `label="key"`. */
const by = (label: string, entries: ReadonlyArray<readonly [string, number]>): ReadonlyArray<readonly [string, number]> =>
  entries.map(([key, value]) => [`{${label}="${labelValue(key)}"}`, value] as const)

/**
 * The snapshot as a Prometheus text page (format 0.0.4).
 *
 * @category formatting
 * @since 0.2.0
 */
export const prometheus = (snapshot: Snapshot): string => {
  const c = snapshot.counters
  return page([
    ["mcore_coordinator_engines", "gauge", "Engines registered", one(snapshot.engines.length)],
    ["mcore_coordinator_clients", "gauge", "Clients connected that completed CONNECT", one(snapshot.clients)],
    ["mcore_coordinator_requests_in_flight", "gauge", "Requests on an engine, not yet answered", one(snapshot.inFlight)],
    ["mcore_coordinator_requests_waiting", "gauge", "Submissions waiting for a first engine", one(snapshot.backlog)],
    ["mcore_coordinator_requests_routed_total", "counter", "Submissions routed to an engine", one(snapshot.nextRequestId)],
    [
      "mcore_coordinator_engine_requests_routed_total",
      "counter",
      "Submissions routed to each engine since it registered",
      by("engine", snapshot.engines.map((e) => [e.identity, e.routedTotal]))
    ],
    [
      "mcore_coordinator_engine_requests_in_flight",
      "gauge",
      "Requests on each engine, not yet answered",
      by("engine", snapshot.engines.map((e) => [e.identity, e.load]))
    ],
    ["mcore_coordinator_requests_failed_back_total", "counter", "Requests held by an engine that left, answered FAILED", one(c.failedBack)],
    ["mcore_coordinator_requests_refused_total", "counter", "Submissions answered FAILED rather than routed", one(c.refused)],
    [
      "mcore_coordinator_messages_undelivered_total",
      "counter",
      "Messages to a peer that was gone, dropped (replies to a client that left)",
      one(c.unreachable)
    ],
    [
      "mcore_coordinator_messages_refused_total",
      "counter",
      "Messages dropped, by reason",
      by("reason", REFUSED_MESSAGES.map(([key, reason]) => [reason, c[key]]))
    ],
    [
      "mcore_coordinator_connections_refused_total",
      "counter",
      "Connections closed before or during their handshake, by reason",
      by("reason", Object.entries(snapshot.connectionsRefused).map(([reason, count]) => [reason, count ?? 0]))
    ],
    ["mcore_coordinator_prefix_table_hashes", "gauge", "Block hashes in the prefix table", one(snapshot.prefixTable)],
    ["mcore_coordinator_held_hashes", "gauge", "Block hashes held for requests in flight", one(snapshot.heldHashes)],
    [
      "mcore_coordinator_state",
      "gauge",
      "1 for the control state the coordinator is in",
      by("state", ControlState.State.literals.map((state) => [state, state === snapshot.state ? 1 : 0]))
    ],
    ["mcore_coordinator_internal_errors_total", "counter", "Exceptions caught in the loop (a bug)", one(c.internalErrors)]
  ])
}

/**
 * This process's figures under Prometheus' standard names (as its client libraries export
 * them): CPU seconds (user, system, both), resident memory, V8 heap in use, start time. Read
 * when called; `process_cpu_seconds_total` has microsecond precision, where `/proc` counts
 * 10 ms ticks.
 *
 * @category formatting
 * @since 0.2.0
 */
export const processText = (): string => {
  const cpu = process.cpuUsage()
  const memory = process.memoryUsage()
  return page([
    ["process_cpu_user_seconds_total", "counter", "User CPU time spent in seconds", one(cpu.user / 1e6)],
    ["process_cpu_system_seconds_total", "counter", "System CPU time spent in seconds", one(cpu.system / 1e6)],
    ["process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds", one((cpu.user + cpu.system) / 1e6)],
    ["process_resident_memory_bytes", "gauge", "Resident memory size in bytes", one(memory.rss)],
    ["process_heap_bytes", "gauge", "V8 heap in use in bytes", one(memory.heapUsed)],
    [
      "process_start_time_seconds",
      "gauge",
      "Start time of the process since the Unix epoch in seconds",
      one(Math.round(performance.timeOrigin / 1000))
    ]
  ])
}

/**
 * `GET /metrics` (or `path`) on the current `HttpRouter`: {@link prometheus} of `source`'s
 * snapshot at each scrape (a `Coordinator.Handle`, or anything with its `snapshot`), then
 * {@link processText} (leave it out with `process: false`, when something else in the process
 * exports those).
 *
 * @example
 * ```ts
 * import { NodeHttpServer } from "@effect/platform-node"
 * import { Coordinator, CoordinatorMetrics } from "@mcore-effect/coordinator"
 * import { Effect, Layer } from "effect"
 * import { HttpRouter } from "effect/http"
 * import { createServer } from "node:http"
 *
 * const program = Effect.gen(function*() {
 *   const coordinator = yield* Coordinator.make({ address: "tcp://0.0.0.0:5555", protocol: "main" })
 *   yield* Layer.launch(
 *     HttpRouter.serve(CoordinatorMetrics.layerHttp(coordinator)).pipe(
 *       Layer.provide(NodeHttpServer.layer(createServer, { host: "127.0.0.1", port: 9464 }))
 *     )
 *   )
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category layers
 * @since 0.2.0
 */
export const layerHttp = (
  source: { readonly snapshot: Effect.Effect<Snapshot> },
  options?: { readonly path?: HttpRouter.PathInput | undefined; readonly process?: boolean | undefined }
): Layer.Layer<never, never, HttpRouter.HttpRouter> =>
  HttpRouter.add(
    "GET",
    options?.path ?? "/metrics",
    Effect.map(
      source.snapshot,
      (snapshot) =>
        HttpServerResponse.text(prometheus(snapshot) + (options?.process === false ? "" : processText()), {
          contentType: "text/plain; version=0.0.4; charset=utf-8"
        })
    )
  )
