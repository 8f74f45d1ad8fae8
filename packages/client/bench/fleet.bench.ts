/**
 * `pnpm bench fleet`: a `Fleet` over test coordinators whose engines model a prefix cache, with
 * the numbers issue 27 fixed (`fleetWorkload.ts`): 4 coordinators x 2 engines, 64-token blocks,
 * 2,048 cached blocks per engine (LRU), 0.1 ms of prefill per uncached block, 64 tokens decoded
 * at 1 ms each; 200 conversations x 8 turns in groups of 10 sharing a 1,024-token system prompt,
 * each turn adding 128 user and 128 assistant tokens; 64 requests in flight.
 *
 * Reported:
 * - for each policy (`prefix`, `least-loaded`, `round-robin`) and for an oracle that sends each
 *   request to the coordinator whose engines hold its longest cached prefix (the fewest in
 *   flight on a tie): the engines' prefix-cache hit rate (blocks) and TTFT p50/p99, the `ttft`
 *   each reply carries (from the request's arrival at its engine to its first token, as
 *   Megatron's engines report it: what placement changes). Targets: `prefix` >= 90% of the oracle's hit rate, and a TTFT p50
 *   at least 2x better than `round-robin`'s;
 * - spread: 1,000 distinct 512-token prompts placed by `prefix`; the most any coordinator got
 *   over the mean (target <= 1.25);
 * - short chats (issue 44): 40 conversations x 6 turns of 20-40 tokens, all at once, through
 *   `prefix`, `prefix` with a routing key per conversation, and `least-loaded`: the mean share of
 *   a conversation's turns on its most-used coordinator (target >= 0.95 for `prefix`, 1.0 with
 *   keys), the user's time between turns 0-19 ms;
 * - routing CPU per request for a 2,048-token prompt: the fleet's placement (the router, the
 *   failover wrapper) over 4 members against calling one member's client directly, both over
 *   a client that answers at once, so the difference is the routing alone (target <= 5 us),
 *   with short prompts' keys held (so every prompt looks for them);
 * - a SIGKILL: four coordinators in processes of their own on loopback, one killed in the
 *   middle of a burst: the time from the kill until the last request that was on it is
 *   answered elsewhere, and the requests lost (target 0).
 *
 * The coordinators and their engines run in processes of their own (`fleetChild.ts`, one per
 * coordinator, ZeroMQ on loopback), fresh for each policy; the spread, in this process on the
 * in-memory transport (`--quick`: 40 conversations).
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createInterface } from "node:readline"
import { fileURLToPath } from "node:url"
import { MemorySocket } from "@mcore-effect/protocol"
import { TestFleet } from "@mcore-effect/testkit"
import { Effect, Exit, References } from "effect"
import { Fleet, type InferenceClient, Transport } from "../src/index.ts"
import { placed, type Placement } from "../src/internal/fleet/failover.ts"
import type { FleetMember } from "../src/internal/fleet/member.ts"
import { Router } from "../src/internal/fleet/router.ts"
import * as W from "./fleetWorkload.ts"

const log = (line: string) => console.log(`[fleet bench] ${line}`)

type Policy = "prefix" | "least-loaded" | "round-robin" | "oracle"

interface PolicyResult {
  readonly policy: Policy
  readonly hitRate: number
  readonly ttftP50: number
  readonly ttftP99: number
  readonly seconds: number
}

/** A coordinator process (`fleetChild.ts`): its address, and its answers to questions by id. */
interface Child {
  readonly child: ChildProcess
  readonly address: string
  readonly ask: (question: Record<string, unknown>) => Promise<Record<string, number>>
}

/** Starts one coordinator process; resolves with its address once it serves. */
const startChild = (): Promise<Child> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--conditions=source", "--import", "tsx", fileURLToPath(new URL("./fleetChild.ts", import.meta.url))], {
      stdio: ["pipe", "pipe", "inherit"]
    })
    child.once("error", reject)
    const waiting = new Map<number, (answer: Record<string, number>) => void>()
    let nextId = 0
    const ask = (question: Record<string, unknown>) =>
      new Promise<Record<string, number>>((answered) => {
        const id = nextId++
        waiting.set(id, answered)
        child.stdin!.write(`${JSON.stringify({ ...question, id })}\n`)
      })
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const message = JSON.parse(line) as Record<string, unknown>
      if (typeof message.address === "string") return resolve({ child, address: message.address, ask })
      const answered = waiting.get(message.id as number)
      waiting.delete(message.id as number)
      answered?.(message as Record<string, number>)
    })
  })

/** Four coordinator processes, killed when the scope closes. */
const children = Effect.acquireRelease(
  Effect.promise(() => Promise.all(Array.from({ length: W.COORDINATORS }, startChild))),
  (started) => Effect.sync(() => started.forEach(({ child }) => child.kill("SIGKILL")))
)

const runPolicy = (policy: Policy, conversations: number) =>
  Effect.gen(function*() {
    const cluster = yield* children
    const fleet = yield* Fleet.make({
      coordinators: cluster.map((c) => c.address),
      protocol: "main",
      routing: policy === "oracle" ? "prefix" : policy
    })
    const inFlight = new Array<number>(W.COORDINATORS).fill(0)
    // The oracle: the coordinator whose engines hold the longest cached prefix of the prompt.
    const oracle = (prompt: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        const held = yield* Effect.promise(() => Promise.all(cluster.map((c) => c.ask({ cached: prompt }))))
        let best = 0
        for (let i = 1; i < held.length; i++) {
          const blocks = held[i]!.blocks!
          if (blocks > held[best]!.blocks! || (blocks === held[best]!.blocks! && inFlight[i]! < inFlight[best]!)) best = i
        }
        const client = (yield* fleet.members[best]!.client)!
        inFlight[best]!++
        return Effect.ensuring(
          client.submit(prompt, { num_tokens_to_generate: W.DECODE_TOKENS }),
          Effect.sync(() => inFlight[best]!--)
        )
      })
    const ttfts: Array<number> = []
    const started = performance.now()
    yield* Effect.forEach(
      Array.from({ length: conversations }, (_, c) => c),
      (c) =>
        Effect.forEach(Array.from({ length: W.TURNS }, (_, t) => t), (t) => {
          const prompt = W.turnPrompt(c, t)
          const reply = policy === "oracle"
            ? Effect.flatten(oracle(prompt))
            : fleet.client.submit(prompt, { num_tokens_to_generate: W.DECODE_TOKENS })
          return Effect.map(reply, (r) => {
            ttfts.push(1000 * ((r as Record<string, unknown>).ttft as number))
          })
        }, { discard: true }),
      { concurrency: W.IN_FLIGHT, discard: true }
    )
    const seconds = (performance.now() - started) / 1000
    const stats = yield* Effect.promise(() => Promise.all(cluster.map((c) => c.ask({ stats: true }))))
    const hits = stats.reduce((sum, s) => sum + s.hits!, 0)
    const misses = stats.reduce((sum, s) => sum + s.misses!, 0)
    const result: PolicyResult = {
      policy,
      hitRate: hits / (hits + misses),
      ttftP50: W.quantile(ttfts, 0.5),
      ttftP99: W.quantile(ttfts, 0.99),
      seconds
    }
    return result
  }).pipe(Effect.scoped)

/** 1,000 distinct 512-token prompts placed by `prefix`: the most any coordinator got over the mean. */
const spread = Effect.gen(function*() {
  const network = new MemorySocket.Network()
  const cluster = yield* TestFleet.make({ coordinators: W.COORDINATORS, engines: W.ENGINES, protocol: "main", network })
  const fleet = yield* Fleet.make({ coordinators: cluster.addresses, protocol: "main" }).pipe(
    Effect.provide(Transport.layerMemory(network))
  )
  const prompts = W.distinctPrompts(1000, 512)
  yield* Effect.forEach(prompts, (p) => fleet.client.submit(p, { num_tokens_to_generate: 1 }), {
    concurrency: W.IN_FLIGHT,
    discard: true
  })
  const counts = yield* Effect.forEach(fleet.members, (m) => Effect.map(m.stats, (s) => s.requests))
  const mean = counts.reduce((a, b) => a + b, 0) / counts.length
  return { counts, ratio: Math.max(...counts) / mean }
}).pipe(Effect.scoped)

/**
 * Short chats through a fleet over 4 test coordinators (in this process, in-memory transport,
 * 1 ms engine steps), 0-19 ms between a reply and the next turn: the mean share of a
 * conversation's turns on its most-used coordinator.
 */
const shortChats = (routing: Fleet.RoutingPolicy, keyed: boolean) =>
  Effect.gen(function*() {
    const network = new MemorySocket.Network()
    const cluster = yield* TestFleet.make({
      coordinators: W.COORDINATORS,
      engines: W.ENGINES,
      protocol: "main",
      network,
      engine: { stepMs: W.STEP_MS }
    })
    const fleet = yield* Fleet.make({ coordinators: cluster.addresses, protocol: "main", routing }).pipe(
      Effect.provide(Transport.layerMemory(network))
    )
    const shares = yield* Effect.forEach(
      Array.from({ length: W.SHORT_CHATS }, (_, c) => c),
      (c) =>
        Effect.gen(function*() {
          const counts = new Array<number>(W.COORDINATORS).fill(0)
          for (let t = 0; t < W.SHORT_TURNS; t++) {
            const submitted = yield* fleet.client.submitWithId(
              W.shortChatPrompt(c, t),
              { num_tokens_to_generate: W.SHORT_ANSWER_TOKENS },
              keyed ? { routingKey: `chat-${c}` } : undefined
            )
            counts[fleet.memberOf(submitted.requestId)!]!++
            yield* submitted.reply
            // The user reads and types: 0-19 ms, so that turns do not arrive in lockstep.
            yield* Effect.sleep(`${(c * 37 + t * 11) % 20} millis`)
          }
          return Math.max(...counts) / W.SHORT_TURNS
        }),
      { concurrency: "unbounded" }
    )
    return shares.reduce((a, b) => a + b, 0) / shares.length
  }).pipe(Effect.scoped)

/**
 * CPU per request of the fleet's placement over 4 members, against calling one member's client
 * directly; both over a client whose `submit` answers at once (what is measured is the routing).
 */
const routingCpu = (rounds: number, requests: number) => {
  const prompts = W.distinctPrompts(64, 2048)
  const answered = Effect.succeed({})
  const client = { submit: () => answered } as unknown as InferenceClient.Service
  const members = Array.from({ length: W.COORDINATORS }, (_, index) => ({
    index,
    address: `tcp://127.0.0.1:${5000 + index}`,
    client,
    load: 0,
    routable: true,
    requests: 0,
    resubmitted: 0,
    generation: 1
  })) as unknown as Array<FleetMember>
  const router = new Router({
    policy: "prefix",
    addresses: members.map((m) => m.address),
    blockSizeTokens: 64,
    maxBlocks: 256,
    loadFactor: 1.25,
    loadSlack: 0,
    tableCapacity: 65_536
  })
  const placement: Placement = {
    members,
    slots: members.length,
    pick: (prompt, key, excluded) => members[router.pick(prompt, members, excluded, key)],
    noMember: () => {
      throw new Error("unreachable")
    },
    closed: () => false
  }
  // A fleet that serves chats holds short prompts' keys: every prompt then looks for them.
  for (let c = 0; c < 1000; c++) router.pick(W.shortChatPrompt(c, 0), members, undefined)
  const cpu = (f: (prompt: ReadonlyArray<number>) => void) => {
    const before = process.cpuUsage()
    for (let i = 0; i < requests; i++) f(prompts[i % prompts.length]!)
    const used = process.cpuUsage(before)
    return (used.user + used.system) / requests
  }
  const direct = (prompt: ReadonlyArray<number>) => Effect.runSync(client.submit(prompt))
  const routed = (prompt: ReadonlyArray<number>) => Effect.runSync(placed(placement, prompt, undefined, (m) => m.client!.submit(prompt)))
  const deltas: Array<number> = []
  for (let r = 0; r < rounds; r++) {
    // Alternating, so that noise from the machine falls on both alike.
    const a = r % 2 === 0 ? cpu(direct) : NaN
    const b = cpu(routed)
    const c = r % 2 === 1 ? cpu(direct) : a
    deltas.push(b - c)
  }
  return W.quantile(deltas, 0.5)
}

/** Four coordinator processes, a burst over them, one SIGKILLed once a quarter is answered. */
const sigkill = (burst: number) =>
  Effect.gen(function*() {
    const cluster = yield* children
    const fleet = yield* Fleet.make({
      coordinators: cluster.map((c) => c.address),
      protocol: "main",
      rejoinBackoff: "1 hour"
    })
    const victim = 1
    let done = 0
    let killedAt = -1
    let lastMoved = -1
    let lost = 0
    let moved = 0
    yield* Effect.forEach(
      Array.from({ length: burst }, (_, i) => i),
      (i) =>
        Effect.gen(function*() {
          const prompt = W.turnPrompt(i % W.CONVERSATIONS, 0)
          const submitted = yield* fleet.client.submitWithId(prompt, { num_tokens_to_generate: W.DECODE_TOKENS })
          const placedOn = fleet.memberOf(submitted.requestId)
          const exit = yield* Effect.exit(submitted.reply)
          done++
          if (Exit.isFailure(exit)) lost++
          else if (placedOn === victim && killedAt >= 0) {
            // Placed on the victim, answered after it died: answered by another coordinator.
            moved++
            lastMoved = performance.now()
          }
          if (done === Math.floor(burst / 4) && killedAt < 0) {
            cluster[victim]!.child.kill("SIGKILL")
            killedAt = performance.now()
          }
        }).pipe(Effect.catch(() => Effect.sync(() => lost++))),
      { concurrency: W.IN_FLIGHT, discard: true }
    )
    return { moved, lost, lastAnsweredMs: lastMoved < 0 ? NaN : lastMoved - killedAt }
  }).pipe(Effect.scoped)

export const run = async (): Promise<void> => {
  const quick = process.argv.includes("--quick") || process.env.BENCH_QUICK === "1"
  const conversations = quick ? 40 : W.CONVERSATIONS
  log(`${quick ? "quick" : "full"} run: ${conversations} conversations x ${W.TURNS} turns, ${W.IN_FLIGHT} in flight, ` +
    `${W.COORDINATORS} coordinators x ${W.ENGINES} engines`)
  const quiet = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect.pipe(Effect.provideService(References.MinimumLogLevel, "Error")))
  const results: Array<PolicyResult> = []
  for (const policy of ["prefix", "least-loaded", "round-robin", "oracle"] as const) {
    const result = await quiet(runPolicy(policy, conversations))
    results.push(result)
    log(`${policy.padEnd(12)} hit rate ${(100 * result.hitRate).toFixed(1)}%  TTFT p50 ${result.ttftP50.toFixed(2)} ms  ` +
      `p99 ${result.ttftP99.toFixed(2)} ms  (${result.seconds.toFixed(1)} s)`)
  }
  const of = (p: Policy) => results.find((r) => r.policy === p)!
  log(`prefix / oracle hit rate: ${(of("prefix").hitRate / of("oracle").hitRate).toFixed(3)} (target >= 0.9)`)
  log(`round-robin / prefix TTFT p50: ${(of("round-robin").ttftP50 / of("prefix").ttftP50).toFixed(2)}x (target >= 2)`)
  const placedSpread = await quiet(spread)
  log(`spread of 1,000 distinct 512-token prompts: ${placedSpread.counts.join(" / ")}, max / mean ${placedSpread.ratio.toFixed(3)} (target <= 1.25)`)
  for (const [routing, keyed] of [["prefix", false], ["prefix", true], ["least-loaded", false], ["round-robin", false]] as const) {
    const share = await quiet(shortChats(routing, keyed))
    log(`short chats (${W.SHORT_CHATS} x ${W.SHORT_TURNS} turns of 20-40 tokens) through ${routing}${keyed ? " with a routing key each" : ""}: ` +
      `mean share of a chat's turns on its most-used coordinator ${share.toFixed(3)}`)
  }
  const cpu = routingCpu(quick ? 6 : 20, quick ? 20_000 : 100_000)
  log(`routing CPU per request (2,048-token prompt, 4 coordinators) over one client: ${cpu.toFixed(2)} us (target <= 5)`)
  const killed = await quiet(sigkill(quick ? 200 : 800))
  log(`SIGKILL mid-burst: ${killed.moved} request(s) moved off the killed coordinator, the last answered ` +
    `${killed.lastAnsweredMs.toFixed(0)} ms after the kill; lost ${killed.lost} (target 0)`)
}
