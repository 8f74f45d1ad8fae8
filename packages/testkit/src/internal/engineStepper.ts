/**
 * A test engine's step loop: every step advances each active request by one token (the oldest
 * `maxActiveRequests` of them; the rest wait their turn), then sends the step's partials and its
 * finished requests' replies, batched as the dialect batches them, through the faults (replies
 * dropped or duplicated, partials held back and sent in reverse order). A finished prefill that
 * asked for a KV hand-off pins its KV first (`HandoffPins`, where the dialect has the hand-off);
 * pending KV imports are admitted after the step's requests have stepped (`HandoffImports`), their
 * first token out in the same step.
 *
 * @since 0.2.0
 * @internal
 */
import { type FrameSocket, Msgpack } from "@mcore-effect/protocol"
import { DialectWire } from "@mcore-effect/coordinator/internal"
import { type EngineAdmission, wallClockSeconds } from "./engineAdmission.ts"
import type { EngineRequest } from "./engineRequest.ts"
import type { EngineShared } from "./engineShared.ts"

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** @internal */
export class EngineStepper {
  private readonly replyWriter = new Msgpack.Writer({ initialSize: 4096 })
  private heldPartials: Array<FrameSocket.Message> = []
  private endPause: (() => void) | undefined
  /** The dialect carries KV hand-off: `do_kv_handoff` pins (elsewhere it is a key nobody reads). */
  private readonly handoff: boolean

  constructor(private readonly e: EngineShared, private readonly admission: EngineAdmission) {
    this.handoff = e.config.wire.dialect.features.has("kvHandoff")
  }

  /** Steps while the engine runs: parked while hung, paused or idle, woken by `EngineShared.wake`. */
  async run(): Promise<void> {
    const e = this.e
    const faults = e.peer.faults
    while (e.running) {
      if (faults.hung) {
        await faults.whenAnswering()
        continue
      }
      if (e.state !== "RUNNING" || (e.active.size === 0 && e.imports.pending.size === 0)) {
        await e.idle()
        continue
      }
      try {
        this.step()
      } catch (error) {
        e.config.log("Error", `engine ${e.config.identity}: step failed: ${String(error)}`)
      }
      e.peer.notify()
      await (e.config.stepMs > 0 ? this.pause(e.config.stepMs) : yieldToEventLoop())
    }
  }

  /** Cuts the wait between two steps short (the engine closed). */
  interrupt(): void {
    this.endPause?.()
  }

  /** Sends the held partials in reverse order (reordering was switched off). */
  flushHeldPartials(): void {
    const held = this.heldPartials
    this.heldPartials = []
    for (let i = held.length - 1; i >= 0; i--) this.sendBatch(held[i]!)
  }

  /** Waits between steps; `interrupt` cuts it short, so a long `stepMs` never delays process exit. */
  private pause(millis: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.endPause = undefined
        resolve()
      }, millis)
      this.endPause = () => {
        clearTimeout(timer)
        this.endPause = undefined
        resolve()
      }
    })
  }

  /** Advances every active request by one token; sends this step's partials, then its replies. */
  private step(): void {
    const e = this.e
    const faults = e.peer.faults
    const wire = e.config.wire
    e.steps++
    const now = wallClockSeconds()
    const finished: Array<EngineRequest> = []
    const partials: Array<Record<string, unknown>> = []
    let admitted = 0
    // The releases have no partials: a `streaming` key there is an attribute nobody reads.
    const streams = wire.ENGINE_REPLY_PARTIAL !== undefined
    // A Map iterates in insertion order: the oldest requests step, the rest wait their turn.
    const nowMs = performance.now()
    for (const request of e.active.values()) {
      if (admitted++ >= e.config.maxActiveRequests) break
      // Still prefilling its uncached blocks: no token yet (an abort ends it at once). Just
      // prefilled: its first token is the prefill's, at the time the prefill ended.
      const prefilled = request.aborted || e.prefixCache.prefilled(request.requestId, nowMs)
      if (prefilled === false) continue
      if (request.step(prefilled === true ? now : (performance.timeOrigin + prefilled) / 1000)) finished.push(request)
      else {
        const partial = streams ? request.partial() : null
        if (partial !== null) partials.push(partial)
      }
    }
    if (e.imports.pending.size > 0) {
      const imported = e.imports.admit(now, (request) => this.admission.cache(request.init.blockHashes))
      finished.push(...imported.finished)
      for (const request of imported.admitted) {
        e.active.set(request.requestId, request)
        const partial = streams ? request.partial() : null
        if (partial !== null) partials.push(partial)
      }
    }
    if (e.imports.awaitingOutput) {
      for (const partial of partials) e.imports.produced(partial.request_id as number)
      for (const request of finished) e.imports.produced(request.requestId)
    }
    if (partials.length > 0) this.sendPartials(DialectWire.partialBatch(wire, partials))
    if (finished.length === 0) return
    const entries: Array<[number, boolean]> = []
    const bodies: Array<Uint8Array> = []
    for (const request of finished) {
      e.active.delete(request.requestId)
      e.prefixCache.forget(request.requestId)
      e.completed++
      // Megatron pins an aborted prefill too: ABORT only ends its generation early.
      if (this.handoff && request.samplingParams.do_kv_handoff === true) {
        const refusal = e.pins.pin(request)
        if (refusal !== undefined) return e.die(`request ${request.requestId}: ${refusal}`)
      }
      if (faults.take("DropReplies")) continue
      let body: Uint8Array
      try {
        body = request.encode(now, this.replyWriter)
      } catch (error) {
        // kv_meta holding a value msgpackr decoded into something with no msgpack form.
        e.malformed(`request ${request.requestId}: cannot encode its reply: ${String(error)}`)
        continue
      }
      // core_v0.16: the request in a record of its own.
      if (wire.records) body = DialectWire.asRecord(body)
      const copies = faults.take("DuplicateReplies") ? 2 : 1
      for (let c = 0; c < copies; c++) {
        entries.push([request.requestId, request.needsDetokenize])
        bodies.push(body)
      }
    }
    if (entries.length > 0) this.sendBatch(DialectWire.replyBatch(wire, entries, bodies))
  }

  private sendBatch(message: FrameSocket.Message): void {
    const out = this.e.peer.out
    out.emit(out.prepare(message))
  }

  private sendPartials(message: Array<Uint8Array>): void {
    const faults = this.e.peer.faults
    const window = faults.reorderWindow
    if (window === 0) return this.sendBatch(message)
    this.heldPartials.push(message)
    if (this.heldPartials.length >= window) {
      faults.note("ReorderPartials")
      this.flushHeldPartials()
    }
  }
}
