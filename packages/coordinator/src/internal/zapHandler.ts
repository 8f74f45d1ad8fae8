/**
 * An address allowlist for zeromq.js's ROUTER, through ZAP (RFC 27), ZeroMQ's standard way: libzmq
 * asks the handler bound at `inproc://zeromq.zap.01` of the socket's context about each new
 * connection during its handshake, before any message of it is read, and closes it when the
 * answer is not 200.
 *
 * There is one handler per context, and zeromq.js's sockets share one: so one handler per
 * process, bound while any allowlisted ROUTER is open, and each of those ROUTERs is a ZAP domain
 * of its own. The ROUTER also sets `zapEnforceDomain`: when the handler cannot be reached, libzmq
 * then refuses the connection instead of letting it in unchecked.
 *
 * @since 0.2.0
 * @internal
 */
import { AddressAllowlist } from "@mcore-effect/protocol"
import * as Zmq from "zeromq"

/** The endpoint libzmq asks (RFC 27). */
const ZAP_ENDPOINT = "inproc://zeromq.zap.01"

/** What one allowlisted ROUTER asks of the handler. */
interface Domain {
  readonly allow: AddressAllowlist.AddressAllowlist
  /** A connection from `address` was refused. */
  readonly refused: (address: string) => void
}

const domains = new Map<string, Domain>()
/** The handler, bound (or being bound) while any domain is registered. */
let handler: Promise<Zmq.Router> | undefined
let nextDomain = 0

/** Answers ZAP requests until the handler is closed. */
const serve = async (socket: Zmq.Router): Promise<void> => {
  const text = (frame: Buffer | undefined) => frame?.toString("utf8") ?? ""
  for await (const frames of socket) {
    // [routing id, empty delimiter, version, request id, domain, address, identity, mechanism, ...]
    const [routing, , version, requestId, domainFrame, addressFrame] = frames
    if (routing === undefined || text(version) !== "1.0") continue
    const address = text(addressFrame)
    const domain = domains.get(text(domainFrame))
    const admitted = domain !== undefined && AddressAllowlist.admits(domain.allow, address)
    if (!admitted) domain?.refused(address)
    await socket.send([
      routing,
      Buffer.alloc(0),
      "1.0",
      requestId ?? Buffer.alloc(0),
      admitted ? "200" : "400",
      admitted ? "OK" : "address not allowed",
      "",
      Buffer.alloc(0)
    ])
  }
}

/**
 * A ZAP domain for one ROUTER, the handler bound if it was not: the socket options that make the
 * ROUTER ask it, and `release` (once the ROUTER is closed; the last one closes the handler).
 */
export const register = async (
  allow: AddressAllowlist.AddressAllowlist,
  refused: (address: string) => void
): Promise<{ readonly options: { readonly zapDomain: string; readonly zapEnforceDomain: true }; readonly release: () => void }> => {
  const name = `mcore-coordinator-${nextDomain++}`
  domains.set(name, { allow, refused })
  let released = false
  const release = () => {
    if (released) return
    released = true
    domains.delete(name)
    if (domains.size === 0 && handler !== undefined) {
      const closing = handler
      handler = undefined
      closing.then((socket) => socket.close(), () => {})
    }
  }
  handler ??= (async () => {
    const socket = new Zmq.Router({ linger: 0 })
    await socket.bind(ZAP_ENDPOINT)
    // The loop ends as the socket is closed (its pending receive rejects): nothing to do then.
    serve(socket).catch(() => {})
    return socket
  })()
  try {
    await handler
  } catch (error) {
    release()
    throw error
  }
  return { options: { zapDomain: name, zapEnforceDomain: true }, release }
}
