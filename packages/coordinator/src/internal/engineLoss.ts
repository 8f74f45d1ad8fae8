/**
 * An engine that left (unreachable when the coordinator sent to it, or its DISCONNECT): what it
 * held in flight can no longer be answered by it. Megatron-LM's coordinator leaves those requests
 * hanging; this one answers each to its client as FAILED, in the dialect's reply layout (a
 * one-frame `[21, id, reply]`, a multipart `[21+id, reply]`, core_v0.16's record), the reply a
 * request map with `status: "FAILED"` and a `FAIL` event saying which engine was lost and why
 * (core_v0.16: the event without the reason, which that ref's client refuses), as Megatron's
 * engines report a failed request. A request is never sent again elsewhere: it may
 * have run, and a second run could answer twice. (A submission whose send failed never reached
 * the engine and is routed to another instead: `requestDispatch.ts`.)
 *
 * @since 0.2.0
 * @internal
 */
import { Msgpack } from "@mcore-effect/protocol"
import * as DialectWire from "./dialectWire.ts"
import type { ReplyRoute } from "./replyRoute.ts"

/**
 * The reply a lost request is answered with. core_v0.16's client deserializes every reply into
 * its `DynamicInferenceRequest` (`cls(**obj)`: no key it lacks, `status`, `sampling_params`,
 * `inference_parameters` and `events` required, a FAIL event's payload None), so there the
 * reason is left to the coordinator's log; elsewhere the FAIL event carries it.
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
 * Answers every request in flight on the engine `key` (named `name`) as FAILED, and takes them
 * out of flight (a late reply from the engine is then refused as for an unknown request).
 *
 * @internal
 */
export const failBack = (route: ReplyRoute, key: string, name: string, why: string): void => {
  const lost = route.inFlight.filter((request) => request.engine.key === key)
  if (lost.length === 0) return
  const wire = route.wire
  for (const [requestId, request] of lost) {
    route.inFlight.remove(requestId)
    request.engine.load--
    if (request.hashes.length > 0) route.ownership.release(key, request.hashes)
    const body = failedReply(requestId, `engine ${name} was lost (${why}) with this request in flight`, wire.records)
    const reply = wire.records ? DialectWire.asRecord(body) : body
    route.toClients.send("reply", request, [request.client, ...DialectWire.toClient(wire, wire.ENGINE_REPLY, request.clientRequestId, reply)])
  }
  route.counters.failedBack += lost.length
  route.config.log("Warn", `coordinator: engine ${name} was lost (${why}): ${lost.length} request(s) in flight on it answered FAILED`)
}
