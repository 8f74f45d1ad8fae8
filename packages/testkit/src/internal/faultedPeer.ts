/**
 * What the test coordinator and every test engine share around their one socket: the faults a
 * test switches on (`Faults.Switchboard`), the send path through them (`FaultedWriter`), the
 * reading loop that a `Hang` holds, and the listeners told after every message. Each side keeps
 * only what differs: which messages it drops, duplicates or holds back, and what it counts when a
 * handler throws.
 *
 * @since 0.2.0
 * @internal
 */
import { FrameSocket } from "@mcore-effect/protocol"
import * as Faults from "../Faults.ts"
import { FaultedWriter, type Framing } from "./faultedWriter.ts"

/** Messages handled between two yields to the event loop, so timers and other sockets get a turn. */
const YIELD_EVERY = 512

/** What a side does with what its socket delivers, and with what goes wrong there. */
export interface Handlers {
  readonly onMessage: (frames: Array<Buffer>) => void
  /** A handler threw (a bug: the message is dropped, the loop goes on). */
  readonly onHandlerError: (error: unknown) => void
  readonly onReceiveError: (error: unknown) => void
}

/** @internal */
export class FaultedPeer {
  readonly faults = new Faults.Switchboard()
  /** The side's send path through its faults. */
  readonly out: FaultedWriter
  private readonly listeners = new Set<() => void>()

  constructor(writer: FrameSocket.Writer, framing: Framing) {
    this.out = new FaultedWriter(this.faults, writer, framing)
  }

  /** Calls `listener` after every handled message (and engine step) until the returned function is called. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  notify(): void {
    for (const listener of this.listeners) listener()
  }

  /** Switches a fault on (a `Hang` also pauses the writer). */
  inject(fault: Faults.Fault): void {
    this.out.inject(fault)
  }

  /** Switches one kind of fault off, or all; true when no `Hang` is left. */
  clear(tag?: Faults.FaultTag): boolean {
    return this.out.clear(tag)
  }

  /** The side closed: a loop parked on a hang wakes and sees it. */
  closed(): void {
    this.faults.clear("Hang")
  }

  /** Starts the socket's one reader: held while a `Hang` is on, listeners told after each message. */
  read(socket: FrameSocket.Readable, handlers: Handlers): FrameSocket.Reader {
    return FrameSocket.read(socket, {
      // A message read just as a Hang was switched on waits for the hang to end.
      gate: () => (this.faults.hung ? this.faults.whenAnswering() : undefined),
      onMessage: handlers.onMessage,
      onHandlerError: handlers.onHandlerError,
      onReceiveError: handlers.onReceiveError,
      afterMessage: () => this.notify(),
      yieldEvery: YIELD_EVERY
    })
  }
}
