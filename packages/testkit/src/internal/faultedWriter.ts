/**
 * The send path the test coordinator and the test engines share: their one `FrameSocket.Writer`
 * behind their `Faults.Switchboard`. A `Hang` pauses the writer and clearing it resumes it;
 * garbage and a `SendMessages` fault's messages go out ahead of the message they precede, a
 * wrong arity is one frame too many (single-frame dialects) or too few, and every message waits
 * out a `DelayReplies`. Which messages are dropped, duplicated or held back for reordering stays
 * with each side, since a coordinator's replies and an engine's batches differ there.
 *
 * @since 0.1.0
 * @internal
 */
import type { FrameSocket } from "@mcore-effect/protocol"
import type * as Faults from "../Faults.ts"
import { NIL } from "@mcore-effect/coordinator/internal"

/** How the side's messages are framed. */
export interface Framing {
  /** One frame per message (main, the releases): a wrong arity is then a frame too many. */
  readonly single: boolean
  /**
   * How many leading frames address a message (a ROUTER's peer identity: 1; a DEALER: 0).
   * Garbage and extra messages keep them, so that they reach the same peer.
   */
  readonly addressFrames: number
  /** The message one frame short, for a wrong arity in a multi-frame dialect. */
  readonly short: (message: FrameSocket.Message) => FrameSocket.Message
}

/** @internal */
export class FaultedWriter {
  constructor(
    readonly faults: Faults.Switchboard,
    private readonly writer: FrameSocket.Writer,
    private readonly framing: Framing
  ) {}

  /** Switches a fault on; a `Hang` also pauses the writer. */
  inject(fault: Faults.Fault): void {
    this.faults.inject(fault)
    if (fault._tag === "Hang") this.writer.pause()
  }

  /** Switches one kind of fault off, or all; true when no `Hang` is left (the writer sends again). */
  clear(tag?: Faults.FaultTag): boolean {
    this.faults.clear(tag)
    if (this.faults.hung) return false
    this.writer.resume()
    return true
  }

  /**
   * Sends what the faults put ahead of `message` (garbage, extra messages) and returns `message`
   * as it must go out (with a wrong arity when that fault is on), for the caller to emit or hold.
   */
  prepare(message: FrameSocket.Message): FrameSocket.Message {
    const f = this.faults
    const address = message.slice(0, this.framing.addressFrames)
    if (f.take("SendGarbage")) this.emit([...address, ...f.nextGarbage()])
    for (const extra of f.takeMessages()) this.emit([...address, ...extra])
    if (f.take("SendWrongArity")) return this.framing.single ? [...message, NIL] : this.framing.short(message)
    return message
  }

  /** Sends `message` now, or after the reply delay when one is on. */
  emit(message: FrameSocket.Message): void {
    const delay = this.faults.delayMillis
    if (delay > 0) this.faults.note("DelayReplies")
    this.writer.sendAfter(delay, message)
  }
}
