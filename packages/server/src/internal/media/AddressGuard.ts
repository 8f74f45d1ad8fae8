/**
 * The address guard of remote image fetches: a fetch a client asks for must not reach what only
 * the server can reach (its loopback, the private network, a cloud's metadata service at
 * 169.254.169.254 or fd00:ec2::254). Every address a host name resolves to is checked, in the
 * `lookup` the connection itself uses (so the address checked is the address connected to: a
 * name that resolves to a public address once and to 127.0.0.1 the next time gains nothing),
 * and a host given as an address literal is checked before any connection. One refused address
 * refuses the host.
 *
 * Refused: unspecified, loopback, private (RFC 1918, IPv6 unique local), shared (100.64/10,
 * carrier-grade NAT and Alibaba's metadata), link-local, multicast, reserved and documentation
 * ranges, benchmarking (198.18/15), IPv4-mapped forms of any of them, and the IPv6 transition
 * prefixes that embed an IPv4 address (NAT64, 6to4, Teredo).
 *
 * @since 0.1.0
 */
import * as Dns from "node:dns"
import * as Net from "node:net"

const ipv4: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4]
]

const ipv6: ReadonlyArray<readonly [string, number]> = [
  ["::", 128],
  ["::1", 128],
  ["64:ff9b::", 96],
  ["64:ff9b:1::", 48],
  ["100::", 64],
  ["2001::", 23],
  ["2001:db8::", 32],
  ["2002::", 16],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8]
]

// Node's BlockList also matches IPv4-mapped IPv6 addresses (::ffff:127.0.0.1) against the IPv4 rules.
const blocked = new Net.BlockList()
for (const [network, prefix] of ipv4) blocked.addSubnet(network, prefix, "ipv4")
for (const [network, prefix] of ipv6) blocked.addSubnet(network, prefix, "ipv6")

/**
 * Whether the guard refuses `address` (an IPv4 or IPv6 literal, without brackets); a text that
 * is no address is refused too.
 *
 * @example
 * ```ts
 * import * as AddressGuard from "./AddressGuard.ts"
 *
 * AddressGuard.refuses("169.254.169.254") // true
 * AddressGuard.refuses("::ffff:10.0.0.1") // true
 * AddressGuard.refuses("93.184.215.14") // false
 * ```
 *
 * @since 0.1.0
 */
export const refuses = (address: string): boolean => {
  const family = Net.isIP(address)
  if (family === 0) return true
  return blocked.check(address, family === 4 ? "ipv4" : "ipv6")
}

/**
 * The failure of a connection the guard refused: its message is what the 400 says.
 *
 * @since 0.1.0
 */
export class RefusedAddress extends Error {
  constructor(readonly host: string, readonly address: string) {
    super(
      host === address
        ? `${address} is a loopback, private, link-local or reserved address`
        : `${host} resolves to ${address}, a loopback, private, link-local or reserved address`
    )
  }
}

/**
 * The guard for one server: `exempt` addresses pass (tests serving images on 127.0.0.1).
 *
 * @since 0.1.0
 */
export interface Guard {
  /** Why a host given as an address literal is refused, or `undefined`. */
  readonly literal: (address: string) => RefusedAddress | undefined
  /** A `lookup` for `http.request`: every resolved address checked before any is connected to. */
  readonly lookup: Net.LookupFunction
}

/**
 * A guard letting `exempt` addresses (exactly as written) through.
 *
 * @since 0.1.0
 */
export const make = (exempt: ReadonlySet<string>): Guard => {
  const refused = (address: string) => !exempt.has(address) && refuses(address)
  const lookup = ((hostname: string, options: Dns.LookupOptions, callback: (...args: Array<unknown>) => void) => {
    Dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error !== null) return callback(error)
      const bad = addresses.find((a) => refused(a.address))
      if (bad !== undefined) return callback(new RefusedAddress(hostname, bad.address))
      if (addresses.length === 0) return callback(new Error(`${hostname} resolves to no address`))
      if (options.all === true) return callback(null, addresses)
      return callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }) as unknown as Net.LookupFunction
  return {
    literal: (address) => refused(address) ? new RefusedAddress(address, address) : undefined,
    lookup
  }
}
