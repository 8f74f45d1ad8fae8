/**
 * The in-memory transport: a `MemorySocket.Dealer` on a `MemorySocket.Network`, whose other side
 * is a `MemorySocket.Router` that the testkit's coordinator serves on. The client above it is the
 * same (writer, reader, registry, state, handshake, flush on close); only the socket differs. For
 * tests about the client's logic, and for peers living in one process; tests about the wire keep
 * ZeroMQ on loopback.
 *
 * Its connection events are the dealer's (`onLink`): up when a router is bound at the address (at
 * once, or when one is bound later, and again after a router went away and another was bound),
 * down when the router closes. Nothing is refused and nothing lingers: a send is delivered as it
 * is made, so the flush on close has nothing to wait for while connected.
 *
 * @since 0.2.0
 * @internal
 */
import { MemorySocket } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import type { ClientError } from "../ClientError.ts"
import { type Events, type Link, type LinkConfig, type LinkState, overSocket, type Service } from "./link.ts"

const observe = (dealer: MemorySocket.Dealer, state: LinkState, events: Events): Result.Result<MemorySocket.Dealer, ClientError> => {
  dealer.onLink((event) => {
    if (event === "up") {
      state.up = true
      return events.up()
    }
    state.dropped()
    events.down()
  })
  // Already connected when a router is bound: its "up" comes in a later turn, as ZeroMQ's does.
  return Result.succeed(dealer)
}

/**
 * A transport over `network`: each link is a new dealer connecting to the address.
 *
 * @since 0.2.0
 */
export const transport = (network: MemorySocket.Network): Service => ({
  name: "memory",
  addressProblem: (address) => address.length === 0 ? "the address is empty" : undefined,
  open: (config: LinkConfig, attach: (link: Link) => Events) =>
    overSocket(() => network.connect(config.address), observe, attach, config.closeTimeoutMillis)
})
