/**
 * `pnpm bench transport`: the client over its two socket transports, `Transport.zeromq`
 * (zeromq.js, libzmq underneath) and `Transport.zmtp` (our own DEALER over `node:net`), against
 * the same coordinator stand-in in a process of its own (a zeromq.js ROUTER that answers every
 * request at once: `test/support/echoCoordinator.mjs`), taking turns, in one run.
 *
 * Measured, per transport, medians of the rounds: the client process's CPU per request and its
 * requests/s over a `submitAll` burst (256 in flight, 1-token prompts, so the transport's share
 * is as large as it gets), and the CPU per round trip and its wall time for requests one at a
 * time. Reported as zmtp/zeromq ratios (issue 41's target: CPU per round trip <= 0.5x).
 *
 * And the transports alone, as issue 41 measured their floor: each one's link (`Service.open`,
 * what the client sends and receives through) with 256 messages in flight, a 64-byte prompt
 * frame each, echoed; the client process's CPU per round trip. The client's own work (requests,
 * msgpack, Effect) is the same over both and dilutes the client rows' ratio; this row has none.
 *
 * `--quick` (or `BENCH_QUICK=1`): fewer and smaller rounds.
 */
import { Timing } from "@mcore-effect/testkit"
import { Effect, type Layer, Stream } from "effect"
import { fork } from "node:child_process"
import { fileURLToPath } from "node:url"
import { InferenceClient, Transport } from "../src/index.ts"
import type { Link, Service } from "../src/Transport.ts"

const { median } = Timing

const QUICK = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1"
const ROUNDS = QUICK ? 3 : 7
const BURST = QUICK ? 10_000 : 40_000
const SEQUENTIAL = QUICK ? 500 : 2_000
const IN_FLIGHT = 256

interface Round {
  readonly cpuPerRequest: number
  readonly requestsPerSecond: number
  readonly cpuPerRoundTrip: number
  readonly roundTripMicros: number
  readonly linkCpuPerRoundTrip: number
  readonly linkRoundTripsPerSecond: number
}

/** Round trips of the link alone per round. */
const LINK_MESSAGES = QUICK ? 20_000 : 100_000
/** The echo coordinator's SUBMIT_REQUEST header, and a 64-byte prompt frame. */
const SUBMIT = 20
const PROMPT = Buffer.alloc(64, 7)

/** A metadata frame `[SUBMIT, id]` as msgpack writes it (ids below 2^16). */
const metadata = (id: number): Buffer =>
  id < 0x80 ? Buffer.of(0x92, SUBMIT, id) : id < 0x100 ? Buffer.of(0x92, SUBMIT, 0xcc, id) : Buffer.of(0x92, SUBMIT, 0xcd, id >> 8, id & 0xff)

/**
 * `count` round trips through `transport`'s link alone, `IN_FLIGHT` at once (a new one sent as
 * each reply arrives): the process's CPU per round trip and the round trips per second.
 */
const linkRound = (address: string, transport: Service, count: number) =>
  Effect.scoped(Effect.gen(function*() {
    let sent = 0
    let received = 0
    let done!: () => void
    const finished = new Promise<void>((resolve) => (done = resolve))
    let link!: Link
    const next = () => {
      link.send([metadata(sent % 60_000), PROMPT], undefined)
      sent++
    }
    let up!: () => void
    const isUp = new Promise<void>((resolve) => (up = resolve))
    link = yield* transport.open(
      { address, heartbeatIntervalMillis: 0, heartbeatTimeoutMillis: 0, maxFrameBytes: 1 << 20, closeTimeoutMillis: 0 },
      () => ({
        message: () => {
          received++
          if (received === count) done()
          else if (sent < count) next()
        },
        up: () => up(),
        down: () => {},
        sendFailed: () => {},
        handlerFailed: () => {},
        receiveFailed: () => {}
      })
    )
    yield* Effect.promise(() => isUp)
    const cpu = cpuMicros()
    const wall = performance.now()
    for (let i = 0; i < IN_FLIGHT; i++) next()
    yield* Effect.promise(() => finished)
    return { cpu: (cpuMicros() - cpu) / count, perSecond: count / ((performance.now() - wall) / 1000) }
  }))

const cpuMicros = (): number => {
  const usage = process.cpuUsage()
  return usage.user + usage.system
}

/** One round through a fresh client over `layer`: a burst, then requests one at a time. */
const round = (address: string, layer: Layer.Layer<never>, transport: Service): Promise<Round> =>
  Effect.runPromise(
    Effect.gen(function*() {
      // The link alone first (warmed by a round of its own), in a connection of its own.
      yield* linkRound(address, transport, LINK_MESSAGES / 4)
      const link = yield* linkRound(address, transport, LINK_MESSAGES)
      const client = yield* InferenceClient.make({ address, protocol: "reference" }).pipe(Effect.provide(layer))
      const burst = Stream.runDrain(
        client.submitAll(Array.from({ length: BURST }, (_, i) => ({ prompt: [i + 1] })), { concurrency: IN_FLIGHT })
      )
      // Warm: the JIT, the connection, the registry's arrays.
      yield* burst
      let cpu = cpuMicros()
      let wall = performance.now()
      yield* burst
      const cpuPerRequest = (cpuMicros() - cpu) / BURST
      const requestsPerSecond = BURST / ((performance.now() - wall) / 1000)
      cpu = cpuMicros()
      wall = performance.now()
      for (let i = 0; i < SEQUENTIAL; i++) yield* client.submit([1])
      return {
        cpuPerRequest,
        requestsPerSecond,
        cpuPerRoundTrip: (cpuMicros() - cpu) / SEQUENTIAL,
        roundTripMicros: ((performance.now() - wall) * 1000) / SEQUENTIAL,
        linkCpuPerRoundTrip: link.cpu,
        linkRoundTripsPerSecond: link.perSecond
      }
    }).pipe(Effect.scoped)
  )

/** Runs the benchmark and prints its table. */
export const run = async (): Promise<void> => {
  const program = fileURLToPath(new URL("../test/support/echoCoordinator.mjs", import.meta.url))
  const child = fork(program, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] })
  try {
    const address = await new Promise<string>((resolve) =>
      child.once("message", (message) => resolve((message as { address: string }).address))
    )
    const subjects = { zeromq: Transport.layerZeromq, zmtp: Transport.layerZmtp } as const
    const transports = { zeromq: Transport.zeromq, zmtp: Transport.zmtp } as const
    const rounds: Record<keyof typeof subjects, Array<Round>> = { zeromq: [], zmtp: [] }
    for (let r = 0; r < ROUNDS; r++) {
      // Order alternating, so that the machine's noise falls on both alike.
      const order = r % 2 === 0 ? (["zeromq", "zmtp"] as const) : (["zmtp", "zeromq"] as const)
      for (const name of order) rounds[name].push(await round(address, subjects[name], transports[name]))
    }
    const of = (name: keyof typeof subjects, key: keyof Round) => median(rounds[name].map((r) => r[key]))
    const row = (label: string, key: keyof Round, digits: number) => {
      const a = of("zeromq", key)
      const b = of("zmtp", key)
      console.log(`  ${label.padEnd(50)} ${a.toFixed(digits).padStart(10)} ${b.toFixed(digits).padStart(10)} ${(b / a).toFixed(2).padStart(8)}x`)
    }
    console.log(
      `transport (${QUICK ? "quick" : "full"}): the client over zeromq.js and over its own DEALER (zmtp), echo coordinator in ` +
        `its own process; ${ROUNDS} rounds, medians; bursts of ${BURST.toLocaleString("en")} at ${IN_FLIGHT} in flight, ` +
        `${SEQUENTIAL.toLocaleString("en")} one at a time`
    )
    console.log(`  ${"".padEnd(50)} ${"zeromq".padStart(10)} ${"zmtp".padStart(10)} ${"zmtp/zeromq".padStart(9)}`)
    row("burst: CPU per request (µs)", "cpuPerRequest", 1)
    row("burst: requests/s", "requestsPerSecond", 0)
    row("one at a time: CPU per round trip (µs)", "cpuPerRoundTrip", 1)
    row("one at a time: round trip (µs)", "roundTripMicros", 0)
    row(`link alone, ${IN_FLIGHT} in flight: CPU per round trip (µs)`, "linkCpuPerRoundTrip", 2)
    row(`link alone, ${IN_FLIGHT} in flight: round trips/s`, "linkRoundTripsPerSecond", 0)
  } finally {
    child.kill()
  }
}
