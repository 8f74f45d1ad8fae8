/**
 * What the coordinator does with one message: its header read (translated to the reference
 * table's value, so everything after reads the same in every dialect), its envelope decoded
 * through the codec of its direction, and handed on: an engine's registration, reply, partial or
 * acknowledgement, a client's CONNECT, submission, ABORT, RELEASE_KV (broadcast verbatim: the id
 * names the engine-side request, and engines that do not hold it ignore it), control signal or
 * SHUTDOWN. Every message that cannot be handled is dropped and recorded (`CoordinatorState.reject`),
 * never thrown: a message of the reference protocol that the dialect lacks (ABORT_REQUEST on
 * core_v0.19) is dropped as malformed, where Megatron's coordinator of that ref would die of it.
 *
 * @since 0.2.0
 * @internal
 */
import { type Frames, Headers, Messages, type MessageSpec } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import type { AckOutcome, ControlRelay } from "./controlRelay.ts"
import { type CoordinatorState, nameOf } from "./coordinatorState.ts"
import * as DialectWire from "./dialectWire.ts"
import * as ReplyRoute from "./replyRoute.ts"
import * as RequestDispatch from "./requestDispatch.ts"
import { headerOf, identityKey } from "./wireFrames.ts"

const H = Headers.values

/** The headers a codec reads (their reference values), from the declarations. */
const headersOf = (codec: Frames.Codec<ReadonlyArray<MessageSpec.Any>>): ReadonlySet<number> =>
  new Set(codec.specs.filter((spec) => spec.tag !== "Disconnect").map((spec) => spec.header))

const isKnownHeader = (header: unknown): header is Headers.Header =>
  typeof header === "number" && Headers.nameOf(header as Headers.Header) !== undefined

/** @internal */
export class CoordinatorInbox {
  private readonly engineHeaders: ReadonlySet<number>
  private readonly clientHeaders: ReadonlySet<number>

  constructor(
    private readonly s: CoordinatorState,
    private readonly relay: ControlRelay,
    /** The loop ends (SHUTDOWN, or every engine acked STOP), or the coordinator dies at once. */
    private readonly stop: (outcome: Exclude<AckOutcome, "continue">, why: string) => void
  ) {
    this.engineHeaders = headersOf(s.wire.engine)
    this.clientHeaders = headersOf(s.wire.client)
  }

  handle(frames: Array<Buffer>): void {
    const s = this.s
    const identity = frames[0]!
    // `[identity]` alone: our ROUTER says the peer's connection closed, after all it sent (no
    // ZMTP message is that). An engine's goes from the pool at once, and what it held in flight
    // is answered FAILED, as when a send to it fails; libzmq's ROUTER never says whose
    // connection went, so there the next send to it tells.
    if (frames.length === 1) {
      const key = identityKey(identity)
      if (s.pool.has(key)) s.pool.remove(key, "its connection closed")
      return
    }
    const message = frames.slice(1)
    // Megatron's start-up (`coordinator.py:176-179`): the first `data_parallel_size` messages
    // register their senders as engines, whatever they hold: a client's early CONNECT included.
    if (s.registrationsLeft > 0) {
      s.registrationsLeft--
      return RequestDispatch.registerEngine(s, identity)
    }
    // Megatron's engines register by sending one empty frame (a client that did CONNECT cannot
    // turn itself into an engine that way: it would be sent other clients' requests).
    if (Messages.isEngineRegistration(message)) {
      if (s.knownClients.has(identityKey(identity))) return s.reject("malformed", identity, "an empty frame from a client")
      return RequestDispatch.registerEngine(s, identity)
    }
    let header = headerOf(message[0])
    if (header === undefined) return s.reject("malformed", identity, "frame 0 is not a msgpack array starting with a header")
    if (!s.wire.isReference) {
      // The dialect's value, as the reference table numbers the same header.
      const known = DialectWire.toReference(s.wire, header)
      if (typeof known !== "number") return this.lacks(identity, header, known)
      header = known
    }
    if (!isKnownHeader(header)) return s.reject("unknownHeader", identity, `unknown header ${String(header)}`)
    const key = identityKey(identity)
    if (header === H.DISCONNECT) {
      // Megatron: only an engine's DISCONNECT means anything (it leaves the routing pool).
      if (s.pool.has(key)) s.pool.remove(key, "it sent DISCONNECT")
      return
    }
    if (this.engineHeaders.has(header)) return this.fromEngine(identity, key, header, message)
    if (!this.clientHeaders.has(header)) return s.reject("unknownHeader", identity, `${nameOf(header)} is not something a client sends`)
    if (header !== H.CONNECT && !s.knownClients.has(key)) {
      return s.reject("neverConnected", identity, `${nameOf(header)} from a client that never sent CONNECT`)
    }
    const envelope = this.decode(identity, s.wire.client, message)
    if (envelope === undefined) return
    switch (envelope.spec.tag as Messages.ClientMessage["_tag"]) {
      case "Connect":
        return RequestDispatch.connect(s, identity, key)
      case "SubmitRequest":
      case "SubmitRequestWithKv":
        return RequestDispatch.submit(s, identity, key, envelope)
      case "AbortRequest":
        return RequestDispatch.abort(s, identity, key, envelope.metadata.requestId as number)
      case "ReleaseKv":
        // Broadcast verbatim: the id names the engine-side request (the reply's
        // disaggregated_params), and engines that do not hold it ignore it.
        return s.pool.broadcast(header, message[0]!)
      case "StartCudaProfiler":
      case "StopCudaProfiler":
        // Not a state transition: broadcast in any state.
        return s.pool.broadcast(header, message[0]!)
      case "Shutdown":
        return this.stop("end", "SHUTDOWN received; the loop ends (engines are not told)")
      default:
        return this.relay.signal(header, message[0]!)
    }
  }

  /** An engine's reply, partial or (core_v0.16) acknowledgement. */
  private fromEngine(identity: Buffer, key: string, header: number, message: Array<Buffer>): void {
    const s = this.s
    if (!s.pool.known(key)) {
      return s.reject("notFromEngine", identity, `${nameOf(header)} from a peer that never registered as an engine`)
    }
    const envelope = this.decode(identity, s.wire.engine, message)
    if (envelope === undefined) return
    if (envelope.spec.tag === "PauseAck" || envelope.spec.tag === "StopAck") {
      const outcome = this.relay.ack(identity, key, envelope.spec.tag === "PauseAck" ? "pause" : "stop")
      if (outcome === "end") this.stop("end", "every engine acked STOP; the loop ends, as core_v0.16's does")
      else if (outcome === "die") this.stop("die", "a second acknowledgement from one engine")
      return
    }
    const replies = envelope.spec.tag === "EngineReplyBatch"
    if (s.wire.single) return ReplyRoute.engineBatch(s.route, identity, envelope.frames[1]!, replies)
    return replies
      ? ReplyRoute.engineReply(s.route, identity, message, envelope.metadata as ReplyRoute.EngineReplyMetadata)
      : ReplyRoute.enginePartial(s.route, identity, message, envelope.metadata as ReplyRoute.EnginePartialMetadata)
  }

  /**
   * Reads a message's envelope (arity, header, metadata) through the codec of its direction:
   * a wrong frame count is `badArity`, anything else wrong with it `malformed`.
   */
  private decode(
    identity: Uint8Array,
    codec: Frames.Codec<ReadonlyArray<MessageSpec.Any>>,
    message: ReadonlyArray<Buffer>
  ): Frames.Envelope | undefined {
    const envelope = codec.decodeEnvelope(message)
    if (Result.isSuccess(envelope)) return envelope.success
    const reason = envelope.failure.reason
    this.s.reject(reason._tag === "ArityMismatch" ? "badArity" : "malformed", identity, envelope.failure.message)
    return undefined
  }

  /** A header off this dialect's table: one of the reference protocol's it lacks, or none at all. */
  private lacks(identity: Uint8Array, header: number, known: DialectWire.OffTable): void {
    if (known._tag === "unknown") return this.s.reject("unknownHeader", identity, `unknown header ${header}`)
    const { dialect } = this.s.wire
    this.s.reject(
      "malformed",
      identity,
      `header ${header} is not in the ${dialect.name} protocol (${known.name} in the reference protocol): ` +
        `Megatron-LM ${dialect.megatron} has no such message`
    )
  }
}
