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
    // Frames queued in one turn go out together: less CPU per request for a server
    // (see PERFORMANCE.md, "Coalesced writes").
    coalesce: true,
    // A batch of 20,000 starts going out at once rather than after 0.2-0.4 s of registering
    // (see PERFORMANCE.md, "Bursts of 256").
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
