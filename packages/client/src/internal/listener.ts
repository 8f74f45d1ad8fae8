/**
 * The receive side: the link's one reader (see `Link.overSocket`) hands every message the
 * coordinator sends to {@link handle}, which decodes it and finishes the request it names in the
 * registry.
 *
 * Whatever arrives, the loop survives it: a message that is not one of the protocol's is counted
 * and logged and dropped; a reply for an id that is not pending (aborted, timed out, or unknown)
 * is counted and dropped without decoding its body; a reply whose body is not a reply fails only
 * its own request.
 *
 * @since 0.1.0
 * @internal
 */
import { type Dialect, Headers, Messages, Msgpack, MsgpackScan, type ProtocolError, Reply, Values } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import { clientError, MalformedReply, ReplyTooLarge } from "../ClientError.ts"
import type { Recorder } from "../ClientMetrics.ts"
import type { Entry, PendingRequests } from "./pendingRequests.ts"
import { type RawReply, recordRequest } from "../Reply.ts"
import type { Unanswered } from "./unanswered.ts"

const { describeValue, isPlainObject } = Values

/**
 * What the listener reports about the connection's handshake.
 *
 * @since 0.1.0
 */
export interface Handshake {
  /** True until the first CONNECT_ACK: then anything but CONNECT_ACK rejects the handshake. */
  readonly awaitingFirstAck: () => boolean
  /** A message arrived: the coordinator is connected, whatever the socket's events say yet. */
  readonly received: () => void
  readonly acknowledged: () => void
  readonly rejected: (received: string) => void
}

/**
 * Options of {@link make}.
 *
 * @since 0.1.0
 */
export interface Options {
  /** The coordinator's dialect: what its replies look like. */
  readonly dialect: Dialect.Dialect
  readonly pending: PendingRequests
  /** What the coordinator still owes, where the dialect needs it kept (see `Unanswered`). */
  readonly unanswered?: Unanswered | undefined
  readonly metrics: Recorder
  readonly deserialize: boolean
  readonly handshake: Handshake
  /** Frames longer than this are not decoded; a reply or partial over it fails its request. */
  readonly maxFrameBytes: number
  /** Frames whose decoded form is estimated above this are not decoded either. */
  readonly maxDecodedBytes: number
  /** Logs a warning (from outside the fiber runtime). */
  readonly warn: (message: string) => void
}

const tokensOf = (map: Record<string, unknown>): number => {
  // core_v0.16: the reply is a record; its requests merged hold the tokens.
  const reply = recordRequest(map) ?? map
  const length = reply.generated_length
  if (typeof length === "number") return length
  const tokens = reply.generated_tokens
  return Array.isArray(tokens) ? tokens.length : 0
}

const describe = (error: ProtocolError.ProtocolError, frames: ReadonlyArray<Uint8Array>): string =>
  `${error.message} (${frames.length} frame(s))`

/**
 * Reads the body of a reply and finishes its request. The body is only decoded here, for a
 * request that is pending: a late reply costs a map lookup, not a decode.
 */
const finish = (options: Options, entry: Entry, latency: number, body: Uint8Array): void => {
  const { pending } = options
  let map: unknown
  try {
    map = Msgpack.decode(body)
  } catch (cause) {
    map = cause
  }
  if (isPlainObject(map)) {
    // The client's addition, before decoding, so the typed reply carries it too.
    map.latency = latency
    if (!options.deserialize) return pending.complete(entry, map as RawReply, latency, tokensOf(map))
    // A record (core_v0.16) has no typed form: its requests merged are the typed reply.
    const decoded = Reply.decodeReply(recordRequest(map) ?? map)
    if (Result.isSuccess(decoded)) return pending.complete(entry, decoded.success, latency, tokensOf(map))
    return malformedReply(options, entry, decoded.failure.message)
  }
  return malformedReply(
    options,
    entry,
    map instanceof Error ? map.message : `the reply should be a map, got ${describeValue(map)}`
  )
}

const malformedReply = (options: Options, entry: Entry, why: string): void => {
  options.metrics.malformed()
  options.warn(`dropped a malformed reply to request ${entry.requestId}: ${why}`)
  options.pending.fail(entry, clientError(new MalformedReply({ requestId: entry.requestId, why })), "failed")
}

/**
 * How a frame breaks the limits, without decoding it: over `maxFrameBytes`, or (only measured
 * when its length could decode past the limit at all) over `maxDecodedBytes`. Bytes that are not
 * msgpack pass here and are refused by the decoder.
 */
const overLimit = (options: Options, frame: Uint8Array): { readonly measure: "frame" | "decoded"; readonly size: number; readonly limit: number } | undefined => {
  if (frame.byteLength > options.maxFrameBytes) return { measure: "frame", size: frame.byteLength, limit: options.maxFrameBytes }
  const limit = options.maxDecodedBytes
  if (16 + frame.byteLength * MsgpackScan.maxDecodedBytesPerByte <= limit) return undefined
  let size: number
  try {
    size = MsgpackScan.decodedSize(frame, 0, limit)
  } catch {
    return undefined
  }
  return size > limit ? { measure: "decoded", size, limit } : undefined
}

/** Fails a taken request whose reply or partial is over a limit. */
const tooLarge = (options: Options, entry: Entry, over: NonNullable<ReturnType<typeof overLimit>>): void => {
  options.metrics.tooLarge()
  options.warn(`dropped an oversized reply to request ${entry.requestId} (${over.measure} ${over.size} > ${over.limit})`)
  options.pending.fail(entry, clientError(new ReplyTooLarge({ requestId: entry.requestId, ...over })), "failed")
}

/** An ENGINE_REPLY: finishes its request if it is pending. */
const reply = (options: Options, requestId: number, body: Uint8Array): void => {
  const { pending } = options
  // Read while the request is pending: its start time leaves the registry with it.
  const latency = pending.elapsedSeconds(requestId)
  const entry = pending.take(requestId)
  if (entry === undefined) {
    options.unanswered?.done(requestId)
    return options.metrics.unknownRequest()
  }
  const over = overLimit(options, body)
  if (over !== undefined) return tooLarge(options, entry, over)
  return finish(options, entry, latency, body)
}

/**
 * Handles one message from the coordinator. Never throws for anything that arrives.
 *
 * @since 0.1.0
 */
export const handle = (options: Options, frames: ReadonlyArray<Uint8Array>): void => {
  const { handshake, metrics, pending } = options
  handshake.received()
  // The metadata frame is decoded below: it must be within the limits itself. A one-frame
  // message's frame 0 is mostly its body, which is measured on its own below (failing its own
  // request); its header and request id are decoded element by element, not as a whole.
  const coordinator = options.dialect.coordinator
  if (coordinator.framing === "multipart" && frames.length > 0 && overLimit(options, frames[0]!) !== undefined) {
    metrics.malformed()
    if (handshake.awaitingFirstAck()) return handshake.rejected(`an oversized frame of ${frames[0]!.byteLength} bytes`)
    return options.warn(`dropped a message from the coordinator with an oversized frame 0 (${frames[0]!.byteLength} bytes)`)
  }
  // A reply in its usual shape is read from frame 0's first bytes; anything else is decoded.
  if (coordinator.framing === "multipart") {
    const replyId = coordinator.headers === Headers.reference ? Messages.engineReplyId(frames) : undefined
    if (replyId !== undefined) {
      if (handshake.awaitingFirstAck()) return handshake.rejected("EngineReply")
      return reply(options, replyId, frames[1]!)
    }
  } else {
    // A one-frame reply's body is the rest of its frame, located from its first bytes.
    const replyId = Messages.singleEngineReplyId(frames, coordinator.headers.values.ENGINE_REPLY!)
    if (replyId !== undefined) {
      if (handshake.awaitingFirstAck()) return handshake.rejected("EngineReply")
      const frame = frames[0]!
      return reply(options, replyId, frame.subarray(Messages.singleReplyBodyStart(frame)))
    }
  }
  const envelope = coordinator.decodeEnvelope(frames)
  if (Result.isFailure(envelope)) {
    metrics.malformed()
    if (handshake.awaitingFirstAck()) return handshake.rejected(describe(envelope.failure, frames))
    options.warn(`dropped a malformed message from the coordinator: ${describe(envelope.failure, frames)}`)
    return
  }
  const { metadata, spec } = envelope.success
  if (spec.tag === "ConnectAck") return handshake.acknowledged()
  // core_v0.16 relays PAUSE_ACK / STOP_ACK to every client it knows, asked or not: expected,
  // counted, nothing to finish (and, never before CONNECT_ACK, nothing the handshake judges).
  if (spec.tag === "PauseAck" || spec.tag === "StopAck") return metrics.acknowledged(spec.tag === "PauseAck" ? "pause" : "stop")
  if (handshake.awaitingFirstAck()) return handshake.rejected(spec.tag)
  const requestId = metadata.requestId as number
  // The body by its frame index: a frame of its own, or its bytes inside a single frame.
  const body = envelope.success.frames[1]!
  if (spec.tag === "EngineReply") return reply(options, requestId, body)
  // EngineReplyPartial
  const entry = pending.get(requestId)
  if (entry === undefined) return metrics.unknownRequest()
  const over = overLimit(options, body)
  if (over !== undefined) return tooLarge(options, pending.take(requestId)!, over)
  const partial = coordinator.decodeBody(envelope.success, "partial")
  if (Result.isFailure(partial)) {
    metrics.malformed()
    options.warn(`dropped a malformed partial of request ${requestId}: ${partial.failure.message}`)
    return
  }
  const received = partial.success as Reply.PartialReply
  pending.partial(entry, received.new_tokens, received.new_log_probs)
}
