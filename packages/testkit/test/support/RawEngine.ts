/**
 * A plain ZeroMQ DEALER registering with a coordinator the way Megatron's engines do (one empty
 * frame), for tests that need to craft exactly what an engine sends.
 */
import { Messages, Msgpack } from "@mcore-effect/protocol"
import { Effect, type Scope } from "effect"
import * as Zmq from "zeromq"
import { TestSupport } from "../../src/index.ts"

export interface RawEngine {
  readonly send: (frames: ReadonlyArray<Uint8Array>) => Effect.Effect<void>
  /** The next message the coordinator sent, or a failure after `timeoutMillis`. */
  readonly next: (timeoutMillis?: number) => Effect.Effect<ReadonlyArray<Buffer>, Error>
  /** The next message's metadata frame, decoded. */
  readonly nextMetadata: (timeoutMillis?: number) => Effect.Effect<ReadonlyArray<any>, Error>
}

export const make = (address: string, identity: string): Effect.Effect<RawEngine, never, Scope.Scope> =>
  Effect.gen(function*() {
    const socket = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const s = new Zmq.Dealer({ linger: 0, routingId: identity, sendTimeout: 0 })
        s.connect(address)
        return s
      }),
      (s) => Effect.sync(() => s.close())
    )
    const { next, send } = yield* TestSupport.peer(socket, `engine ${identity}`)
    yield* send(Messages.engineRegistration)
    return {
      send,
      next,
      nextMetadata: (timeoutMillis) => Effect.map(next(timeoutMillis), (frames) => Msgpack.decode(frames[0]!) as Array<any>)
    }
  })
