/**
 * The client's one connection state, as a machine of its own: where the connection is, and what
 * each event asks the connection to do. Written only by `Connection`.
 *
 * @since 0.1.0
 * @internal
 */

/**
 * Where the connection is: waiting for the first CONNECT_ACK, ready, lost (the coordinator
 * dropped; waiting for a CONNECT_ACK on a new connection), or closed (the scope closed).
 *
 * @since 0.1.0
 */
export type Phase = "connecting" | "ready" | "lost" | "closed"

/**
 * The one connection state and its transitions. Each transition says what the connection must
 * do; none does it, so the machine is tested on its own.
 *
 * `linkUp` is the transport under the phase: up from the socket's `handshake` event or from any
 * message received, down from its `disconnect` event. A message counts because the observer's
 * events come in on a path of their own and may trail the messages: a client can have its
 * CONNECT_ACK, send a signal and close before `handshake` is seen.
 *
 * @since 0.1.0
 */
export class ConnectionState {
  phase: Phase = "connecting"
  linkUp = false
  /**
   * The coordinator connection this client is on: 0 before the first CONNECT_ACK, then one more
   * for each CONNECT_ACK that ends a loss. A coordinator that comes back may be a new process that
   * numbers its requests from 0 again, so what a request left on the coordinator (a KV pin) is
   * named by its id and the connection it went out on, never by its id alone.
   */
  epoch = 0
  /** ZMTP connections made so far. */
  private connections = 0

  /** The transport came up. True when CONNECT must be sent on it. */
  up(): boolean {
    this.linkUp = true
    this.connections++
    // A new connection (after a loss, or after the first one dropped before its CONNECT_ACK):
    // the coordinator on the other end does not know us. The first connection's CONNECT is
    // already queued.
    return this.phase === "lost" || (this.phase === "connecting" && this.connections > 1)
  }

  /** The transport dropped. True when the requests in flight are lost with it. */
  down(): boolean {
    this.linkUp = false
    if (this.phase !== "ready") return false
    this.phase = "lost"
    return true
  }

  /** CONNECT_ACK arrived: `"first"` (the handshake), `"back"` (after a loss), or nothing to do. */
  acknowledged(): "first" | "back" | undefined {
    if (this.phase === "connecting") {
      this.phase = "ready"
      this.epoch++
      return "first"
    }
    if (this.phase === "lost") {
      this.phase = "ready"
      this.epoch++
      return "back"
    }
    return undefined
  }

  /** True until the first CONNECT_ACK: then anything but CONNECT_ACK rejects the handshake. */
  get awaitingFirstAck(): boolean {
    return this.phase === "connecting"
  }

  close(): void {
    this.phase = "closed"
  }
}
