/**
 * An engine that left (unreachable when the coordinator sent to it, its connection closed on our
 * own ROUTER, or its DISCONNECT): what it held in flight can no longer be answered by it.
 * Megatron-LM's coordinator leaves those requests hanging; this one answers each to its client
 * as FAILED (`failedReply.ts`: a `FAIL` event
 * saying which engine was lost and why). A request is never sent again elsewhere: it may
 * have run, and a second run could answer twice. (A submission whose send failed never reached
 * the engine and is routed to another instead: `requestDispatch.ts`.)
 *
 * @since 0.2.0
 * @internal
 */
import { sendFailed } from "./failedReply.ts"
import type { ReplyRoute } from "./replyRoute.ts"

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
    sendFailed(wire, route.toClients, request, requestId, `engine ${name} was lost (${why}) with this request in flight`)
  }
  route.counters.failedBack += lost.length
  route.config.log("Warn", `coordinator: engine ${name} was lost (${why}): ${lost.length} request(s) in flight on it answered FAILED`)
}
