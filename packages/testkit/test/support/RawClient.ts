/**
 * A plain ZeroMQ DEALER (or an in-memory one) speaking the client side of the protocol by hand, for testing the test
 * coordinator without the real client package: frames are built with the protocol's msgpack
 * encoder, replies read back as raw frames.
 */
import { type FrameSocket, Headers, type MemorySocket, Msgpack, SamplingParams } from "@mcore-effect/protocol"
import { Effect, type Scope } from "effect"
import * as Zmq from "zeromq"
import { TestSupport } from "../../src/index.ts"

const H = Headers.values
const NIL = Uint8Array.of(0xc0)

export interface Reply {
  readonly header: number
  readonly requestId: number
  /** Decoded body (frame 1), when there is one and it decodes. */
  readonly body: Record<string, any> | undefined
  readonly frames: ReadonlyArray<Buffer>
}

export interface SubmitOptions {
  readonly params?: Record<string, unknown>
  /** Frame 2: `null` (did not hash, the default) or the block hashes. */
  readonly hashes?: ReadonlyArray<number | bigint> | null
  readonly media?: Record<string, unknown> | null
}

export interface RawClient {
  readonly send: (frames: ReadonlyArray<Uint8Array>) => Effect.Effect<void>
  /** CONNECT, then waits for CONNECT_ACK. */
  readonly connect: Effect.Effect<void>
  readonly submit: (id: number, prompt: string | ReadonlyArray<number>, options?: SubmitOptions) => Effect.Effect<void>
  readonly submitWithKv: (
    id: number,
    prompt: string | ReadonlyArray<number>,
    kvMeta: Record<string, unknown>,
    srcBlockIds: ReadonlyArray<number>,
    params?: Record<string, unknown>
  ) => Effect.Effect<void>
  readonly signal: (header: number, ...args: ReadonlyArray<unknown>) => Effect.Effect<void>
  /** The next message (raw frames), or a failure after `timeoutMillis` (default 5 s). */
  readonly next: (timeoutMillis?: number) => Effect.Effect<ReadonlyArray<Buffer>, Error>
  /** The next message, decoded as a reply or partial. */
  readonly nextReply: (timeoutMillis?: number) => Effect.Effect<Reply, Error>
  /** Collects messages until `count` final replies have arrived; returns everything received. */
  readonly untilReplies: (count: number, timeoutMillis?: number) => Effect.Effect<Array<Reply>, Error>
  /** Messages received and not yet taken. */
  readonly buffered: () => number
  /** True when no message arrives within `millis` (a quiet window: only for proving absence). */
  readonly quietFor: (millis: number) => Effect.Effect<boolean>
}

export const params = (overrides?: Record<string, unknown>): Record<string, unknown> => ({
  ...SamplingParams.defaults,
  ...overrides
})

export const submitFrames = (
  id: number,
  prompt: string | ReadonlyArray<number>,
  options?: SubmitOptions
): Array<Uint8Array> => [
  Msgpack.encode([H.SUBMIT_REQUEST, id, params(options?.params), options?.media ?? null]),
  Msgpack.encode(prompt),
  options?.hashes === undefined || options.hashes === null ? NIL : Msgpack.encode(options.hashes),
  NIL,
  NIL
]

export const decodeReply = (frames: ReadonlyArray<Buffer>): Reply => {
  const head = Msgpack.decode(frames[0]!) as Array<number>
  let body: Record<string, any> | undefined
  try {
    body = frames[1] === undefined ? undefined : (Msgpack.decode(frames[1]) as Record<string, any>)
  } catch {
    body = undefined
  }
  return { header: head[0]!, requestId: head[1]!, body, frames }
}

/** A raw client at `address`: a ZeroMQ DEALER, or an in-memory one on `network`. */
export const make = (address: string, network?: MemorySocket.Network): Effect.Effect<RawClient, never, Scope.Scope> =>
  Effect.gen(function*() {
    const socket = yield* Effect.acquireRelease(
      Effect.sync((): FrameSocket.Readable & FrameSocket.Writable & { close(): void } => {
        if (network !== undefined) return network.connect(address)
        const s = new Zmq.Dealer({ linger: 0, sendHighWaterMark: 0, receiveHighWaterMark: 0 })
        s.connect(address)
        return s
      }),
      (s) => Effect.sync(() => s.close())
    )
    const { next, quietFor, send, waiting } = yield* TestSupport.peer(socket, "client")

    const nextReply = (timeoutMillis?: number) => Effect.map(next(timeoutMillis), decodeReply)

    const client: RawClient = {
      send,
      connect: Effect.gen(function*() {
        yield* send([Msgpack.encode([H.CONNECT])])
        const ack = yield* next()
        const decoded = Msgpack.decode(ack[0]!) as Array<number>
        if (decoded[0] !== H.CONNECT_ACK) return yield* Effect.die(new Error(`expected CONNECT_ACK, got ${decoded[0]}`))
      }).pipe(Effect.orDie),
      submit: (id, prompt, options) => send(submitFrames(id, prompt, options)),
      submitWithKv: (id, prompt, kvMeta, srcBlockIds, p) =>
        send([
          Msgpack.encode([H.SUBMIT_REQUEST_WITH_KV, id, params(p), kvMeta]),
          Msgpack.encode(prompt),
          Msgpack.encode(srcBlockIds)
        ]),
      signal: (header, ...args) => send([Msgpack.encode([header, ...args])]),
      next,
      nextReply,
      untilReplies: (count, timeoutMillis) =>
        Effect.gen(function*() {
          const out: Array<Reply> = []
          let finals = 0
          while (finals < count) {
            const reply = yield* nextReply(timeoutMillis)
            out.push(reply)
            if (reply.header === H.ENGINE_REPLY) finals++
          }
          return out
        }),
      buffered: waiting,
      quietFor
    }
    return client
  })
