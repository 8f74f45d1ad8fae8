/**
 * The test coordinator's path towards clients (the coordinator's `Peer.ClientOutbox`), through the faults a test switched on: replies
 * dropped or duplicated, garbage or extra messages sent first, frames cut short, partials held
 * back and sent in reverse order (a request's held partials always leave before its final
 * reply), everything delayed. With no fault on, a message goes straight to the writer.
 *
 * @since 0.1.0
 * @internal
 */
import type { Peer } from "@mcore-effect/coordinator/internal"
import type { FrameSocket } from "@mcore-effect/protocol"
import type { FaultedWriter } from "./faultedWriter.ts"

type Addressee = Peer.Addressee

interface HeldPartial {
  readonly message: FrameSocket.Message
  readonly client: string
  readonly requestId: number
}

/** @internal */
export class FaultedOutbox implements Peer.ClientOutbox {
  private held: Array<HeldPartial> = []

  constructor(private readonly out: FaultedWriter) {}

  /** Sends a final reply or a partial (identity first) for `request`, as the faults say. */
  send(kind: "reply" | "partial", request: Addressee, message: FrameSocket.Message): void {
    const f = this.out.faults
    if (kind === "reply" && f.take("DropReplies")) return
    message = this.out.prepare(message)
    const window = f.reorderWindow
    if (kind === "partial" && window > 0) {
      this.held.push({ message, client: request.clientKey, requestId: request.clientRequestId })
      if (this.held.length >= window) {
        f.note("ReorderPartials")
        this.flushHeld(undefined)
      }
      return
    }
    if (this.held.length > 0) {
      // A request's held partials leave before its final reply (all of them when reordering is off).
      this.flushHeld(window > 0 ? request : undefined)
    }
    this.emit(message)
    if (kind === "reply" && f.take("DuplicateReplies")) this.emit(message)
  }

  /** Sends held partials in reverse order: those of `request`, or all. */
  flushHeld(request: Addressee | undefined): void {
    const matches = (h: HeldPartial) =>
      request === undefined || (h.client === request.clientKey && h.requestId === request.clientRequestId)
    const out = this.held.filter(matches)
    this.held = request === undefined ? [] : this.held.filter((h) => !matches(h))
    for (let i = out.length - 1; i >= 0; i--) this.emit(out[i]!.message)
  }

  /** Forgets the held partials (the coordinator closed). */
  clear(): void {
    this.held = []
  }

  private emit(message: FrameSocket.Message): void {
    this.out.emit(message)
  }
}
