/**
 * What a test engine does with one message from its coordinator: read through the codec of what
 * the coordinator forwards (the client's messages, re-numbered: arity and metadata from the
 * declarations), recorded, and handed on: a submission or an ABORT to `EngineAdmission`, a
 * RELEASE_KV to the pins, SET_GENERATION_EPOCH stamped on every active request, the profiler
 * flag, a control signal to `engineControl.ts`. Anything undecodable is counted as malformed and
 * dropped.
 *
 * @since 0.2.0
 * @internal
 */
import { Headers, type Messages } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import { DialectWire } from "@mcore-effect/coordinator/internal"
import type { EngineAdmission } from "./engineAdmission.ts"
import * as EngineControl from "./engineControl.ts"
import type { EngineShared } from "./engineShared.ts"
import { headerOf, isRequestId, tryDecode } from "@mcore-effect/coordinator/internal"

const H = Headers.values

/** @internal */
export class EngineInbox {
  constructor(private readonly e: EngineShared, private readonly admission: EngineAdmission) {}

  handle(frames: Array<Buffer>): void {
    const e = this.e
    const wire = e.config.wire
    // core_v0.16: every engine acked; the coordinator says so in the engines' own layout. The
    // engine is paused (or stopped) already: nothing changes here.
    if (wire.PAUSE_ACK !== undefined && frames.length === 1) {
      const header = headerOf(frames[0])
      if (header !== undefined && (header === wire.PAUSE_ACK || header === wire.STOP_ACK)) {
        const acked = wire.engine.decodeEnvelope(frames)
        if (Result.isFailure(acked)) return e.malformed(acked.failure.message)
        this.record(acked.success.spec.header, undefined, frames)
        e.signals.push(acked.success.spec.headerName)
        return
      }
    }
    const decoded = wire.client.decodeEnvelope(frames)
    if (Result.isFailure(decoded)) {
      const values = tryDecode(frames[0])
      const id = Array.isArray(values) && isRequestId(values[1]) ? values[1] : undefined
      const header = headerOf(frames[0])
      const name = wire.isReference ? undefined : DialectWire.nameOf(wire, header)
      this.record(wire.isReference || name === undefined ? header : Headers.values[name], id, frames)
      return e.malformed(decoded.failure.message)
    }
    const envelope = decoded.success
    const header = envelope.spec.header
    const id = envelope.metadata.requestId as number | undefined
    this.record(header, id, frames)
    switch (envelope.spec.tag as Messages.ClientMessage["_tag"]) {
      case "SubmitRequest":
        return this.admission.submit(envelope, null)
      case "SubmitRequestWithKv": {
        const srcBlockIds = wire.client.decodeBody(envelope, "srcBlockIds")
        if (Result.isFailure(srcBlockIds)) return e.malformed(srcBlockIds.failure.message)
        // Metadata in the reference protocol and PR 6497, a body in main.
        const kvMeta = "kvMeta" in envelope.metadata ? Result.succeed(envelope.metadata.kvMeta) : wire.client.decodeBody(envelope, "kvMeta")
        if (Result.isFailure(kvMeta)) return e.malformed(kvMeta.failure.message)
        return this.admission.submit(envelope, {
          kvMeta: kvMeta.success as Readonly<Record<string, unknown>>,
          srcBlockIds: srcBlockIds.success as ReadonlyArray<number>
        })
      }
      case "AbortRequest":
        return this.admission.abort(id)
      case "ReleaseKv":
        // Megatron: "Unknown request ids are no-ops."
        if (!e.pins.release(id!)) e.counters.unknownRelease++
        return
      case "SetGenerationEpoch": {
        const epoch = envelope.metadata.generationEpoch as number
        e.signals.push("SET_GENERATION_EPOCH")
        e.generationEpoch = epoch
        for (const request of e.active.values()) request.stampEpoch(epoch)
        return
      }
      case "StartCudaProfiler":
      case "StopCudaProfiler":
        e.signals.push(Headers.nameOf(header))
        e.profiling = header === H.START_CUDA_PROFILER
        return
      case "Pause":
      case "Unpause":
      case "Suspend":
      case "Resume":
      case "Stop":
        e.signals.push(Headers.nameOf(header))
        return EngineControl.control(e, header)
      default:
        return e.malformed(`unexpected ${envelope.spec.tag}`)
    }
  }

  private record(header: number | undefined, requestId: number | undefined, frames: ReadonlyArray<Uint8Array>): void {
    const e = this.e
    if (e.config.recordLimit <= 0) {
      e.received.total++
      return
    }
    const name = header === undefined ? undefined : Headers.nameOf(header as Headers.Header)
    e.received.add({ header, name, requestId, frames })
  }
}
