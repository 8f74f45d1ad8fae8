/**
 * ZMTP connections up on a ROUTER, counted from its socket events.
 *
 * @since 0.1.0
 * @internal
 */
import type * as Zmq from "zeromq"

/**
 * Counts a ROUTER's connections from its events. It must be made before the socket binds: a
 * peer retrying its connection (a client after a coordinator restart, every 100 ms) is accepted
 * as soon as the bind lands, and an observer attached after `bind` resolved missed that
 * connection's `accept` and `handshake` for good (the crash-and-restart test then waited forever
 * for the client to be counted, 2 runs in 3 on a quiet machine).
 *
 * Every accepted connection ends with `disconnect`, whether its handshake succeeded or not: one
 * that closes while some are still in their handshake is counted as one of those (a failed
 * CurveZMQ handshake, most likely).
 */
export class ConnectionCount {
  /** Connections up (handshake done). */
  up = 0
  /** Accepted connections still in their handshake. */
  private handshaking = 0
  /** Called after each change of {@link up}. */
  onChange: () => void = () => {}

  constructor(router: Zmq.Router) {
    const events = router.events
    events.on("accept", () => {
      this.handshaking++
    })
    events.on("handshake", () => {
      if (this.handshaking > 0) this.handshaking--
      this.up++
      this.onChange()
    })
    events.on("disconnect", () => {
      if (this.handshaking > 0) this.handshaking--
      else if (this.up > 0) this.up--
      this.onChange()
    })
  }
}
