/**
 * Connections up on the coordinator's socket, counted from what the socket reports of them.
 *
 * @since 0.1.0
 * @internal
 */

/**
 * Counts a ROUTER's connections. A ZeroMQ ROUTER's must be observed before the socket binds
 * ({@link CoordinatorSocket}): a peer retrying its connection (a client after a coordinator
 * restart, every 100 ms) is accepted as soon as the bind lands, and an observer attached after
 * `bind` resolved missed that connection's `accept` and `handshake` for good (the
 * crash-and-restart test then waited forever for the client to be counted, 2 runs in 3 on a quiet
 * machine).
 *
 * Every accepted connection ends with `disconnect`, whether its handshake succeeded or not: one
 * that closes while some are still in their handshake is counted as one of those (a failed
 * CurveZMQ handshake, most likely). An in-memory connection has no handshake: it is up at once.
 */
export class ConnectionCount {
  /** Connections up (handshake done). */
  up = 0
  /** Accepted connections still in their handshake. */
  private handshaking = 0
  /**
   * Connections closed for bad input, by reason (our ROUTER's, `ZmtpConnection.RefusalReason`:
   * `signature`, `version`, `mechanism`, `frame-too-large`, `handshake-timeout`, ...). zeromq.js's
   * ROUTER reports none: libzmq closes such connections by itself.
   */
  readonly refusals: Partial<Record<string, number>> = {}
  /** Called after each change of {@link up} or {@link refusals}. */
  onChange: () => void = () => {}

  /** A connection was closed for bad input. */
  refused(reason: string): void {
    this.refusals[reason] = (this.refusals[reason] ?? 0) + 1
    this.onChange()
  }

  /** A connection was accepted (its handshake follows). */
  accepted(): void {
    this.handshaking++
  }

  /** A connection is up. */
  handshake(): void {
    if (this.handshaking > 0) this.handshaking--
    this.up++
    this.onChange()
  }

  /** A connection ended. */
  disconnected(): void {
    if (this.handshaking > 0) this.handshaking--
    else if (this.up > 0) this.up--
    this.onChange()
  }
}
