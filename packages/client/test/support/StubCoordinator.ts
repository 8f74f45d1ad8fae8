/**
 * A minimal coordinator for the client's tests: a ROUTER on loopback that records every message a
 * client sends (decoded with the protocol's codec) and sends back exactly what a test tells it to.
 * Used where a test needs the coordinator to misbehave on cue (late replies, garbage, silence); the
 * behaviours of a real coordinator come from the testkit.
 */
import { type Dialect, Dialects, FrameSocket, type Messages } from "@mcore-effect/protocol"
import { Effect, Queue, Result, type Scope } from "effect"
import * as Zmq from "zeromq"

export interface Received {
  readonly identity: Buffer
  readonly frames: ReadonlyArray<Buffer>
  /** Decoded with the dialect's codec (typed as the reference's messages; other dialects' fields differ). */
  readonly message: Result.Result<Messages.ClientMessage, unknown>
}

export interface StubCoordinator {
  readonly address: string
  /** The dialect it speaks: what a client of it is given. */
  readonly protocol: Dialect.Name
  /** The next message a client sent (CONNECTs included). */
  readonly take: Effect.Effect<Received>
  /** Every message received and not taken yet. */
  readonly drain: Effect.Effect<ReadonlyArray<Received>>
  readonly send: (identity: Uint8Array, frames: ReadonlyArray<Uint8Array>) => Effect.Effect<void>
  /** Answers an ENGINE_REPLY for a client's request id. */
  readonly reply: (identity: Uint8Array, requestId: number, reply: Record<string, unknown>) => Effect.Effect<void>
  readonly partial: (identity: Uint8Array, requestId: number, newTokens: ReadonlyArray<number>) => Effect.Effect<void>
  /**
   * Messages the ROUTER could not route (with `mandatory`: to a client that has gone), where
   * Megatron-LM's coordinator raises `EHOSTUNREACH` and exits.
   */
  readonly undelivered: Effect.Effect<number>
  /** Closes the ROUTER now (the client sees its connection drop). */
  readonly close: Effect.Effect<void>
}

export const make = (options: {
  /** Answer CONNECT with CONNECT_ACK (default true). */
  readonly ack?: boolean
  readonly address?: string
  /** The dialect it decodes and answers in (default the reference protocol). */
  readonly dialect?: Dialect.Dialect
  /** Refuse to send to an identity that is not connected, as Megatron-LM's ROUTER does (default false). */
  readonly mandatory?: boolean
} = {}): Effect.Effect<StubCoordinator, never, Scope.Scope> =>
  Effect.gen(function*() {
    const router = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const router = new Zmq.Router({
          linger: 0,
          sendHighWaterMark: 0,
          receiveHighWaterMark: 0,
          mandatory: options.mandatory ?? false
        })
        await router.bind(options.address ?? "tcp://127.0.0.1:0")
        return router
      }),
      (router) => Effect.sync(() => router.close())
    )
    const inbox = yield* Queue.unbounded<Received>()
    const ack = options.ack ?? true
    const dialect = options.dialect ?? Dialects.get("reference")
    const encode = (message: Dialect.Message) => Result.getOrThrow(dialect.coordinator.encode(message as never))
    const connectAck = encode({ _tag: "ConnectAck" })
    // The socket's one writer and one reader, as every peer has.
    let undelivered = 0
    const writer = new FrameSocket.Writer(router, () => {
      undelivered++
    })
    yield* FrameSocket.reader(router, {
      onMessage: (parts) => {
        const [identity, ...frames] = parts as [Buffer, ...Array<Buffer>]
        const message = dialect.client.decode(frames) as Result.Result<Messages.ClientMessage, unknown>
        if (ack && message._tag === "Success" && message.success._tag === "Connect") writer.send([identity, ...connectAck])
        Queue.offerUnsafe(inbox, { identity, frames, message })
      },
      onHandlerError: () => {},
      onReceiveError: () => {}
    })
    const send = (identity: Uint8Array, frames: ReadonlyArray<Uint8Array>) =>
      Effect.callback<void>((resume) => {
        writer.send([identity, ...frames])
        writer.whenIdle(() => resume(Effect.void))
      })
    return {
      address: router.lastEndpoint!,
      protocol: dialect.name,
      take: Queue.take(inbox),
      drain: Queue.clear(inbox),
      send,
      reply: (identity, requestId, reply) => send(identity, encode({ _tag: "EngineReply", requestId, reply })),
      partial: (identity, requestId, newTokens) =>
        send(identity, encode({ _tag: "EngineReplyPartial", requestId, partial: { request_id: requestId, new_tokens: newTokens } })),
      undelivered: Effect.sync(() => undelivered),
      close: Effect.sync(() => router.close())
    } satisfies StubCoordinator
  })

/** The next message a client sent that is not CONNECT. */
export const nextMessage = (stub: StubCoordinator): Effect.Effect<Received> =>
  Effect.gen(function*() {
    for (;;) {
      const received = yield* stub.take
      if (Result.isSuccess(received.message) && received.message.success._tag === "Connect") continue
      return received
    }
  })

/** A received message's tag, or `undecodable`. */
export const tagOf = (received: Received): string =>
  Result.isSuccess(received.message) ? received.message.success._tag : "undecodable"
