/**
 * A request answered FAILED by the coordinator itself (its engine was lost, or it could not be
 * routed), in the dialect's reply layout: a one-frame `[21, id, reply]`, a multipart
 * `[21+id, reply]`, core_v0.16's record. The reply is a request map with `status: "FAILED"` and a
 * `FAIL` event saying why, as Megatron's engines report a failed request.
 *
 * @since 0.2.0
 * @internal
 */
import { Msgpack } from "@mcore-effect/protocol"
import * as DialectWire from "./dialectWire.ts"
import type { Addressee, ClientOutbox } from "./peer.ts"

/**
 * The reply. core_v0.16's client deserializes every reply into its `DynamicInferenceRequest`
 * (`cls(**obj)`: no key it lacks, `status`, `sampling_params`, `inference_parameters` and
 * `events` required, a FAIL event's payload None), so there (`strict`) the reason is left to the
 * coordinator's log; elsewhere the FAIL event carries it.
 */
const failedReply = (requestId: number, why: string, strict: boolean): Uint8Array =>
  Msgpack.encode({
    request_id: requestId,
    status: "FAILED",
    prompt: null,
    ...(strict ? { sampling_params: null, inference_parameters: null } : {}),
    generated_tokens: [],
    generated_text: "",
    generated_length: 0,
    events: [{ type: "FAIL", timestamp: Date.now() / 1000, payload: strict ? null : why }]
  })

/**
 * Sends `request`'s client the FAILED reply for the coordinator's request `requestId`.
 *
 * @internal
 */
export const sendFailed = (
  wire: DialectWire.DialectWire,
  toClients: ClientOutbox,
  request: Addressee & { readonly client: Uint8Array },
  requestId: number,
  why: string
): void => {
  const body = failedReply(requestId, why, wire.records)
  const reply = wire.records ? DialectWire.asRecord(body) : body
  toClients.send("reply", request, DialectWire.toClient(wire, request.client, wire.ENGINE_REPLY, request.clientRequestId, reply))
}
