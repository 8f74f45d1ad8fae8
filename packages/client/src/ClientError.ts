/**
 * The one error type of the client. Callers match on `reason._tag`; each reason is a small
 * tagged class that says exactly what went wrong, and `message` is derived from it.
 *
 * @since 0.1.0
 */
import { ProtocolError } from "@mcore-effect/protocol"
import * as Schema from "effect/Schema"

/**
 * What the socket saw while the client waited for CONNECT_ACK, from its events: `connected`
 * (a connection was made, but nothing answered CONNECT: not a coordinator, or a CurveZMQ key it
 * refused), `refused` (the address refuses connections; ZeroMQ keeps retrying), `unreachable`
 * (no connection could be attempted, as when the host name does not resolve; ZeroMQ keeps
 * retrying), or `nothing` (no attempt finished in time).
 *
 * @since 0.1.0
 * @category models
 */
export const ConnectSeen = Schema.Literals(["connected", "refused", "unreachable", "nothing"])

/**
 * @since 0.1.0
 * @category models
 */
export type ConnectSeen = typeof ConnectSeen.Type

const seenText: Record<ConnectSeen, string> = {
  connected: "connected, but nothing answered CONNECT (not a coordinator, one that refused our CurveZMQ key, or one starting up that took it for an engine's registration)",
  refused: "the connection was refused (ZeroMQ keeps retrying)",
  unreachable: "no connection could be attempted: does the host name resolve? (ZeroMQ keeps retrying)",
  nothing: "no connection attempt finished"
}

/**
 * No CONNECT_ACK arrived within the configured connect timeout (or within `ackTimeout` of the
 * connection coming up: `timeoutMillis` is then that one); `seen` says what the socket saw
 * meanwhile.
 *
 * @since 0.1.0
 * @category errors
 */
export class ConnectTimeout extends Schema.Class<ConnectTimeout>("@mcore-effect/client/ConnectTimeout")({
  _tag: Schema.tag("ConnectTimeout"),
  address: Schema.String,
  timeoutMillis: Schema.Number,
  seen: ConnectSeen
}) {
  get message(): string {
    return `no CONNECT_ACK from ${this.address} within ${this.timeoutMillis} ms: ${seenText[this.seen]}`
  }
}

/**
 * The coordinator answered the CONNECT with something other than CONNECT_ACK.
 *
 * @since 0.1.0
 * @category errors
 */
export class HandshakeRejected extends Schema.Class<HandshakeRejected>("@mcore-effect/client/HandshakeRejected")({
  _tag: Schema.tag("HandshakeRejected"),
  address: Schema.String,
  /** What arrived instead, as far as it could be read. */
  received: Schema.String
}) {
  get message(): string {
    return `${this.address} answered CONNECT with ${this.received} instead of CONNECT_ACK`
  }
}

/**
 * The client's scope closed while the request was pending, or an operation was called after it.
 *
 * @since 0.1.0
 * @category errors
 */
export class ClientClosed extends Schema.Class<ClientClosed>("@mcore-effect/client/ClientClosed")({
  _tag: Schema.tag("ClientClosed")
}) {
  get message(): string {
    return "the inference client is closed"
  }
}

/**
 * The connection to the coordinator dropped (closed by the peer, or no heartbeat within the
 * heartbeat timeout). Requests in flight on it cannot be answered any more; new ones fail with this
 * until the coordinator is back and has acknowledged a new CONNECT.
 *
 * @since 0.1.0
 * @category errors
 */
export class CoordinatorLost extends Schema.Class<CoordinatorLost>("@mcore-effect/client/CoordinatorLost")({
  _tag: Schema.tag("CoordinatorLost"),
  address: Schema.String
}) {
  get message(): string {
    return `lost the connection to the coordinator at ${this.address}`
  }
}

/**
 * The request was aborted with `abort(requestId)` while something was waiting for it.
 *
 * @since 0.1.0
 * @category errors
 */
export class RequestAborted extends Schema.Class<RequestAborted>("@mcore-effect/client/RequestAborted")({
  _tag: Schema.tag("RequestAborted"),
  requestId: Schema.Number
}) {
  get message(): string {
    return `request ${this.requestId} was aborted`
  }
}

/**
 * The request's deadline passed; it was aborted on the coordinator.
 *
 * @since 0.1.0
 * @category errors
 */
export class RequestTimeout extends Schema.Class<RequestTimeout>("@mcore-effect/client/RequestTimeout")({
  _tag: Schema.tag("RequestTimeout"),
  requestId: Schema.Number,
  timeoutMillis: Schema.Number
}) {
  get message(): string {
    return `request ${this.requestId} did not finish within ${this.timeoutMillis} ms (aborted)`
  }
}

/**
 * The request was refused before anything was sent: a bad prompt, bad sampling parameters (a
 * key that is not a `SamplingParams` field is an `UnknownSamplingParam` naming the field it
 * resembles; engine extras go in `extra`), unsupported media, or offload params with no msgpack
 * form. `error.reason` says which.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidRequest extends Schema.Class<InvalidRequest>("@mcore-effect/client/InvalidRequest")({
  _tag: Schema.tag("InvalidRequest"),
  error: ProtocolError.ProtocolError
}) {
  get message(): string {
    return this.error.message
  }
}

/**
 * The coordinator's reply to this request could not be read (its body is not a reply map, or a
 * known field has the wrong type with `deserialize` on). The request cannot finish otherwise.
 *
 * @since 0.1.0
 * @category errors
 */
export class MalformedReply extends Schema.Class<MalformedReply>("@mcore-effect/client/MalformedReply")({
  _tag: Schema.tag("MalformedReply"),
  requestId: Schema.Number,
  why: Schema.String
}) {
  get message(): string {
    return `the reply to request ${this.requestId} is malformed: ${this.why}`
  }
}

/**
 * An argument that is not what the operation takes (a request id that is not a non-negative
 * integer, a generation epoch that is not an integer, a negative timeout).
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidArgument extends Schema.Class<InvalidArgument>("@mcore-effect/client/InvalidArgument")({
  _tag: Schema.tag("InvalidArgument"),
  name: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `invalid ${this.name}: ${this.why}`
  }
}

/**
 * The coordinator's address is not `tcp://host:port` or `ipc://path`, or ZeroMQ refused it.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidAddress extends Schema.Class<InvalidAddress>("@mcore-effect/client/InvalidAddress")({
  _tag: Schema.tag("InvalidAddress"),
  address: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `cannot connect to ${JSON.stringify(this.address)}: ${this.why}`
  }
}

/**
 * A reply or partial longer than the client's `maxFrameBytes` (`measure: "frame"`), or whose
 * decoded form would take more than its `maxDecodedBytes` (`measure: "decoded"`, `size` an
 * estimate, measured no further than the limit). It was not decoded; only its request fails.
 *
 * @since 0.1.0
 * @category errors
 */
export class ReplyTooLarge extends Schema.Class<ReplyTooLarge>("@mcore-effect/client/ReplyTooLarge")({
  _tag: Schema.tag("ReplyTooLarge"),
  requestId: Schema.Number,
  measure: Schema.Literals(["frame", "decoded"]),
  size: Schema.Number,
  limit: Schema.Number
}) {
  get message(): string {
    return this.measure === "frame"
      ? `the reply to request ${this.requestId} is ${this.size} bytes, over the limit of ${this.limit}`
      : `the reply to request ${this.requestId} would decode to more than ${this.limit} bytes`
  }
}

/**
 * ZeroMQ refused to queue a message (the socket failed under us).
 *
 * @since 0.1.0
 * @category errors
 */
export class SendFailed extends Schema.Class<SendFailed>("@mcore-effect/client/SendFailed")({
  _tag: Schema.tag("SendFailed"),
  /** The request whose message failed (a failed signal or abort fails nothing: it is logged). */
  requestId: Schema.Number,
  cause: Schema.Defect()
}) {
  get message(): string {
    const why = this.cause instanceof globalThis.Error ? this.cause.message : String(this.cause)
    return `sending request ${this.requestId} failed: ${why}`
  }
}

/**
 * An act about something a request left on the coordinator (a KV pin's release) refused, nothing
 * sent: the coordinator connection it belonged to is gone. The coordinator may have restarted,
 * numbering its requests from 0 again, so the same id now names another request's blocks.
 *
 * @since 0.2.0
 */
export class StaleConnection extends Schema.Class<StaleConnection>("@mcore-effect/client/StaleConnection")({
  _tag: Schema.tag("StaleConnection"),
  address: Schema.String,
  /** The connection the pin belongs to (see `Started.connection`). */
  connection: Schema.Number,
  /** The connection now (0: none yet). */
  current: Schema.Number
}) {
  get message(): string {
    return `connection ${this.connection} to ${this.address} is gone (now ${this.current}): what it left there died with it`
  }
}

/**
 * A disaggregated request's prefill did not end with a pin to hand off: the prefill engine
 * answered with a failed request (`why` says what it reported).
 *
 * @since 0.2.0
 */
export class PrefillRefused extends Schema.Class<PrefillRefused>("@mcore-effect/client/PrefillRefused")({
  _tag: Schema.tag("PrefillRefused"),
  address: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `the prefill coordinator at ${this.address} refused the request: ${this.why}`
  }
}

/**
 * A disaggregated request's prefill reply carried no hand-off (`disaggregated_params` absent or
 * null): the prefill engine does not do KV hand-off, or pinned nothing. `requestId` is the
 * prefill client's id for the request.
 *
 * @since 0.2.0
 */
export class HandoffMetadataMissing extends Schema.Class<HandoffMetadataMissing>(
  "@mcore-effect/client/HandoffMetadataMissing"
)({
  _tag: Schema.tag("HandoffMetadataMissing"),
  address: Schema.String,
  requestId: Schema.Number
}) {
  get message(): string {
    return `the prefill reply to request ${this.requestId} from ${this.address} has no disaggregated_params`
  }
}

/**
 * A disaggregated request's prefill reply carried a hand-off the decode cannot take
 * (`disaggregated_params` whose `request_id`, `block_ids` or `kv_meta.resume_tokens` is not what
 * Megatron's engines write). Its pin, when its id could be read, was released at once.
 *
 * @since 0.2.0
 */
export class HandoffMetadataMalformed extends Schema.Class<HandoffMetadataMalformed>(
  "@mcore-effect/client/HandoffMetadataMalformed"
)({
  _tag: Schema.tag("HandoffMetadataMalformed"),
  address: Schema.String,
  requestId: Schema.Number,
  why: Schema.String
}) {
  get message(): string {
    return `the prefill reply to request ${this.requestId} from ${this.address} has malformed disaggregated_params: ${this.why}`
  }
}

/**
 * A disaggregated request's decode could not be submitted (the decode client refused it or is
 * not connected); nothing was sent to the decode coordinator, and the prefill's pin was released
 * at once.
 *
 * @since 0.2.0
 */
export class DecodeRefused extends Schema.Class<DecodeRefused>("@mcore-effect/client/DecodeRefused")({
  _tag: Schema.tag("DecodeRefused"),
  address: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `the decode coordinator at ${this.address} could not take the hand-off: ${this.why}`
  }
}

/**
 * The request was answered `FAILED`: by its engine (Megatron's `_handle_failed_request`), or by
 * the coordinator (its engine was lost, it could not be routed, it was aborted before an engine
 * took it). `why` is what the reply's `FAIL` event says, when it says. Raised by readers of the
 * reply's text (the text layer), not by `submit`, which hands the reply over as it came.
 *
 * @since 0.2.0
 */
export class RequestFailed extends Schema.Class<RequestFailed>("@mcore-effect/client/RequestFailed")({
  _tag: Schema.tag("RequestFailed"),
  requestId: Schema.Number,
  why: Schema.String
}) {
  get message(): string {
    return `request ${this.requestId} failed: ${this.why}`
  }
}

/**
 * A fleet's coordinators could not be read from where they come from (`Membership`): the file is
 * unreadable, malformed or lists none; the DNS name does not resolve or has no address. At the
 * start only: later, the last good set is kept and the problem logged.
 *
 * @since 0.2.0
 */
export class MembershipUnavailable extends Schema.Class<MembershipUnavailable>("@mcore-effect/client/MembershipUnavailable")({
  _tag: Schema.tag("MembershipUnavailable"),
  source: Schema.String,
  why: Schema.String
}) {
  get message(): string {
    return `no coordinators from ${this.source}: ${this.why}`
  }
}

/**
 * Every reason a client operation can fail.
 *
 * @since 0.1.0
 * @category errors
 */
export const ClientErrorReason = Schema.Union([
  ConnectTimeout,
  HandshakeRejected,
  ClientClosed,
  CoordinatorLost,
  RequestAborted,
  RequestTimeout,
  InvalidRequest,
  InvalidArgument,
  InvalidAddress,
  MalformedReply,
  RequestFailed,
  ReplyTooLarge,
  SendFailed,
  StaleConnection,
  PrefillRefused,
  HandoffMetadataMissing,
  HandoffMetadataMalformed,
  DecodeRefused,
  MembershipUnavailable
])

/**
 * @since 0.1.0
 * @category errors
 */
export type ClientErrorReason = typeof ClientErrorReason.Type

/**
 * A failure of an `InferenceClient` operation. Match on `reason._tag`.
 *
 * @example
 * ```ts
 * import { ClientError, InferenceClient } from "@mcore-effect/client"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* InferenceClient.InferenceClient
 *   return yield* client.submit("Hello")
 * }).pipe(
 *   Effect.catchReason("ClientError", "CoordinatorLost", (lost) => Effect.succeed(lost.message))
 * )
 * ```
 *
 * @since 0.1.0
 * @category errors
 */
export class ClientError extends Schema.TaggedError<ClientError>("@mcore-effect/client/ClientError")(
  "ClientError",
  { reason: ClientErrorReason }
) {
  override get message(): string {
    return `${this.reason._tag}: ${this.reason.message}`
  }
}

/**
 * Wraps a reason in a {@link ClientError}.
 *
 * @since 0.1.0
 * @category constructors
 */
export const clientError = (reason: ClientErrorReason): ClientError => new ClientError({ reason })
