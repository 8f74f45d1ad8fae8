/**
 * The coordinator's socket side: a ZeroMQ ROUTER bound where told, a ROUTER of our own over
 * `node:net` (`ZmtpRouter`), or a ROUTER-like `MemorySocket.Router` on an in-memory network,
 * behind one shape, so that the coordinator's
 * loop (`CoordinatorCore`) serves clients and engines the same way on either. The socket is read
 * and written through `FrameSocket` (structural), and its connections are counted from what it
 * reports (`ConnectionCount`).
 *
 * @since 0.2.0
 * @internal
 */
import { AddressAllowlist, type FrameSocket, type MemorySocket, Zmtp, ZmtpRouter } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import * as Zmq from "zeromq"
import { ConnectionCount } from "./connectionCount.ts"
import * as ZapHandler from "./zapHandler.ts"

/** Whether `key` is a CurveZMQ key as text: 40 characters of Z85 (as `zeromq`'s `curveKeyPair()` makes them). */
export const isZ85Key = (key: unknown): boolean =>
  typeof key === "string" && /^[0-9a-zA-Z.\-:+=^!/*?&<>()[\]{}@%$#]{40}$/.test(key)

/**
 * A bound socket: identity-prefixed messages in and out, its actual address, its connections.
 */
export interface Bound {
  /** `close` settles, when it returns a promise, once nothing of the socket is left open. */
  readonly socket: FrameSocket.Readable & FrameSocket.Writable & { close(): void | Promise<void> }
  /** The bound address (with the actual port for `tcp://...:0`). */
  readonly address: string
  readonly connections: ConnectionCount
}

/** Binds a socket at an address; rejects as the bind fails (`EADDRINUSE` while the address is taken). */
export type Binder = (address: string) => Promise<Bound>

/**
 * Says each address refused by an allowlist once (at most {@link MAX_SAID} addresses: past
 * them, refusals are only counted), so that a peer dialing again every 100 ms (libzmq's
 * reconnect interval) is one line, not ten a second.
 */
const refusalLog = (warn: (message: string) => void) => {
  const said = new Set<string>()
  return (address: string) => {
    if (said.has(address) || said.size > MAX_SAID) return
    said.add(address)
    warn(
      said.size > MAX_SAID
        ? `connections from more than ${MAX_SAID} addresses outside the allowlist were refused; further ones are counted, not logged`
        : `a connection from ${address} was refused: not in the allowlist (said once per address; counted as not-allowed)`
    )
  }
}
const MAX_SAID = 1_000

/** A ZeroMQ ROUTER, with CurveZMQ when a key pair is given, and ZAP asked about each peer with an allowlist. */
export const zeromq = (
  curve: { readonly publicKey: string; readonly secretKey: string } | undefined,
  allow?: AddressAllowlist.AddressAllowlist | undefined,
  warn: (message: string) => void = () => {}
): Binder => async (address) => {
  // Counted and said by the ZAP handler as it refuses.
  const connections = new ConnectionCount()
  const say = refusalLog(warn)
  const zap = allow === undefined ? undefined : await ZapHandler.register(allow, (peer) => {
    connections.refused("not-allowed")
    say(peer)
  })
  const router = new Zmq.Router({
    linger: 0,
    sendHighWaterMark: 0,
    receiveHighWaterMark: 0,
    // Never wait to send (the queues are unbounded anyway): zeromq.js then sends synchronously
    // instead of deferring every few hundred messages to a later event-loop turn.
    sendTimeout: 0,
    // As Megatron: a send to a peer that is gone fails instead of vanishing.
    mandatory: true,
    ...(curve === undefined ? {} : { curveServer: true, curvePublicKey: curve.publicKey, curveSecretKey: curve.secretKey }),
    ...zap?.options
  })
  // Observed before the bind (see `ConnectionCount`).
  router.events.on("accept", () => connections.accepted())
  router.events.on("handshake", () => connections.handshake())
  router.events.on("disconnect", () => connections.disconnected())
  try {
    await router.bind(address)
  } catch (error) {
    router.close()
    zap?.release()
    throw error
  }
  const bound = router.lastEndpoint ?? address
  if (zap === undefined) return { socket: router, address: bound, connections }
  // The ZAP domain is released with the socket.
  const socket = {
    get closed() {
      return router.closed
    },
    receive: () => router.receive(),
    send: (message: Array<Uint8Array>) => router.send(message),
    close: () => {
      router.close()
      zap.release()
    }
  }
  return { socket, address: bound, connections }
}

/**
 * The binder the options ask for: on `network` in memory; else our ROUTER (`zmtp`, the default)
 * or zeromq.js's (`zeromq`, the default with `curve`). Or what is wrong with them: a transport
 * not known, or CurveZMQ asked of ours (it speaks only the NULL mechanism). The one rule of the
 * coordinator package and the testkit's coordinator.
 */
export const binderFor = (
  options: {
    readonly address?: string | undefined
    readonly transport?: unknown
    readonly curve?: { readonly publicKey: string; readonly secretKey: string } | undefined
    readonly network?: MemorySocket.Network | undefined
    readonly allowFrom?: string | ReadonlyArray<string> | undefined
  },
  warn: (message: string) => void
): Result.Result<Binder, { readonly option: string; readonly why: string }> => {
  const transport = options.transport ?? (options.curve === undefined ? "zmtp" : "zeromq")
  if (transport !== "zeromq" && transport !== "zmtp") {
    return Result.fail({ option: "transport", why: `expected zeromq or zmtp, got ${JSON.stringify(transport)}` })
  }
  if (transport === "zmtp" && options.curve !== undefined) {
    return Result.fail({ option: "curve", why: "the zmtp transport speaks only ZMTP's NULL mechanism; use the zeromq transport for CurveZMQ" })
  }
  let allow: AddressAllowlist.AddressAllowlist | undefined
  if (options.allowFrom !== undefined) {
    const parsed = typeof options.allowFrom === "string" || Array.isArray(options.allowFrom)
      ? AddressAllowlist.parse(options.allowFrom)
      : Result.fail("expected CIDR blocks or addresses, as a string (comma-separated) or a list")
    if (Result.isFailure(parsed)) return Result.fail({ option: "allowFrom", why: parsed.failure })
    if (options.network !== undefined) return Result.fail({ option: "allowFrom", why: "an in-memory network has no addresses" })
    const endpoint = options.address === undefined ? undefined : Zmtp.endpointOf(options.address)
    if (endpoint !== undefined && !("host" in endpoint)) {
      return Result.fail({
        option: "allowFrom",
        why: "applies to tcp:// only: an ipc:// socket has no peer address (its file's permissions say who may connect)"
      })
    }
    allow = parsed.success
  }
  if (options.network !== undefined) return Result.succeed(memory(options.network))
  return Result.succeed(transport === "zmtp" ? zmtp(warn, allow) : zeromq(options.curve, allow, warn))
}

/** A `MemorySocket.Router` on `network` (a send to a peer that is gone fails, as with `mandatory`). */
export const memory = (network: MemorySocket.Network): Binder => (address) => {
  try {
    const router = network.bind(address)
    const connections = new ConnectionCount()
    router.onPeer((event) => (event === "up" ? connections.handshake() : connections.disconnected()))
    return Promise.resolve({ socket: router, address: router.address, connections })
  } catch (error) {
    return Promise.reject(error)
  }
}


/**
 * A ROUTER of our own (`ZmtpRouter`: ZMTP 3.1 over `node:net`, no CurveZMQ): a send to a peer
 * that is gone fails with `EHOSTUNREACH`, as the ZeroMQ ROUTER's with `mandatory`; what a peer
 * sends that is not ZMTP closes that connection and is said through `warn`.
 */
export const zmtp = (warn: (message: string) => void, allow?: AddressAllowlist.AddressAllowlist | undefined): Binder => async (address) => {
  const connections = new ConnectionCount()
  const say = refusalLog(warn)
  const socket = await ZmtpRouter.listenFrames(address, {
    connected: () => {
      connections.accepted()
      connections.handshake()
    },
    disconnected: () => connections.disconnected(),
    refused: (why, reason, peer) => {
      connections.refused(reason)
      if (reason === "not-allowed") say(peer ?? "an unknown address")
      else warn(`a connection was closed: ${why}`)
    }
  }, { allow })
  return { socket, address: socket.address, connections }
}
