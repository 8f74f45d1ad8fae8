/**
 * A plain ZeroMQ DEALER registering with a coordinator the way Megatron's engines do (one empty
 * frame), for tests that need to craft exactly what an engine sends.
 */
import { Messages, Msgpack } from "@mcore-effect/protocol"
import { Effect, type Scope } from "effect"
import * as Zmq from "zeromq"

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
    const inbox: Array<Array<Buffer>> = []
    let waiter: (() => void) | undefined
    void (async () => {
      for (;;) {
        try {
          inbox.push(await socket.receive())
        } catch {
          return
        }
        const w = waiter
        waiter = undefined
        w?.()
      }
    })()
    const send = (frames: ReadonlyArray<Uint8Array>) => Effect.promise(() => socket.send(frames as Array<Uint8Array>))
    yield* send(Messages.engineRegistration)
    const next = (timeoutMillis = 5_000) =>
      Effect.callback<ReadonlyArray<Buffer>, Error>((resume) => {
        const take = () => {
          clearTimeout(timer)
          resume(Effect.succeed(inbox.shift()!))
        }
        const timer = setTimeout(() => {
          waiter = undefined
          resume(Effect.fail(new Error(`engine ${identity}: no message within ${timeoutMillis} ms`)))
        }, timeoutMillis)
        if (inbox.length > 0) take()
        else waiter = take
        return Effect.sync(() => clearTimeout(timer))
      })
    return {
      send,
      next,
      nextMetadata: (timeoutMillis) => Effect.map(next(timeoutMillis), (frames) => Msgpack.decode(frames[0]!) as Array<any>)
    }
  })
