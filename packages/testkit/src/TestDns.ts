/**
 * A DNS server for tests: UDP on 127.0.0.1 (port 0), answering `A` and `AAAA` questions for the
 * names of a zone the test changes as it goes, `NXDOMAIN` for any other name (and no answer of a
 * family a name has none of). What a resolver pointed at it (`dns.Resolver#setServers`) sees is
 * what it would see of a real zone: a Kubernetes headless Service's records, say.
 *
 * @example
 * ```ts
 * import { TestDns } from "@mcore-effect/testkit"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const dns = yield* TestDns.make({ "coordinators.test": ["127.0.0.1", "::1"] })
 *   dns.set("coordinators.test", ["127.0.0.2"])
 *   return dns.server // "127.0.0.1:PORT", for `Resolver#setServers`
 * }).pipe(Effect.scoped)
 * ```
 *
 * @since 0.2.0
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Dgram from "node:dgram"
import * as Net from "node:net"

/**
 * A running test DNS server.
 *
 * @category models
 * @since 0.2.0
 */
export interface Handle {
  /** `127.0.0.1:PORT`: what `Resolver#setServers` takes. */
  readonly server: string
  /** Sets a name's addresses (IPv4 and IPv6 mixed); an empty list answers no address. */
  readonly set: (name: string, addresses: ReadonlyArray<string>) => void
  /** Removes a name: it is `NXDOMAIN` from now on. */
  readonly remove: (name: string) => void
  /** Questions answered so far. */
  readonly questions: () => number
}

const A = 1
const AAAA = 28

/** The question of a query: its name (lower-cased, no trailing dot), type, and where it ends. */
const question = (query: Buffer): { readonly name: string; readonly type: number; readonly end: number } | undefined => {
  let at = 12
  const labels: Array<string> = []
  while (at < query.length) {
    const length = query[at]!
    if (length === 0) break
    if (length > 63 || at + 1 + length > query.length) return undefined
    labels.push(query.subarray(at + 1, at + 1 + length).toString("latin1").toLowerCase())
    at += 1 + length
  }
  if (at + 5 > query.length) return undefined
  return { name: labels.join("."), type: query.readUInt16BE(at + 1), end: at + 5 }
}

/** The bytes of an address of `type`. */
const addressBytes = (address: string, type: number): Buffer => {
  if (type === A) return Buffer.from(address.split(".").map(Number))
  // Expand `::` and read eight groups.
  const [head, tail] = address.includes("::") ? address.split("::") : [address, undefined]
  const left = head === "" ? [] : head!.split(":")
  const right = tail === undefined || tail === "" ? [] : tail.split(":")
  const groups = [...left, ...new Array(8 - left.length - right.length).fill("0"), ...right]
  const bytes = Buffer.alloc(16)
  groups.forEach((g, i) => bytes.writeUInt16BE(parseInt(g, 16), 2 * i))
  return bytes
}

/** The answer to `query` from `zone`. */
const answer = (query: Buffer, zone: ReadonlyMap<string, ReadonlyArray<string>>): Buffer | undefined => {
  if (query.length < 12) return undefined
  const q = question(query)
  if (q === undefined) return undefined
  const addresses = zone.get(q.name)
  const family = q.type === A ? 4 : q.type === AAAA ? 6 : 0
  const matching = addresses === undefined ? [] : addresses.filter((a) => Net.isIP(a) === family)
  const header = Buffer.alloc(12)
  query.copy(header, 0, 0, 2) // the id
  // QR, the opcode and RD as asked, RA; NXDOMAIN (3) for a name the zone does not have.
  header.writeUInt16BE(0x8000 | (query.readUInt16BE(2) & 0x7900) | 0x0080 | (addresses === undefined ? 3 : 0), 2)
  header.writeUInt16BE(1, 4)
  header.writeUInt16BE(matching.length, 6)
  const records = matching.map((address) => {
    const data = addressBytes(address, q.type)
    const record = Buffer.alloc(12)
    record.writeUInt16BE(0xc00c, 0) // the name: a pointer to the question's
    record.writeUInt16BE(q.type, 2)
    record.writeUInt16BE(1, 4) // IN
    record.writeUInt32BE(0, 6) // TTL 0: every question asks again
    record.writeUInt16BE(data.length, 10)
    return Buffer.concat([record, data])
  })
  return Buffer.concat([header, query.subarray(12, q.end), ...records])
}

/**
 * Starts a test DNS server with `zone` (names to addresses); it stops when the scope closes.
 *
 * @category constructors
 * @since 0.2.0
 */
export const make = (zone: Readonly<Record<string, ReadonlyArray<string>>> = {}): Effect.Effect<Handle, never, Scope.Scope> =>
  Effect.gen(function*() {
    const names = new Map<string, ReadonlyArray<string>>(Object.entries(zone).map(([n, a]) => [n.toLowerCase(), a]))
    let questions = 0
    const socket = yield* Effect.acquireRelease(
      Effect.callback<Dgram.Socket>((resume) => {
        const socket = Dgram.createSocket("udp4")
        socket.on("message", (query, peer) => {
          const reply = answer(query, names)
          if (reply === undefined) return
          questions++
          socket.send(reply, peer.port, peer.address)
        })
        socket.bind(0, "127.0.0.1", () => resume(Effect.succeed(socket)))
      }),
      (socket) =>
        Effect.callback<void>((resume) => {
          socket.close(() => resume(Effect.void))
        })
    )
    return {
      server: `127.0.0.1:${socket.address().port}`,
      set: (name, addresses) => void names.set(name.toLowerCase(), [...addresses]),
      remove: (name) => void names.delete(name.toLowerCase()),
      questions: () => questions
    }
  })
