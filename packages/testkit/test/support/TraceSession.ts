/**
 * The client session the fixture trace was recorded from: a plain ZeroMQ DEALER speaking the
 * client side of the protocol through the protocol package's codecs. It reacts to what it
 * receives (it waits for CONNECT_ACK and for final replies), so it runs unchanged against the
 * test coordinator, a recorder in front of it, or a scripted coordinator replaying the trace.
 *
 * Deterministic on purpose: the submissions go out while the coordinator is PAUSED (so routing
 * sees the same loads every run), and the abort targets a request that cannot have generated
 * anything yet (submitted and aborted while paused), so every reply is the same every run.
 */
import { Messages, SamplingParams } from "@mcore-effect/protocol"
import { Effect, Result, type Scope } from "effect"
import * as Zmq from "zeromq"
import { TestSupport } from "../../src/index.ts"

/** The settings the fixture was recorded with; a replay against live engines must use the same. */
export const cluster = { engines: 2, engine: { stepMs: 0 } } as const

export const prompts = {
  plain: "the quick red fox jumps over the old dog",
  streamed: [4, 9, 22, 41, 49, 1, 23, 42, 50, 33, 5, 10, 24, 43, 51, 34, 6, 11],
  logProbs: "a small bird sings",
  aborted: "one slow cat sleeps near the river"
} as const

export interface Outcome {
  /** `generated_tokens` of each final reply, by client request id. */
  readonly tokens: ReadonlyMap<number, ReadonlyArray<number>>
  /** The `new_tokens` of each partial, in arrival order, by client request id. */
  readonly partials: ReadonlyMap<number, ReadonlyArray<ReadonlyArray<number>>>
}

type Client = Messages.ClientMessage
type Coordinator = Messages.CoordinatorMessage

const params = (overrides: Partial<SamplingParams.SamplingParams>): SamplingParams.SamplingParams => ({
  ...SamplingParams.defaults,
  ...overrides
})

const submit = (requestId: number, prompt: string | ReadonlyArray<number>, overrides: Partial<SamplingParams.SamplingParams>): Client => ({
  _tag: "SubmitRequest",
  requestId,
  samplingParams: params(overrides),
  mediaDescriptor: null,
  prompt,
  blockHashes: null,
  media: null,
  offloadParams: null
})

/** Runs the session against `address`; every receive is bounded by a real 5 s timer. */
export const run = (address: string): Effect.Effect<Outcome, Error, Scope.Scope> =>
  Effect.gen(function*() {
    const dealer = yield* Effect.acquireRelease(
      Effect.sync(() => new Zmq.Dealer({ linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0 })),
      (d) => Effect.sync(() => d.close())
    )
    dealer.connect(address)
    const peer = yield* TestSupport.peer(dealer, "session")
    const send = (message: Client) => peer.send(Result.getOrThrow(Messages.Client.encode(message)))
    const receive: Effect.Effect<Coordinator, Error> = peer.next(5_000).pipe(
      Effect.flatMap((frames) => Effect.fromResult(Messages.Coordinator.decode(frames)))
    )

    const tokens = new Map<number, ReadonlyArray<number>>()
    const partials = new Map<number, Array<ReadonlyArray<number>>>()
    const untilFinal = (ids: ReadonlyArray<number>) =>
      Effect.gen(function*() {
        while (!ids.every((id) => tokens.has(id))) {
          const message = yield* receive
          if (message._tag === "EngineReply") {
            tokens.set(message.requestId, message.reply.generated_tokens as ReadonlyArray<number>)
          } else if (message._tag === "EngineReplyPartial") {
            const list = partials.get(message.requestId) ?? []
            list.push(message.partial.new_tokens)
            partials.set(message.requestId, list)
          } else {
            return yield* Effect.fail(new Error(`unexpected ${message._tag}`))
          }
        }
      })

    yield* send({ _tag: "Connect" })
    const ack = yield* receive
    if (ack._tag !== "ConnectAck") return yield* Effect.fail(new Error(`expected ConnectAck, got ${ack._tag}`))
    yield* send({ _tag: "SetGenerationEpoch", generationEpoch: 3 })

    yield* send({ _tag: "Pause" })
    yield* send(submit(0, prompts.plain, { num_tokens_to_generate: 4 }))
    yield* send(submit(1, prompts.streamed, { num_tokens_to_generate: 6, streaming: true, streaming_interval: 2 }))
    yield* send(submit(2, prompts.logProbs, { num_tokens_to_generate: 3, return_log_probs: true }))
    yield* send({ _tag: "Unpause" })
    yield* untilFinal([0, 1, 2])

    yield* send({ _tag: "Pause" })
    yield* send(submit(3, prompts.aborted, { num_tokens_to_generate: 64 }))
    yield* send({ _tag: "AbortRequest", requestId: 3 })
    yield* send({ _tag: "Unpause" })
    yield* untilFinal([3])
    return { tokens, partials }
  })
