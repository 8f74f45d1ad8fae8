/**
 * A test engine's socket side: a ZeroMQ DEALER connected to the coordinator, or a
 * `MemorySocket.Dealer` on an in-memory network, behind one shape, so that the engine's loop
 * (`EngineCore`) runs the same on either. What the engine needs of it: `FrameSocket`'s reading
 * and writing, the close, and to hear of every (re)connection (it registers on each).
 *
 * @since 0.2.0
 * @internal
 */
import type { FrameSocket, MemorySocket } from "@mcore-effect/protocol"
import * as Zmq from "zeromq"
import type { EngineConfig } from "./engineConfig.ts"

/** A connected engine socket. */
export interface Connected {
  readonly socket: FrameSocket.Readable & FrameSocket.Writable & { close(): void }
  /** Stops reporting connections (before the close). */
  readonly unobserve: () => void
}

/**
 * Opens a socket to the coordinator; `onUp` hears every connection that comes up. Throws on a
 * malformed address.
 */
export type Connector = (config: EngineConfig, onUp: () => void) => Connected

/** A ZeroMQ DEALER with the engine's identity, reconnecting quickly after a coordinator restart. */
export const zeromq: Connector = (config, onUp) => {
  const dealer = new Zmq.Dealer({
    linger: 0,
    sendHighWaterMark: 0,
    receiveHighWaterMark: 0,
    // Never wait to send (the queues are unbounded anyway): zeromq.js then sends synchronously
    // instead of deferring every few hundred messages to a later event-loop turn.
    sendTimeout: 0,
    routingId: config.identity,
    // Reconnect quickly after a coordinator restart.
    reconnectInterval: 20,
    reconnectMaxInterval: 200,
    ...(config.curve === undefined
      ? {}
      : {
        curveServerKey: config.curve.serverKey,
        curvePublicKey: config.curve.publicKey,
        curveSecretKey: config.curve.secretKey
      })
  })
  dealer.events.on("handshake", onUp)
  try {
    dealer.connect(config.coordinatorAddress)
  } catch (error) {
    dealer.close()
    throw error
  }
  return { socket: dealer, unobserve: () => dealer.events.off("handshake", onUp) }
}

/** A `MemorySocket.Dealer` on `network`, with the engine's identity. */
export const memory = (network: MemorySocket.Network): Connector => (config, onUp) => {
  const dealer = network.connect(config.coordinatorAddress, { routingId: config.identity })
  const unobserve = dealer.onLink((event) => {
    if (event === "up") onUp()
  })
  return { socket: dealer, unobserve }
}
