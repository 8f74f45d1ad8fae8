/**
 * Who may connect: a list of IP addresses and CIDR blocks (`10.0.0.0/8`, `127.0.0.1`,
 * `fd00::/8`), checked against a connection's peer address before anything of it is read.
 * ZeroMQ's NULL mechanism, the only one Megatron-LM's engines and clients speak, has no
 * authentication; an address allowlist is what a coordinator can do for them (as a ZAP handler
 * does for libzmq).
 *
 * - An IPv4 entry also admits the same address written IPv4-mapped (`::ffff:10.1.2.3`), as a
 *   dual-stack listener reports IPv4 peers.
 * - A bare address is a block of one (`/32`, `/128`); a host name is refused (it would need a
 *   lookup, and its answer could change under a running coordinator).
 * - Only for IP transports: a Unix socket (`ipc://`) has no peer address, and its file's
 *   permissions say who may connect.
 *
 * @example
 * ```ts
 * import { AddressAllowlist } from "@mcore-effect/protocol"
 * import { Result } from "effect"
 *
 * const parsed = AddressAllowlist.parse("127.0.0.1,10.0.0.0/8")
 * if (Result.isSuccess(parsed)) {
 *   AddressAllowlist.admits(parsed.success, "10.2.3.4") // true
 *   AddressAllowlist.admits(parsed.success, "127.0.0.2") // false
 * }
 * AddressAllowlist.parse("10.0.0.0/33") // Result.fail("10.0.0.0/33: ...")
 * ```
 *
 * @since 0.2.0
 */
import * as Result from "effect/Result"
import * as Net from "node:net"

/**
 * A parsed allowlist: its entries as given (for messages) and the blocks they name.
 *
 * @since 0.2.0
 */
export interface AddressAllowlist {
  /** The entries, normalized (`127.0.0.1/32`), in the order given. */
  readonly entries: ReadonlyArray<string>
  readonly blocks: Net.BlockList
}

/**
 * Parses entries separated by commas (or given as a list; blanks around each are ignored): an
 * allowlist, or why an entry is not an address or CIDR block. An empty list is refused: it
 * would admit nobody, which is never what was meant.
 *
 * @since 0.2.0
 */
export const parse = (spec: string | ReadonlyArray<string>): Result.Result<AddressAllowlist, string> => {
  const items = (typeof spec === "string" ? [spec] : spec).flatMap((item) => item.split(",")).map((item) => item.trim())
  if (items.length === 0 || items.every((item) => item === "")) return Result.fail("no address or CIDR block given")
  const blocks = new Net.BlockList()
  const entries: Array<string> = []
  for (const item of items) {
    if (item === "") return Result.fail(`an empty entry in ${JSON.stringify(items.join(","))}`)
    const slash = item.indexOf("/")
    const address = slash === -1 ? item : item.slice(0, slash)
    const family = Net.isIP(address)
    if (family === 0) return Result.fail(`${item}: not an IPv4 or IPv6 address (host names are not taken)`)
    const max = family === 4 ? 32 : 128
    const prefixText = slash === -1 ? String(max) : item.slice(slash + 1)
    const prefix = /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : Number.NaN
    if (!(prefix >= 0 && prefix <= max)) return Result.fail(`${item}: the prefix length should be 0 to ${max}`)
    blocks.addSubnet(address, prefix, family === 4 ? "ipv4" : "ipv6")
    entries.push(`${address}/${prefix}`)
  }
  return Result.succeed({ entries, blocks })
}

/**
 * Whether a peer's address (as `net.Socket.remoteAddress` gives it) is in the allowlist. A peer
 * without one (its socket already closed) is not.
 *
 * @since 0.2.0
 */
export const admits = (allowlist: AddressAllowlist, address: string | undefined): boolean => {
  if (address === undefined) return false
  const family = Net.isIP(address)
  return family !== 0 && allowlist.blocks.check(address, family === 4 ? "ipv4" : "ipv6")
}
