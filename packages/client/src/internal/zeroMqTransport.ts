/**
 * The ZeroMQ transport, the client's default: one DEALER connected to the coordinator's ROUTER,
 * its connection events read from zeromq.js's observer (the ZMTP handshake, the connect delay
 * and retries, a disconnect, the close), and a fresh connect after every drop.
 *
 * @since 0.2.0
 * @internal
 */
import * as Result from "effect/Result"
import * as Zmq from "zeromq"
import { addressProblem } from "./zeroMqAddress.ts"
import { type ClientError, clientError, InvalidAddress } from "../ClientError.ts"
import { type Events, type Link, type LinkConfig, type LinkState, overSocket, type Service } from "./link.ts"

/** The DEALER's CurveZMQ options: the server's key, and the client's key pair (made when not given). */
const curveOptions = (curve: LinkConfig["curve"]) => {
  if (curve === undefined) return {}
  const pair = curve.publicKey !== undefined && curve.secretKey !== undefined
    ? { publicKey: curve.publicKey, secretKey: curve.secretKey }
    : Zmq.curveKeyPair()
  return { curveServerKey: curve.serverKey, curvePublicKey: pair.publicKey, curveSecretKey: pair.secretKey }
}

/** Opens the DEALER, not connected yet (its events are observed first: see {@link connect}). */
const openDealer = (config: LinkConfig): Zmq.Dealer =>
  new Zmq.Dealer({
    // Unbounded, as in the reference: a burst of submissions never blocks the writer.
    sendHighWaterMark: 0,
    receiveHighWaterMark: 0,
    // Never wait to send (the queue is unbounded): zeromq.js then completes every send before
    // returning, and the writer sends a turn's first request at once and the rest registered
    // during that turn of the event loop together right after it, with no promise loop
    // (`immediate`, `coalesce`).
    sendTimeout: 0,
    // No linger until the release sets one: a socket closed any other way (a refused
    // address, the process's own teardown) keeps nothing queued and nothing alive.
    linger: 0,
    heartbeatInterval: config.heartbeatIntervalMillis,
    heartbeatTimeout: config.heartbeatTimeoutMillis,
    // Asks the coordinator's side to drop us too if our heartbeats stop.
    heartbeatTimeToLive: config.heartbeatTimeoutMillis,
    // Twice the soft limit: a reply a little over it fails alone; a monstrous frame is never held.
    maxMessageSize: 2 * config.maxFrameBytes,
    ...curveOptions(config.curve)
  })

/**
 * Observes the DEALER's events, then connects it: ZeroMQ connects in the background, and
 * messages sent before the connection is up are queued. Observed first: on loopback the
 * connection can be up before an observer made afterwards starts, and its events would be lost.
 * An address ZeroMQ refuses fails with `InvalidAddress` (and closes the socket).
 */
const connect = (address: string) => (dealer: Zmq.Dealer, state: LinkState, events: Events): Result.Result<Zmq.Dealer, ClientError> => {
  dealer.events.on("handshake", () => {
    state.up = true
    events.up()
  })
  const connecting = events.connecting
  if (connecting !== undefined) {
    // What the socket saw before the first CONNECT_ACK, for a ConnectTimeout to say.
    let attempted = false
    dealer.events.on("connect", () => connecting("connected"))
    dealer.events.on("connect:delay", () => {
      attempted = true
    })
    dealer.events.on("close", () => {
      if (attempted) connecting("refused")
    })
    dealer.events.on("connect:retry", () => {
      if (!attempted) connecting("unreachable")
    })
  }
  dealer.events.on("disconnect", () => {
    state.dropped()
    events.down()
    // ZeroMQ reconnects by itself after a connection error or a heartbeat timeout, but not
    // after a protocol error (a frame over `maxMessageSize`): a fresh connect covers both.
    if (dealer.closed) return
    dealer.disconnect(address)
    dealer.connect(address)
  })
  try {
    dealer.connect(address)
  } catch (cause) {
    dealer.close()
    const why = cause instanceof Error ? cause.message : String(cause)
    return Result.fail(clientError(new InvalidAddress({ address, why })))
  }
  return Result.succeed(dealer)
}

/**
 * The ZeroMQ transport.
 *
 * @since 0.2.0
 */
export const transport: Service = {
  name: "zeromq",
  addressProblem: addressProblem,
  open: (config: LinkConfig, attach: (link: Link) => Events) =>
    overSocket(() => openDealer(config), connect(config.address), attach, config.closeTimeoutMillis)
}
