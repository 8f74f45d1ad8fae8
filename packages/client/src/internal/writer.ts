/**
 * The client's one writer to the coordinator: the protocol's single writer
 * (`FrameSocket.Writer`), each message tagged with the request it carries (`undefined` for a
 * signal, a CONNECT or an abort), and the bounded flush that closing the DEALER performs.
 *
 * Closing flushes: a fire-and-forget message (a control signal, an abort) sent just before the
 * scope closes still reaches a connected coordinator. The writer finishes its queue and ZeroMQ
 * keeps writing its own (the socket's linger) for at most `closeTimeoutMillis` in all; while the
 * coordinator is not connected nothing waits and whatever is queued is dropped.
 *
 * @since 0.1.0
 * @internal
 */
import { FrameSocket } from "@mcore-effect/protocol"

/**
 * The writer: a message's tag is its request id, or `undefined` when it is not a request's.
 *
 * @since 0.1.0
 */
export type Writer = FrameSocket.Writer<number | undefined>

/**
 * A writer for `dealer`; `onError` hears of every message ZeroMQ refused, with its request id.
 *
 * @since 0.1.0
 */
export const make = (
  dealer: FrameSocket.Writable,
  onError: (requestId: number | undefined, cause: unknown) => void
): Writer =>
  new FrameSocket.Writer<number | undefined>(dealer, (cause, _message, requestId) => onError(requestId, cause), {
    // The DEALER has `sendTimeout: 0` and no high-water mark (see `ZeroMqTransport.openDealer`).
    immediate: true,
    // A server sends as its HTTP requests come, one by one from many connections: in bursts per
    // turn, its CPU per request fell from 703 to 573 µs (server bench workload, 64 connections,
    // medians of 4 alternating 5 s runs); the client bench's own figures did not move (quick run,
    // both ways: burst 1.14x / 1.16x the baseline, one-at-a-time p50 1.19x / 1.18x).
    coalesce: true,
    // A batch (`submitAll`, or `submit` in `Effect.forEach`) registers all its requests in one
    // turn: 20,000 of them took 0.2-0.4 s before the first burst went out, the coordinator idle
    // meanwhile. In bursts of 256 it starts on the first ones at once. Side-by-side bursts of
    // 20,000 against the Python echo peer, medians of 3-4 alternating runs per sitting, a loaded
    // machine (load 4-6): `submit` +37% and +56% req/s, `submitAll` +39% and +0% (two sittings),
    // CPU per request -10% to +7%; in a third, bursts of 128 / 512 gave `submit` +41% / +30% and
    // `submitAll` +23% / +14%; 64 cost 10% more CPU, 2,048 gained less.
    maxBurst: 256
  })

/**
 * What {@link closeAfterFlush} needs to know of the connection.
 *
 * @since 0.1.0
 */
export interface Link {
  /** Whether the coordinator is connected now. */
  readonly up: boolean
  /** Registers what to call if the connection drops during the flush (`undefined`: nothing). */
  readonly onDown: (callback: (() => void) | undefined) => void
}

/**
 * What {@link closeAfterFlush} closes: a zeromq.js socket, or an in-memory one (which holds
 * nothing back, so its linger has nothing to wait for).
 *
 * @since 0.2.0
 */
export interface Closable {
  linger: number
  close(): void
}

/**
 * Closes the socket after a bounded flush. While the coordinator is connected, the writer gets
 * until the deadline to hand its queue to ZeroMQ, and ZeroMQ gets what is left of it (as the
 * linger) to write its own queue after the close: `close()` itself returns at once, ZeroMQ's I/O
 * thread delivers in the background, and a process exiting meanwhile waits for it at most that
 * long (zeromq.js terminates its context at exit, which waits out lingering sockets). While it is
 * not connected, nothing could be delivered: the socket closes at once, with no linger, and what
 * is queued is dropped. Resolves once the socket is closed; never rejects.
 *
 * @since 0.1.0
 */
export const closeAfterFlush = (dealer: Closable, writer: Writer, link: Link, boundMillis: number): Promise<void> =>
  new Promise((resolve) => {
    const deadline = performance.now() + boundMillis
    let timer: ReturnType<typeof setTimeout> | undefined
    let done = false
    const close = () => {
      if (done) return
      done = true
      if (timer !== undefined) clearTimeout(timer)
      link.onDown(undefined)
      const connected = link.up
      writer.close()
      try {
        // Set last, from the remaining time: ZeroMQ reads the linger when the socket closes.
        dealer.linger = connected ? Math.max(0, Math.ceil(deadline - performance.now())) : 0
      } finally {
        // Closing the socket also closes its event observer and ends a pending receive.
        dealer.close()
        resolve()
      }
    }
    if (!link.up || writer.idle || boundMillis <= 0) return close()
    timer = setTimeout(close, boundMillis)
    link.onDown(close)
    writer.whenIdle(close)
  })
