/**
 * Plain ZeroMQ DEALERs speaking one dialect through the protocol's codecs of that dialect: a
 * client (its messages built as `Dialect.encodeClient` builds them, the coordinator's decoded
 * with `dialect.coordinator`) and an engine (registering with one empty frame, reading what the
 * coordinator forwards with `dialect.client`, sending batches it is given). For tests that need
 * to see, or craft, exactly what crosses the wire in a dialect.
 */
import { Dialect, Dialects, Messages, SamplingParams } from "@mcore-effect/protocol"
import { Effect, Result, type Scope } from "effect"
import * as Zmq from "zeromq"
import { TestSupport } from "../../src/index.ts"

const hashing = { blockSizeTokens: null, prefixCachingPolicy: null }

export interface Message {
  readonly frames: ReadonlyArray<Buffer>
  /** Decoded with the dialect's codec of that direction. */
  readonly message: Dialect.Message & Record<string, any>
}

export interface Client {
  readonly dialect: Dialect.Dialect
  readonly send: (frames: ReadonlyArray<Uint8Array>) => Effect.Effect<void>
  /** Sends a message as the dialect encodes it (fails the test if the dialect cannot carry it). */
  readonly sendMessage: (message: Dialect.Message) => Effect.Effect<void>
  /** CONNECT, then the CONNECT_ACK. */
  readonly connect: Effect.Effect<void, Error>
  readonly submit: (
    requestId: number,
    prompt: string | ReadonlyArray<number>,
    params?: SamplingParams.SamplingParamsInput
  ) => Effect.Effect<void>
  /** The next message from the coordinator, decoded (fails on one that does not decode). */
  readonly next: (timeoutMillis?: number) => Effect.Effect<Message, Error>
  /** Messages until `count` final replies have arrived. */
  readonly untilReplies: (count: number) => Effect.Effect<Array<Message>, Error>
}

const decoded = (codec: Dialect.Dialect["coordinator"], frames: ReadonlyArray<Buffer>): Effect.Effect<Message, Error> => {
  const message = codec.decode(frames)
  return Result.isSuccess(message)
    ? Effect.succeed({ frames, message: message.success as Message["message"] })
    : Effect.fail(new Error(`does not decode: ${message.failure.message}`))
}

const dealer = (address: string, routingId?: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const s = new Zmq.Dealer({ linger: 0, sendTimeout: 0, ...(routingId === undefined ? {} : { routingId }) })
      s.connect(address)
      return s
    }),
    (s) => Effect.sync(() => s.close())
  )

/** A client of the coordinator at `address`, speaking `protocol`. */
export const client = (address: string, protocol: Dialect.Name): Effect.Effect<Client, never, Scope.Scope> =>
  Effect.gen(function*() {
    const dialect = Dialects.get(protocol)
    const { next, send } = yield* TestSupport.peer(yield* dealer(address), `${protocol} client`)
    const sendMessage = (message: Dialect.Message) => send(Result.getOrThrow(Dialect.encodeClient(dialect, message)))
    const nextMessage = (timeoutMillis?: number) =>
      Effect.flatMap(next(timeoutMillis), (frames) => decoded(dialect.coordinator, frames))
    return {
      dialect,
      send,
      sendMessage,
      connect: Effect.gen(function*() {
        yield* sendMessage({ _tag: "Connect" })
        const ack = yield* nextMessage()
        if (ack.message._tag !== "ConnectAck") return yield* Effect.fail(new Error(`expected CONNECT_ACK, got ${ack.message._tag}`))
      }),
      submit: (requestId, prompt, params) =>
        sendMessage(Result.getOrThrow(dialect.submit({ requestId, prompt, samplingParams: params }, hashing))),
      next: nextMessage,
      untilReplies: (count) =>
        Effect.gen(function*() {
          const out: Array<Message> = []
          while (out.filter((m) => m.message._tag === "EngineReply").length < count) out.push(yield* nextMessage())
          return out
        })
    } satisfies Client
  })

export interface Engine {
  readonly send: (frames: ReadonlyArray<Uint8Array>) => Effect.Effect<void>
  /**
   * The next message the coordinator forwarded, decoded with the dialect's client codec (or, for
   * core_v0.16's PAUSE_ACK / STOP_ACK, which it sends engines in their own layout, the engine's).
   */
  readonly next: (timeoutMillis?: number) => Effect.Effect<Message, Error>
}

/** An engine registered with the coordinator at `address`, speaking `protocol`. */
export const engine = (address: string, protocol: Dialect.Name, identity: string): Effect.Effect<Engine, never, Scope.Scope> =>
  Effect.gen(function*() {
    const dialect = Dialects.get(protocol)
    const { next, send } = yield* TestSupport.peer(yield* dealer(address, identity), `${protocol} engine`)
    yield* send(Messages.engineRegistration)
    return {
      send,
      next: (timeoutMillis) =>
        Effect.flatMap(next(timeoutMillis), (frames) =>
          decoded(dialect.client, frames).pipe(Effect.catch(() => decoded(dialect.engine, frames))))
    }
  })
