/**
 * A minimal coordinator for the client's tests: a ROUTER on loopback that records every message a
 * client sends (decoded with the protocol's codec) and sends back exactly what a test tells it to.
 * Used where a test needs the coordinator to misbehave on cue (late replies, garbage, silence); the
 * behaviours of a real coordinator come from the testkit.
 */
import { FrameSocket, Messages, Msgpack } from "@mcore-effect/protocol"
import { Effect, Queue, type Result, type Scope } from "effect"
import * as Zmq from "zeromq"

export interface Received {
  readonly identity: Buffer
  readonly frames: ReadonlyArray<Buffer>
  readonly message: Result.Result<Messages.ClientMessage, unknown>
}

export interface StubCoordinator {
  readonly address: string
  /** The next message a client sent (CONNECTs included). */
  readonly take: Effect.Effect<Received>
  /** Every message received and not taken yet. */
  readonly drain: Effect.Effect<ReadonlyArray<Received>>
  readonly send: (identity: Uint8Array, frames: ReadonlyArray<Uint8Array>) => Effect.Effect<void>
  /** Answers an ENGINE_REPLY for a client's request id. */
  readonly reply: (identity: Uint8Array, requestId: number, reply: Record<string, unknown>) => Effect.Effect<void>
  readonly partial: (identity: Uint8Array, requestId: number, newTokens: ReadonlyArray<number>) => Effect.Effect<void>
  /** Closes the ROUTER now (the client sees its connection drop). */
  readonly close: Effect.Effect<void>
}

export const make = (options: {
  /** Answer CONNECT with CONNECT_ACK (default true). */
  readonly ack?: boolean
  readonly address?: string
} = {}): Effect.Effect<StubCoordinator, never, Scope.Scope> =>
  Effect.gen(function*() {
    const router = yield* Effect.acquireRelease(
      Effect.promise(async () => {
        const router = new Zmq.Router({ linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0 })
        await router.bind(options.address ?? "tcp://127.0.0.1:0")
        return router
      }),
      (router) => Effect.sync(() => router.close())
    )
    const inbox = yield* Queue.unbounded<Received>()
    const ack = options.ack ?? true
    const connectAck = Msgpack.encode([1])
    // The socket's one writer and one reader, as every peer has.
    const writer = new FrameSocket.Writer(router)
    yield* FrameSocket.reader(router, {
      onMessage: (parts) => {
        const [identity, ...frames] = parts as [Buffer, ...Array<Buffer>]
        const message = Messages.Client.decode(frames)
        if (ack && message._tag === "Success" && message.success._tag === "Connect") writer.send([identity, connectAck])
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
      take: Queue.take(inbox),
      drain: Queue.clear(inbox),
      send,
      reply: (identity, requestId, reply) => send(identity, [Msgpack.encode([21, requestId]), Msgpack.encode(reply)]),
      partial: (identity, requestId, newTokens) =>
        send(identity, [
          Msgpack.encode([22, requestId]),
          Msgpack.encode({ request_id: requestId, new_tokens: newTokens })
        ]),
      close: Effect.sync(() => router.close())
    } satisfies StubCoordinator
  })
