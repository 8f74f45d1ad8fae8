/**
 * Megatron-LM core_v0.16 (core_v0.16.0, 3bec9aa97d): every message one msgpack frame, headers by
 * `enum.auto()` from 1 in their own order (CONNECT 1, CONNECT_ACK 2, SUBMIT_REQUEST 3,
 * ENGINE_REPLY 4, PAUSE 5, PAUSE_ACK 6, UNPAUSE 7, SUSPEND 8, RESUME 9, STOP 10, STOP_ACK 11).
 * SUBMIT_REQUEST is `[3, request_id, prompt, sampling_params]` (exactly four elements), the
 * parameters with 0.16's thirteen fields. Two things set it apart from the later releases:
 *
 * - a reply is a request *record*, `[4, request_id, {"requests": [request, ...], "latency": ...}]`
 *   (an engine step's: `[4, [record, ...]]`), not a request map;
 * - an engine acknowledges PAUSE and STOP (`[6]`, `[11]`); once every engine has, the
 *   coordinator sends `[6, engine_identity]` / `[11, engine_identity]` to every client it knows
 *   (asked or not) and `[6]` / `[11]` to every engine. After the STOP_ACKs it leaves its loop.
 *
 * No epoch, profiler, DISCONNECT or SHUTDOWN; no partials, abort, KV hand-off or media. Its
 * coordinator has no `ROUTER_MANDATORY`: a reply to a client that has gone is dropped.
 *
 * @since 0.2.0
 * @internal
 */
import * as Schema from "effect/Schema"
import type { Dialect } from "../../Dialect.ts"
import * as Headers from "../../Headers.ts"
import * as M from "../../Messages.ts"
import * as MessageSpec from "../../MessageSpec.ts"
import { KnownFields } from "../../SamplingParams.ts"
import { autoTable, EngineReplyBatch, release } from "./releases.ts"

const H = Headers.values

/**
 * The coordinator's relay of the engines' PAUSE acknowledgements: `[6, engine_identity]`, the
 * identity (bin) of the last engine to ack.
 *
 * @internal
 */
export const PauseAckNotice = MessageSpec.make("PauseAck", H.PAUSE_ACK, {
  metadata: { engineIdentity: Schema.Uint8Array },
  bodies: {}
})

/**
 * The coordinator's relay of the engines' STOP acknowledgements: `[11, engine_identity]`; it
 * exits after sending it.
 *
 * @internal
 */
export const StopAckNotice = MessageSpec.make("StopAck", H.STOP_ACK, {
  metadata: { engineIdentity: Schema.Uint8Array },
  bodies: {}
})

/**
 * An engine's acknowledgement, `[6]` / `[11]`: what it sends the coordinator, and what the
 * coordinator sends every engine once all have acked.
 *
 * @internal
 */
export const EnginePauseAck = MessageSpec.make("PauseAck", H.PAUSE_ACK, { metadata: {}, bodies: {} })
/** @internal */
export const EngineStopAck = MessageSpec.make("StopAck", H.STOP_ACK, { metadata: {}, bodies: {} })

/** `headers.py` at core_v0.16.0, in declaration order. */
const table = autoTable([
  "CONNECT",
  "CONNECT_ACK",
  "SUBMIT_REQUEST",
  "ENGINE_REPLY",
  "PAUSE",
  "PAUSE_ACK",
  "UNPAUSE",
  "SUSPEND",
  "RESUME",
  "STOP",
  "STOP_ACK"
])

/** Up to `stop_words`: 0.16's `SamplingParams` has no `detokenize_stop_sequence` yet. */
const samplingFieldCount = Object.keys(KnownFields.fields).indexOf("stop_words") + 1

/**
 * Its signals are the ones its table has (PAUSE, UNPAUSE, SUSPEND, RESUME, STOP); pause, suspend
 * and stop are its features, read off the table, which has no epoch, profiler or SHUTDOWN header.
 *
 * @internal
 */
export const coreV016: Dialect = release("core_v0.16", "core_v0.16", table, samplingFieldCount, {
  coordinator: [M.ConnectAck, M.EngineReply, PauseAckNotice, StopAckNotice],
  engine: [EngineReplyBatch, EnginePauseAck, EngineStopAck],
  closedClientReply: "drop"
})
