/**
 * The coordinator addresses the ZeroMQ transport connects to: `tcp://host:port` and `ipc://path`
 * (a DEALER connects; the binding forms are refused before any socket opens).
 */
const hostName = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?$/
const ipv6 = /^\[[0-9A-Fa-f:.]+\]$/

/**
 * What is wrong with a coordinator address, or `undefined` when it is one the client connects
 * to: `tcp://host:port` (a host name, an IPv4 address or a bracketed IPv6 address; a port from 1
 * to 65535) or `ipc://path`. ZeroMQ's other forms are refused: wildcards and interface names
 * (for binding), a source address (`tcp://src;dst`), and other transports.
 *
 * @example
 * ```ts
 * import { ClientConfig } from "@mcore-effect/client"
 *
 * ClientConfig.addressProblem("tcp://127.0.0.1:5555") // undefined
 * ClientConfig.addressProblem("tcp://*:5555") // "the host must be a name or an IP address, got \"*\""
 * ```
 *
 * @since 0.1.0
 */
export const addressProblem = (address: string): string | undefined => {
  if (address.startsWith("ipc://")) {
    const path = address.slice("ipc://".length)
    return path.length === 0 || path === "*" ? "ipc:// needs a path" : undefined
  }
  if (!address.startsWith("tcp://")) return "only tcp://host:port and ipc://path are supported"
  const rest = address.slice("tcp://".length)
  const colon = rest.lastIndexOf(":")
  if (colon < 0) return "tcp:// needs host:port"
  const host = rest.slice(0, colon)
  const port = rest.slice(colon + 1)
  if (!hostName.test(host) && !ipv6.test(host)) return `the host must be a name or an IP address, got ${JSON.stringify(host)}`
  if (!/^[0-9]{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    return `the port must be a number from 1 to 65535, got ${JSON.stringify(port)}`
  }
  return undefined
}
