/**
 * The coordinator's way back: an engine's replies and partials matched to the requests in
 * flight and sent to their clients, in the dialect's layout. A reference (or PR 6497) batch names
 * its requests in frame 0 and carries one body frame each, forwarded as they came (`generated_text`
 * filled where the engine flagged `needs_detokenize`); a one-frame dialect's batch holds the
 * replies themselves, each naming the coordinator's id in its `request_id`, detokenized here
 * (those coordinators detokenize every reply). A reply for a request not in flight is refused.
 *
 * @since 0.2.0
 * @internal
 */
import { Messages, MessageSpec } from "@mcore-effect/protocol"
import type { ClientOutbox } from "./peer.ts"
import type { CoordinatorConfig, Counters } from "./coordinatorConfig.ts"
import type { InFlight } from "./coordinatorRecords.ts"
import * as DialectWire from "./dialectWire.ts"
import * as GeneratedText from "./generatedText.ts"
import type { InFlightRequests } from "./inFlightRequests.ts"
import type * as Routing from "../Routing.ts"
import { packHeaderInt, showIdentity } from "./wireFrames.ts"

/** @internal */
export type EngineReplyMetadata = Pick<MessageSpec.Type<typeof Messages.EngineReplyBatch>, "entries">
/** @internal */
export type EnginePartialMetadata = Pick<MessageSpec.Type<typeof Messages.EngineReplyPartialBatch>, "requestIds">

/** Frame indexes, from the declarations. */
const REPLIES_FRAME = MessageSpec.frameIndex(Messages.EngineReplyBatch, "replies")
const PARTIALS_FRAME = MessageSpec.frameIndex(Messages.EngineReplyPartialBatch, "partials")

/**
 * What the way back reads and writes of the coordinator's state.
 *
 * @internal
 */
export interface ReplyRoute {
  readonly wire: DialectWire.DialectWire
  readonly config: Pick<CoordinatorConfig, "debug" | "log" | "tokenizer">
  readonly inFlight: InFlightRequests<InFlight>
  readonly ownership: Routing.HashOwnership
  readonly toClients: ClientOutbox
  readonly counters: Counters
  readonly reject: (kind: keyof Counters, identity: Uint8Array, why: string) => void
}

/** Takes a request out of flight as its reply arrives, or counts the reply as for an unknown request. */
const complete = (route: ReplyRoute, identity: Buffer, requestId: number): InFlight | undefined => {
  const request = route.inFlight.remove(requestId)
  if (request === undefined) {
    route.reject("unknownRequest", identity, `ENGINE_REPLY for request ${requestId}, which is not in flight`)
    return undefined
  }
  request.engine.load--
  if (route.config.debug === true) {
    route.config.log(
      "Debug",
      `coordinator: request ${requestId} (client ${showIdentity(request.client)}'s ${request.clientRequestId}) completed on engine ${request.engine.name}`
    )
  }
  if (request.hashes.length > 0) route.ownership.release(request.engine.key, request.hashes)
  return request
}

/** A multipart batch of replies: `[21, [[id, needs_detokenize], ...]]`, then one body per entry. */
export const engineReply = (route: ReplyRoute, identity: Buffer, message: ReadonlyArray<Buffer>, metadata: EngineReplyMetadata): void => {
  const entries = metadata.entries
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!
    const request = complete(route, identity, entry[0])
    if (request === undefined) continue
    const frame = message[REPLIES_FRAME + i]!
    const tokenizer = route.config.tokenizer
    const body = entry[1] && tokenizer !== undefined ? GeneratedText.fill(frame, tokenizer) : frame
    route.toClients.send("reply", request, [request.client, packHeaderInt(route.wire.ENGINE_REPLY, request.clientRequestId), body])
  }
}

/** A multipart batch of partials: `[22, [id, ...]]`, then one body per id, forwarded untouched. */
export const enginePartial = (
  route: ReplyRoute,
  identity: Buffer,
  message: ReadonlyArray<Buffer>,
  metadata: EnginePartialMetadata
): void => {
  const ids = metadata.requestIds
  for (let i = 0; i < ids.length; i++) {
    const requestId = ids[i]!
    const request = route.inFlight.get(requestId)
    if (request === undefined) {
      route.reject("unknownRequest", identity, `ENGINE_REPLY_PARTIAL for request ${String(requestId)}, which is not in flight`)
      continue
    }
    // The request stays in flight.
    route.toClients.send("partial", request, [
      request.client,
      packHeaderInt(route.wire.ENGINE_REPLY_PARTIAL!, request.clientRequestId),
      message[PARTIALS_FRAME + i]!
    ])
  }
}

/**
 * A one-frame dialect's batch, `[21, [reply, ...]]` or `[22, [partial, ...]]`: each goes to its
 * client as `[21, rid, reply]` (`generated_text` filled) or `[22, rid, partial]`.
 */
export const engineBatch = (route: ReplyRoute, identity: Buffer, body: Uint8Array, replies: boolean): void => {
  const elements = DialectWire.batchElements(body)
  if (typeof elements === "string") return route.reject("malformed", identity, elements)
  const wire = route.wire
  for (const element of elements) {
    const requestId = replies ? DialectWire.replyIdOf(wire, element) : DialectWire.requestIdOf(element)
    if (requestId === undefined) {
      route.reject("malformed", identity, `a ${replies ? "reply" : "partial"} without an integer request_id`)
      continue
    }
    if (!replies) {
      const request = route.inFlight.get(requestId)
      if (request === undefined) {
        route.reject("unknownRequest", identity, `ENGINE_REPLY_PARTIAL for request ${requestId}, which is not in flight`)
        continue
      }
      route.toClients.send("partial", request, DialectWire.toClient(wire, request.client, wire.ENGINE_REPLY_PARTIAL!, request.clientRequestId, element))
      continue
    }
    const request = complete(route, identity, requestId)
    if (request === undefined) continue
    const reply = DialectWire.finishReply(wire, element, route.config.tokenizer)
    route.toClients.send("reply", request, DialectWire.toClient(wire, request.client, wire.ENGINE_REPLY, request.clientRequestId, reply))
  }
}
