/**
 * Plays a recorded conversation ({@link Trace}) back, from either side:
 *
 * - {@link asCoordinator}: a scripted coordinator for a client under test. It binds a ROUTER,
 *   waits for each message the trace says the client sent, checks the client sent the same one
 *   (ids included), and answers with the recorded coordinator messages, in the recorded order.
 * - {@link asClients}: scripted clients for a coordinator under test. One DEALER per recorded
 *   client sends the recorded client messages and checks every answer against the recording.
 *   Answers to different requests may interleave differently from the recording, so they are
 *   matched per request id, in order per id.
 *
 * Messages are compared decoded (see `TraceMatch`): float widths and map key order do not matter,
 * the reply fields that change from run to run (timings, a random uid) are ignored by default,
 * and the ids the coordinator assigns are matched as ids (renamed consistently for the whole
 * replay), so the clients' part replays against a coordinator that has served others before, or
 * the same recording twice. A difference fails the replay with `ReplayMismatch` (the trace index, the expected and
 * the actual message, where they differ); silence fails it with `ReplayTimedOut`. Engine
 * directions in a trace are not replayed. Messages are decoded in the dialect the trace was
 * recorded in (`Trace.protocolOf`): a replay speaks it, whatever `protocol` its options name.
 *
 * @since 0.1.0
 */
import { FrameSocket } from "@mcore-effect/protocol"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import * as Zmq from "zeromq"
import { isLoopback } from "./Loopback.ts"
import { BindFailed, ConnectFailed, NotLoopback } from "./TestkitError.ts"
import * as Trace from "./Trace.ts"
import { InvalidTrace, ReplayMismatch, ReplayTimedOut, traceError, type TraceError } from "./TraceError.ts"
import * as TraceMatch from "./TraceMatch.ts"

/**
 * Options shared by both replays.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options extends TraceMatch.Options {
  /** The longest wait for any one message, in milliseconds (a real timer). Default 5,000. */
  readonly timeoutMillis?: number | undefined
}

/**
 * What a finished replay did.
 *
 * @category models
 * @since 0.1.0
 */
export interface Report {
  /** Messages the replay sent (recorded ones, played back). */
  readonly sent: number
  /** Messages received from the peer under test, each matched against the recording. */
  readonly matched: number
}

const socketOptions = { linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0 } as const

/** The options with the trace's dialect: messages are compared as the recorded peers spoke. */
const inDialect = <O extends Options>(trace: Trace.Trace, options: O): O => ({ ...options, protocol: Trace.protocolOf(trace) })

/** Client peers in order of their first message: the order connections are paired with them. */
const clientPeers = (trace: Trace.Trace): Array<string> => {
  const peers = new Set<string>()
  for (const entry of trace.entries) {
    if (entry.dir === "client->coordinator" || entry.dir === "coordinator->client") peers.add(entry.peer)
  }
  return Array.from(peers)
}

/**
 * Bounds `self` with a real timer: the sockets run in real time, and a replay must end under
 * `it.effect`'s TestClock too.
 */
const within = <A, E, R, E2>(self: Effect.Effect<A, E, R>, millis: number, onTimeout: () => E2) =>
  Effect.raceFirst(
    self,
    Effect.callback<never, E2>((resume) => {
      const timer = setTimeout(() => resume(Effect.fail(onTimeout())), millis)
      return Effect.sync(() => clearTimeout(timer))
    })
  )

const mismatch = (
  index: number | null,
  peer: string,
  expected: TraceMatch.Decoded | undefined,
  actual: TraceMatch.Decoded,
  difference: TraceMatch.Difference
) =>
  traceError(
    new ReplayMismatch({
      index,
      peer,
      path: difference.path,
      why: difference.why,
      expected: expected === undefined ? undefined : shown(expected),
      actual: shown(actual)
    })
  )

const shown = (decoded: TraceMatch.Decoded): unknown => (decoded._tag === "Message" ? decoded.message : decoded)

/** A receive loop feeding a queue until the socket closes (closing ends a pending receive). */
const pump = <A>(socket: FrameSocket.Readable, inbox: Queue.Queue<A>, wrap: (frames: Array<Buffer>) => A) =>
  FrameSocket.reader(socket, {
    onMessage: (frames) => Queue.offerUnsafe(inbox, wrap(frames)),
    onHandlerError: () => {},
    onReceiveError: () => {}
  })

// -----------------------------------------------------------------------------------------------
// Scripted coordinator
// -----------------------------------------------------------------------------------------------

/**
 * Options of {@link asCoordinator}.
 *
 * @category models
 * @since 0.1.0
 */
export interface CoordinatorOptions extends Options {
  /** Where to bind: loopback only. Default `tcp://127.0.0.1:0` (an ephemeral port). */
  readonly address?: string | undefined
}

/**
 * A scripted coordinator, playing its part of a trace.
 *
 * @category models
 * @since 0.1.0
 */
export interface ScriptedCoordinator {
  /** Where the client under test connects, with the actual port. */
  readonly address: string
  /**
   * Succeeds once the whole conversation has been played (every recorded client message was
   * received and matched, every coordinator message sent, nothing extra arrived); fails with
   * the first `ReplayMismatch` or `ReplayTimedOut`.
   */
  readonly done: Effect.Effect<Report, TraceError>
}

/**
 * Binds a ROUTER that plays the coordinator's part of a trace to the client(s) that connect.
 * Connections are paired with the trace's clients in the order their first messages arrive.
 * The script starts at once; the socket stays bound until the scope closes.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Trace, TraceReplay } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const trace = yield* Trace.read("test/fixtures/session.trace.jsonl")
 *   const coordinator = yield* TraceReplay.asCoordinator(trace)
 *   // run the client under test against coordinator.address ...
 *   const report = yield* coordinator.done // fails with ReplayMismatch if the client strayed
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const asCoordinator: (
  trace: Trace.Trace,
  options?: CoordinatorOptions
) => Effect.Effect<ScriptedCoordinator, TraceError, Scope.Scope> = Effect.fn("TraceReplay.asCoordinator")(
  function*(trace: Trace.Trace, options?: CoordinatorOptions) {
    const address = options?.address ?? "tcp://127.0.0.1:0"
    if (!isLoopback(address)) return yield* Effect.fail(traceError(new NotLoopback({ address })))
    const router = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const router = new Zmq.Router(socketOptions)
          try {
            await router.bind(address)
          } catch (error) {
            router.close()
            throw error
          }
          return router
        },
        catch: (cause) => traceError(new BindFailed({ address, cause }))
      }),
      (router) => Effect.sync(() => router.close())
    )
    const inbox = yield* Queue.unbounded<Array<Buffer>>()
    yield* pump(router, inbox, (frames) => frames)
    const script = yield* Effect.forkScoped(playCoordinator(trace, router, inbox, inDialect(trace, options ?? {})))
    return { address: router.lastEndpoint ?? address, done: Fiber.join(script) } satisfies ScriptedCoordinator
  }
)

const playCoordinator = (
  trace: Trace.Trace,
  router: Zmq.Router,
  inbox: Queue.Queue<Array<Buffer>>,
  options: Options
): Effect.Effect<Report, TraceError> =>
  Effect.gen(function*() {
    const timeoutMillis = options.timeoutMillis ?? 5_000
    const peers = clientPeers(trace)
    const identityOf = new Map<string, Buffer>()
    const peerOfIdentity = new Map<string, string>()
    const buffered = new Map<string, Array<Array<Buffer>>>(peers.map((p) => [p, []]))
    const ids = TraceMatch.renaming()
    let sent = 0
    let matched = 0

    // Files an arriving message under its connection's trace peer, pairing new connections in order.
    const file = (frames: Array<Buffer>): Effect.Effect<void, TraceError> => {
      const [identity, ...message] = frames
      const key = identity!.toString("hex")
      let peer = peerOfIdentity.get(key)
      if (peer === undefined) {
        peer = peers[peerOfIdentity.size]
        if (peer === undefined) {
          const actual = TraceMatch.decode("client->coordinator", message, options)
          return Effect.fail(
            mismatch(null, `connection ${key}`, undefined, actual, { path: "", why: "a connection the trace does not have" })
          )
        }
        peerOfIdentity.set(key, peer)
        identityOf.set(peer, Buffer.from(identity!))
      }
      buffered.get(peer)!.push(message)
      return Effect.void
    }

    const nextFrom = (peer: string, index: number) =>
      within(
        Effect.gen(function*() {
          for (;;) {
            const message = buffered.get(peer)!.shift()
            if (message !== undefined) return message
            yield* file(yield* Queue.take(inbox))
          }
        }),
        timeoutMillis,
        () => traceError(new ReplayTimedOut({ index, peer, millis: timeoutMillis }))
      )

    for (let index = 0; index < trace.entries.length; index++) {
      const entry = trace.entries[index]!
      if (entry.dir === "client->coordinator") {
        const actual = TraceMatch.decode(entry.dir, yield* nextFrom(entry.peer, index), options)
        const expected = TraceMatch.decode(entry.dir, entry.frames, options)
        const difference = TraceMatch.difference(expected, actual, ids, options)
        if (difference !== undefined) return yield* Effect.fail(mismatch(index, entry.peer, expected, actual, difference))
        matched++
      } else if (entry.dir === "coordinator->client") {
        const identity = identityOf.get(entry.peer)
        if (identity === undefined) {
          // A ROUTER can only answer a peer it has heard from: no recorder writes this.
          return yield* Effect.fail(traceError(new InvalidTrace({
            line: index + 2,
            why: `a message to ${entry.peer} before any message from it`
          })))
        }
        yield* Effect.promise(() => router.send([identity, ...entry.frames]))
        sent++
      }
    }
    // The conversation is over: whatever has arrived beyond it is a difference too.
    for (;;) {
      const more = yield* Queue.poll(inbox)
      if (Option.isNone(more)) break
      yield* file(more.value)
    }
    for (const [peer, messages] of buffered) {
      const extra = messages[0]
      if (extra !== undefined) {
        const actual = TraceMatch.decode("client->coordinator", extra, options)
        return yield* Effect.fail(
          mismatch(null, peer, undefined, actual, { path: "", why: "a message after the end of the recorded conversation" })
        )
      }
    }
    return { sent, matched }
  })

// -----------------------------------------------------------------------------------------------
// Scripted clients
// -----------------------------------------------------------------------------------------------

/**
 * Options of {@link asClients}.
 *
 * @category models
 * @since 0.1.0
 */
export interface ClientsOptions extends Options {
  /** The coordinator under test. */
  readonly address: string
  /**
   * When to send each recorded client message. `causal` (the default): only once every
   * coordinator message recorded before it has arrived, so the coordinator sees the same
   * sequence of events the recorded clients caused (an ABORT after the partials that preceded
   * it). `eager`: as fast as possible, waiting only at the end.
   */
  readonly ordering?: "causal" | "eager" | undefined
}

/**
 * Connects one DEALER per client of the trace to a coordinator, sends the recorded client
 * messages and checks every answer against the recording (per request id, in order per id),
 * until every recorded answer has arrived. Everything is closed when it returns.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { TestCluster, Trace, TraceReplay } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const trace = yield* Trace.read("test/fixtures/session.trace.jsonl")
 *   const cluster = yield* TestCluster.make({ engines: 2 }) // the settings it was recorded with
 *   const report = yield* TraceReplay.asClients(trace, { address: cluster.address })
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const asClients: (trace: Trace.Trace, options: ClientsOptions) => Effect.Effect<Report, TraceError> = Effect.fn(
  "TraceReplay.asClients"
)(function*(trace: Trace.Trace, options: ClientsOptions) {
  return yield* playClients(trace, inDialect(trace, options)).pipe(Effect.scoped)
})

interface Arrival {
  readonly peer: string
  readonly frames: Array<Buffer>
}

const playClients = (trace: Trace.Trace, options: ClientsOptions): Effect.Effect<Report, TraceError, Scope.Scope> =>
  Effect.gen(function*() {
    const timeoutMillis = options.timeoutMillis ?? 5_000
    const causal = (options.ordering ?? "causal") === "causal"
    const inbox = yield* Queue.unbounded<Arrival>()
    const dealers = new Map<string, Zmq.Dealer>()
    for (const peer of clientPeers(trace)) {
      const dealer = yield* Effect.acquireRelease(
        Effect.sync(() => new Zmq.Dealer(socketOptions)),
        (dealer) => Effect.sync(() => dealer.close())
      )
      yield* Effect.try({
        try: () => dealer.connect(options.address),
        catch: (cause) => traceError(new ConnectFailed({ address: options.address, cause }))
      })
      dealers.set(peer, dealer)
      yield* pump(dealer, inbox, (frames): Arrival => ({ peer, frames }))
    }

    // Every recorded answer, decoded once, queued under its peer and request id.
    const expected = new Map<number, TraceMatch.Decoded>()
    const queues = new Map<string, Array<number>>()
    const answers: Array<number> = []
    trace.entries.forEach((entry, index) => {
      if (entry.dir !== "coordinator->client") return
      const decoded = TraceMatch.decode(entry.dir, entry.frames, options)
      expected.set(index, decoded)
      const key = `${entry.peer}/${TraceMatch.groupOf(decoded)}`
      const queue = queues.get(key)
      if (queue === undefined) queues.set(key, [index])
      else queue.push(index)
      answers.push(index)
    })
    const matchedAt = new Set<number>()
    // The coordinator numbers requests across all its clients, since it started: its ids in the
    // answers are paired with the recorded ones for the whole replay.
    const ids = TraceMatch.renaming()
    // answers[cursor] is the earliest recorded answer not yet received.
    let cursor = 0
    let sent = 0

    const accept = (arrival: Arrival): Effect.Effect<void, TraceError> => {
      const actual = TraceMatch.decode("coordinator->client", arrival.frames, options)
      const index = queues.get(`${arrival.peer}/${TraceMatch.groupOf(actual)}`)?.shift()
      if (index === undefined) {
        return Effect.fail(mismatch(null, arrival.peer, undefined, actual, {
          path: "",
          why: "no such message left in the recording"
        }))
      }
      const recorded = expected.get(index)!
      const difference = TraceMatch.difference(recorded, actual, ids, options)
      if (difference !== undefined) return Effect.fail(mismatch(index, arrival.peer, recorded, actual, difference))
      matchedAt.add(index)
      while (cursor < answers.length && matchedAt.has(answers[cursor]!)) cursor++
      return Effect.void
    }

    // Receives until every answer recorded before `before` has arrived.
    const awaitAnswers = (before: number) =>
      Effect.gen(function*() {
        while (cursor < answers.length && answers[cursor]! < before) {
          const waitingFor = answers[cursor]!
          const arrival = yield* within(
            Queue.take(inbox),
            timeoutMillis,
            () => traceError(new ReplayTimedOut({ index: waitingFor, peer: trace.entries[waitingFor]!.peer, millis: timeoutMillis }))
          )
          yield* accept(arrival)
        }
      })

    for (let index = 0; index < trace.entries.length; index++) {
      const entry = trace.entries[index]!
      if (entry.dir !== "client->coordinator") continue
      if (causal) yield* awaitAnswers(index)
      const dealer = dealers.get(entry.peer)!
      yield* Effect.promise(() => dealer.send(entry.frames as Array<Uint8Array>))
      sent++
    }
    yield* awaitAnswers(Number.POSITIVE_INFINITY)
    // Anything that arrived beyond the recording is a difference too.
    const extra = yield* Queue.poll(inbox)
    if (Option.isSome(extra)) yield* accept(extra.value)
    return { sent, matched: matchedAt.size }
  })
