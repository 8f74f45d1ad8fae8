/**
 * `CoordinatorMetrics`: the Prometheus page read from a running coordinator's snapshot, through
 * `layerHttp`'s route: connections refused by reason (an address outside `allowFrom`), messages
 * dropped by reason (from a peer that never sent CONNECT), engines, and label values escaped. The
 * page scraped over HTTP while requests run is `mcore coordinator --metrics-port`'s test (cli).
 */
import { describe, expect, it } from "@effect/vitest"
import { CoordinatorTokenizer, TestEngine } from "@mcore-effect/testkit"
import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import * as Zmq from "zeromq"
import { Coordinator, CoordinatorMetrics } from "../src/index.ts"

/** A libzmq DEALER dialing `address` (from `source`, when given) and sending `frames`. */
const dealer = (address: string, frames: Array<Uint8Array>, source?: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const socket = new Zmq.Dealer({ linger: 0 })
      socket.connect(source === undefined ? address : address.replace("tcp://", `tcp://${source}:0;`))
      void socket.send(frames).catch(() => {})
      return socket
    }),
    (socket) => Effect.sync(() => socket.close())
  )

describe("CoordinatorMetrics", () => {
  it.live("the page at /metrics counts refused connections and dropped messages by reason, and names the engines", () =>
    Effect.gen(function*() {
      const coordinator = yield* Coordinator.make({
        address: "tcp://127.0.0.1:0",
        protocol: "main",
        tokenizer: CoordinatorTokenizer.vocabulary,
        allowFrom: "127.0.0.1"
      })
      yield* TestEngine.make({ coordinatorAddress: coordinator.address, protocol: "main", rank: 0, stepMs: 0 })
      yield* coordinator.awaitEngines(1)
      yield* dealer(coordinator.address, [Uint8Array.of(0x91, 0x01)], "127.0.0.2")
      // A message from a client that never sent CONNECT: dropped, as Megatron does.
      yield* dealer(coordinator.address, [Uint8Array.of(0x93, 20, 1, 0x90)])
      yield* coordinator.waitFor((s) => (s.connectionsRefused["not-allowed"] ?? 0) >= 1 && s.counters.neverConnected >= 1)
      const { dispose, handler } = HttpRouter.toWebHandler(CoordinatorMetrics.layerHttp(coordinator), { disableLogger: true })
      yield* Effect.addFinalizer(() => Effect.promise(dispose))
      const response = yield* Effect.promise(() => handler(new Request("http://localhost/metrics")))
      expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8")
      const lines = (yield* Effect.promise(() => response.text())).split("\n")
      expect(lines).toContain("mcore_coordinator_engines 1")
      expect(lines).toContain(`mcore_coordinator_engine_requests_routed_total{engine="mp-coord-0"} 0`)
      expect(lines).toContain(`mcore_coordinator_messages_refused_total{reason="never_connected"} 1`)
      expect(lines.some((l) => /^mcore_coordinator_connections_refused_total\{reason="not-allowed"\} [1-9]\d*$/.test(l))).toBe(true)
      expect(lines).toContain(`mcore_coordinator_state{state="PAUSED"} 0`)
    }).pipe(Effect.scoped))

  it("escapes label values as Prometheus' text format asks", () => {
    const text = CoordinatorMetrics.prometheus({
      address: "tcp://127.0.0.1:1",
      running: true,
      shutdownReceived: false,
      state: "RUNNING",
      policy: "load_balanced",
      protocol: "main",
      engines: [{ identity: "a\"b\\c\nd", load: 2, routedTotal: 5, received: [], receivedTotal: 5 }],
      clients: 0,
      inFlight: 2,
      backlog: 0,
      heldHashes: 0,
      prefixTable: 0,
      counters: {
        neverConnected: 0, duplicateConnect: 0, badArity: 0, malformed: 0, unknownHeader: 0, unknownRequest: 0,
        notFromEngine: 0, abortsDropped: 0, controlRejected: 0, controlIdempotent: 0, unreachable: 0, internalErrors: 0,
        failedBack: 0, refused: 0
      },
      rejected: [],
      nextRequestId: 5,
      connectionsRefused: {}
    })
    expect(text.split("\n")).toContain(`mcore_coordinator_engine_requests_routed_total{engine="a\\"b\\\\c\\nd"} 5`)
    expect(text.endsWith("\n")).toBe(true)
  })
})
