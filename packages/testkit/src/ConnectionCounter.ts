/**
 * A plain TCP listener on loopback that counts the connections made to it: for proving that a
 * program opened no socket (a command refused before connecting, say), which a coordinator that
 * waits for a first message cannot show. It never answers: a ZeroMQ peer that did connect would
 * get no greeting and send nothing.
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { createServer, connect, type Socket } from "node:net"

/**
 * A running listener.
 *
 * @category models
 * @since 0.2.0
 */
export interface Handle {
  /** `tcp://127.0.0.1:PORT`, to give the program under test. */
  readonly address: string
  /**
   * How many connections were accepted before one this makes itself, once that one is accepted.
   * The kernel hands connections over in the order their handshakes completed, and on loopback a
   * handshake completes within its `connect()`: so every connection a program made before it
   * exited is counted, with no waiting window.
   */
  readonly connectionsBefore: Effect.Effect<number>
}

/**
 * Starts a listener on `127.0.0.1`, any free port; it closes with the scope.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { ConnectionCounter } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const listener = yield* ConnectionCounter.make
 *   // run something with listener.address that must not connect, to its end; then:
 *   return yield* listener.connectionsBefore // 0
 * }).pipe(Effect.scoped)
 * ```
 *
 * @category constructors
 * @since 0.2.0
 */
export const make: Effect.Effect<Handle, never, Scope.Scope> = Effect.gen(function*() {
  // The remote port of every accepted connection, in the order accepted.
  const accepted: Array<number | undefined> = []
  const open = new Set<Socket>()
  const waiters = new Set<() => void>()
  const server = createServer((socket) => {
    accepted.push(socket.remotePort)
    open.add(socket)
    socket.on("error", () => {})
    socket.on("close", () => open.delete(socket))
    for (const wake of [...waiters]) wake()
  })
  const port = yield* Effect.acquireRelease(
    Effect.callback<number>((resume) => {
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : 0))
      })
    }),
    () =>
      Effect.callback<void>((resume) => {
        for (const socket of open) socket.destroy()
        server.close(() => resume(Effect.void))
      })
  )
  const connectionsBefore = Effect.callback<number>((resume) => {
    const marker = connect(port, "127.0.0.1")
    marker.on("error", () => {})
    let check = () => {}
    marker.once("connect", () => {
      const local = marker.localPort
      check = () => {
        const index = accepted.indexOf(local)
        if (index < 0) return
        waiters.delete(check)
        marker.destroy()
        resume(Effect.succeed(index))
      }
      waiters.add(check)
      check()
    })
    return Effect.sync(() => {
      waiters.delete(check)
      marker.destroy()
    })
  })
  return { address: `tcp://127.0.0.1:${port}`, connectionsBefore }
})
