/**
 * The coordinator's core with a test's faults on its way to clients and on its reader: the
 * coordinator package's `CoordinatorCore`, given a `Peer` made of the testkit's `FaultedPeer`
 * (the switchboard, the gated reader, the listeners, shared with the test engines) and
 * `FaultedOutbox` (replies dropped, duplicated, reordered, delayed). `TestCoordinator` wraps it.
 *
 * @since 0.2.0
 * @internal
 */
import { type CoordinatorConfig, CoordinatorCore, type CoordinatorSocket, type Peer } from "@mcore-effect/coordinator/internal"
import type * as Faults from "../Faults.ts"
import { FaultedOutbox } from "./faultedOutbox.ts"
import { FaultedPeer } from "./faultedPeer.ts"

/** @internal */
export class FaultedCoordinator {
  private constructor(
    readonly core: CoordinatorCore,
    private readonly peer: FaultedPeer,
    private readonly outbox: FaultedOutbox
  ) {}

  /** Binds and starts the core (see `CoordinatorCore.start`) with the faults in its peer. */
  static async start(
    address: string,
    config: CoordinatorConfig,
    firstRequestId: number,
    bind: CoordinatorSocket.Binder
  ): Promise<FaultedCoordinator> {
    let made: { readonly peer: FaultedPeer; readonly outbox: FaultedOutbox } | undefined
    const makePeer: Peer.MakePeer = (writer) => {
      const peer = new FaultedPeer(writer, {
        single: config.wire.single,
        addressFrames: 1,
        // Identity, header and payload: the payload goes.
        short: (message) => message.slice(0, 2)
      })
      const outbox = new FaultedOutbox(peer.out)
      made = { peer, outbox }
      return {
        toClients: outbox,
        read: (socket, handlers) => peer.read(socket, handlers),
        onChange: (listener) => peer.onChange(listener),
        notify: () => peer.notify(),
        closed: () => peer.closed()
      }
    }
    const core = await CoordinatorCore.start(address, config, firstRequestId, bind, makePeer)
    return new FaultedCoordinator(core, made!.peer, made!.outbox)
  }

  get faults(): Faults.Switchboard {
    return this.peer.faults
  }

  injectFault(fault: Faults.Fault): void {
    this.peer.inject(fault)
  }

  clearFaults(tag?: Faults.FaultTag): void {
    this.peer.clear(tag)
    if (this.peer.faults.reorderWindow === 0) this.outbox.flushHeld(undefined)
  }
}
