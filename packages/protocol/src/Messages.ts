/**
 * Every message of the protocol, declared once, grouped by the direction it travels in. Each
 * group's codec (`Client`, `Coordinator`, `Engine`) is derived from these declarations.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import * as Frames from "./Frames.ts"
import { values as H } from "./Headers.ts"
import { MediaDescriptor, MediaWire } from "./Media.ts"
import * as MessageSpec from "./MessageSpec.ts"
import { Raw } from "./Msgpack.ts"
import { PromptWire } from "./Prompt.ts"
import { PartialReply, ReplyMap } from "./Reply.ts"
import { SamplingParams } from "./SamplingParams.ts"
import { BlockHashList, IntList, KvMeta, RequestId } from "./WireTypes.ts"

const signal = <const Tag extends string>(tag: Tag, header: (typeof H)[keyof typeof H]) =>
  MessageSpec.make(tag, header, { metadata: {}, bodies: {} })

/**
 * Token ids as an integer typed array: sent as a msgpack int array, never as bin.
 *
 * @category schemas
 * @since 0.2.0
 */
export const TypedTokenIds = Schema.declare(
  (u: unknown): u is Int32Array | Uint32Array | Int16Array | Uint16Array | Float64Array =>
    u instanceof Int32Array || u instanceof Uint32Array || u instanceof Int16Array ||
    u instanceof Uint16Array || u instanceof Float64Array
)

/**
 * A body handed over already encoded (the media frame, hashed for its cache key as sent).
 *
 * @category schemas
 * @since 0.2.0
 */
export const RawFrame = Schema.instanceOf(Raw)

/**
 * What a prompt body holds: text, or token ids (decoded as a plain array), or, on the way out,
 * the frame `Prompt.frame` checked and encoded in one pass (what `Submission` builds). Every
 * dialect's prompt is this.
 *
 * @category schemas
 * @since 0.2.0
 */
export const PromptBody = Schema.Union([PromptWire, TypedTokenIds, RawFrame])

// ---------------------------------------------------------------------------------------------
// Client to coordinator (and, re-numbered, coordinator to engine)
// ---------------------------------------------------------------------------------------------

/**
 * `pack([0])`: the handshake; the coordinator answers CONNECT_ACK.
 *
 * @category messages
 * @since 0.1.0
 */
export const Connect = signal("Connect", H.CONNECT)

/**
 * The five-frame submission. Frame 0 is bounded (the coordinator decodes it on every request);
 * the prompt, media and offload params are bodies it forwards without decoding; the block
 * hashes (frame 2) are read for routing only. The count never varies.
 *
 * @category messages
 * @since 0.1.0
 */
export const SubmitRequest = MessageSpec.make("SubmitRequest", H.SUBMIT_REQUEST, {
  metadata: {
    requestId: RequestId,
    samplingParams: SamplingParams,
    mediaDescriptor: Schema.NullOr(MediaDescriptor)
  },
  bodies: {
    prompt: PromptBody,
    /** `null`: this client did not hash (the coordinator will). `[]`: hashed, shorter than a block. */
    blockHashes: Schema.NullOr(BlockHashList),
    media: Schema.NullOr(Schema.Union([MediaWire, RawFrame])),
    offloadParams: Schema.Unknown
  }
})

/**
 * The three-frame KV handoff: a decode request carrying the prefill peer's KV metadata
 * (bounded, in frame 0) and the source block ids (one per block, so a body).
 *
 * @category messages
 * @since 0.1.0
 */
export const SubmitRequestWithKv = MessageSpec.make("SubmitRequestWithKv", H.SUBMIT_REQUEST_WITH_KV, {
  metadata: { requestId: RequestId, samplingParams: SamplingParams, kvMeta: KvMeta },
  bodies: { prompt: PromptBody, srcBlockIds: IntList }
})

/**
 * `pack([23, request_id])`: cancel an in-flight request.
 *
 * @category messages
 * @since 0.1.0
 */
export const AbortRequest = MessageSpec.make("AbortRequest", H.ABORT_REQUEST, {
  metadata: { requestId: RequestId },
  bodies: {}
})

/**
 * `pack([25, request_id])`: release the KV blocks pinned for a handed-off request.
 *
 * @category messages
 * @since 0.1.0
 */
export const ReleaseKv = MessageSpec.make("ReleaseKv", H.RELEASE_KV, {
  metadata: { requestId: RequestId },
  bodies: {}
})

/** @since 0.1.0 */
export const Pause = signal("Pause", H.PAUSE)
/** @since 0.1.0 */
export const Unpause = signal("Unpause", H.UNPAUSE)
/** @since 0.1.0 */
export const Suspend = signal("Suspend", H.SUSPEND)
/** @since 0.1.0 */
export const Resume = signal("Resume", H.RESUME)
/** @since 0.1.0 */
export const Stop = signal("Stop", H.STOP)
/** @since 0.1.0 */
export const StartCudaProfiler = signal("StartCudaProfiler", H.START_CUDA_PROFILER)
/** @since 0.1.0 */
export const StopCudaProfiler = signal("StopCudaProfiler", H.STOP_CUDA_PROFILER)
/** @since 0.1.0 */
export const Disconnect = signal("Disconnect", H.DISCONNECT)
/** @since 0.1.0 */
export const Shutdown = signal("Shutdown", H.SHUTDOWN)

/**
 * `pack([44, generation_epoch])`: stamp in-flight requests with a policy epoch.
 *
 * @category messages
 * @since 0.1.0
 */
export const SetGenerationEpoch = MessageSpec.make("SetGenerationEpoch", H.SET_GENERATION_EPOCH, {
  metadata: { generationEpoch: Schema.Int },
  bodies: {}
})

// ---------------------------------------------------------------------------------------------
// Coordinator to client
// ---------------------------------------------------------------------------------------------

/**
 * `pack([1])`: the coordinator accepted the handshake.
 *
 * @category messages
 * @since 0.1.0
 */
export const ConnectAck = signal("ConnectAck", H.CONNECT_ACK)

/**
 * A finished request: `pack([21, request_id])` and the reply map.
 *
 * @category messages
 * @since 0.1.0
 */
export const EngineReply = MessageSpec.make("EngineReply", H.ENGINE_REPLY, {
  metadata: { requestId: RequestId },
  bodies: { reply: ReplyMap }
})

/**
 * New tokens of a streaming request: `pack([22, request_id])` and `{request_id, new_tokens}`.
 *
 * @category messages
 * @since 0.1.0
 */
export const EngineReplyPartial = MessageSpec.make("EngineReplyPartial", H.ENGINE_REPLY_PARTIAL, {
  metadata: { requestId: RequestId },
  bodies: { partial: PartialReply }
})

// ---------------------------------------------------------------------------------------------
// Engine to coordinator (batched per engine step)
// ---------------------------------------------------------------------------------------------

/**
 * An engine step's finished requests: `pack([21, [[id, needs_detokenize], ...]])`, then one reply
 * frame per entry. The coordinator splits it into one `EngineReply` per client.
 *
 * @category messages
 * @since 0.1.0
 */
export const EngineReplyBatch = MessageSpec.make("EngineReplyBatch", H.ENGINE_REPLY, {
  metadata: { entries: Schema.Array(Schema.Tuple([RequestId, Schema.Boolean])) },
  bodies: { replies: Schema.Array(ReplyMap) },
  variadic: { body: "replies", countedBy: "entries" }
})

/**
 * An engine step's partials: `pack([22, [id, ...]])`, then one partial frame per id.
 *
 * @category messages
 * @since 0.1.0
 */
export const EngineReplyPartialBatch = MessageSpec.make("EngineReplyPartialBatch", H.ENGINE_REPLY_PARTIAL, {
  metadata: { requestIds: Schema.Array(RequestId) },
  bodies: { partials: Schema.Array(PartialReply) },
  variadic: { body: "partials", countedBy: "requestIds" }
})

// ---------------------------------------------------------------------------------------------
// Codecs by direction
// ---------------------------------------------------------------------------------------------

/**
 * The messages that are laid out alike in every dialect (their metadata only, one frame): the
 * request-scoped controls and the signals, in the reference's order. A dialect declares the ones
 * its header table has.
 *
 * @category messages
 * @since 0.2.0
 */
export const controls = [
  AbortRequest,
  ReleaseKv,
  Pause,
  Unpause,
  Suspend,
  Resume,
  Stop,
  StartCudaProfiler,
  StopCudaProfiler,
  SetGenerationEpoch,
  Disconnect,
  Shutdown
] as const

/**
 * What a client sends to the coordinator (and what the coordinator forwards to engines).
 *
 * @category codecs
 * @since 0.1.0
 */
export const Client = Frames.codec([Connect, SubmitRequest, SubmitRequestWithKv, ...controls])

/**
 * @category models
 * @since 0.1.0
 */
export type ClientMessage = MessageSpec.Type<(typeof Client.specs)[number]>

/**
 * What the coordinator sends to a client.
 *
 * @category codecs
 * @since 0.1.0
 */
export const Coordinator = Frames.codec([ConnectAck, EngineReply, EngineReplyPartial])

/**
 * @category models
 * @since 0.1.0
 */
export type CoordinatorMessage = MessageSpec.Type<(typeof Coordinator.specs)[number]>

/**
 * The request id of an ENGINE_REPLY in its usual shape, read from frame 0's bytes: two frames,
 * frame 0 exactly `pack([21, request_id])` with the id a msgpack unsigned integer below 2^32.
 * For such a message {@link Coordinator}'s `decodeEnvelope` gives the same id (what a property
 * checks); for anything else this gives `undefined`, and the message is for the decoder. What a
 * client's listener does per reply, without decoding frame 0 into an array and a record
 * (PERFORMANCE.md#reply-ids-read-from-frame-0s-bytes).
 *
 * @example
 * ```ts
 * import { Messages, Msgpack } from "@mcore-effect/protocol"
 *
 * Messages.engineReplyId([Msgpack.encode([21, 300]), Msgpack.encode({})]) // 300
 * Messages.engineReplyId([Msgpack.encode([22, 300]), Msgpack.encode({})]) // undefined: a partial
 * ```
 *
 * @category routing
 * @since 0.1.0
 */
export const engineReplyId = (frames: Frames.Frames): number | undefined => {
  if (frames.length !== 2) return undefined
  const f = frames[0]
  if (!(f instanceof Uint8Array) || f.length < 3 || f[0] !== 0x92 || f[1] !== H.ENGINE_REPLY) return undefined
  const t = f[2]!
  const n = f.length
  if (t < 0x80) return n === 3 ? t : undefined
  if (t === 0xcc) return n === 4 ? f[3]! : undefined
  if (t === 0xcd) return n === 5 ? (f[3]! << 8) | f[4]! : undefined
  if (t === 0xce) return n === 7 ? f[3]! * 0x1000000 + ((f[4]! << 16) | (f[5]! << 8) | f[6]!) : undefined
  return undefined
}

/**
 * The request id of a one-frame ENGINE_REPLY, `[header, request_id, reply]` (Megatron-LM main's
 * and its releases', `header` the dialect's ENGINE_REPLY value), read from the frame's first
 * bytes as {@link engineReplyId} reads the reference's; `undefined` for anything else, which then
 * goes through the codec. The reply is the rest of the frame (from {@link singleReplyBodyStart}),
 * undecoded: its own decoding refuses anything but one value filling it. Locating it through the
 * codec scans the whole reply (PERFORMANCE.md#reply-ids-read-from-frame-0s-bytes).
 *
 * @example
 * ```ts
 * import { Messages, Msgpack } from "@mcore-effect/protocol"
 *
 * const frame = Msgpack.encode([21, 300, { status: "COMPLETED" }])
 * Messages.singleEngineReplyId([frame], 21) // 300
 * frame.subarray(Messages.singleReplyBodyStart(frame)) // the reply map's bytes
 * ```
 *
 * @category routing
 * @since 0.2.0
 */
export const singleEngineReplyId = (frames: Frames.Frames, header: number): number | undefined => {
  if (frames.length !== 1) return undefined
  const f = frames[0]
  if (!(f instanceof Uint8Array) || f.length < 4 || f[0] !== 0x93 || f[1] !== header) return undefined
  const t = f[2]!
  if (t < 0x80) return t
  if (t === 0xcc) return f.length > 4 ? f[3]! : undefined
  if (t === 0xcd) return f.length > 5 ? (f[3]! << 8) | f[4]! : undefined
  if (t === 0xce) return f.length > 7 ? f[3]! * 0x1000000 + ((f[4]! << 16) | (f[5]! << 8) | f[6]!) : undefined
  return undefined
}

/**
 * Where the reply starts in a frame {@link singleEngineReplyId} read: after the array's byte, the
 * header's and the id's.
 *
 * @category routing
 * @since 0.2.0
 */
export const singleReplyBodyStart = (frame: Uint8Array): number => {
  const t = frame[2]!
  return t < 0x80 ? 3 : t === 0xcc ? 4 : t === 0xcd ? 5 : 7
}

/**
 * How an engine registers: its DEALER (identity `mp-coord-{dp_rank}`) sends one empty frame,
 * which is not msgpack and so is no declared message. The coordinator ranks engines by identity.
 *
 * @category routing
 * @since 0.1.0
 */
export const engineRegistration: Frames.Frames = [new Uint8Array(0)]

/**
 * True for an engine's registration message.
 *
 * @category routing
 * @since 0.1.0
 */
export const isEngineRegistration = (frames: Frames.Frames): boolean =>
  frames.length === 1 && frames[0] instanceof Uint8Array && frames[0].byteLength === 0

/**
 * What an engine sends to the coordinator after registering: batched replies and partials, and
 * DISCONNECT when it exits.
 *
 * @category codecs
 * @since 0.1.0
 */
export const Engine = Frames.codec([EngineReplyBatch, EngineReplyPartialBatch, Disconnect])

/**
 * @category models
 * @since 0.1.0
 */
export type EngineMessage = MessageSpec.Type<(typeof Engine.specs)[number]>
