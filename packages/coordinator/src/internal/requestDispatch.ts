/**
 * The coordinator's way from clients to engines: CONNECT, a submission re-numbered and sent
 * to the engine the policy picks (or held until a first engine registers), an ABORT sent to the
 * engine holding the request (or the held submission forgotten). Megatron's
 * `data_parallel_inference_coordinator` (`handlers.py`) where the wire format alone does not say.
 *
 * @since 0.2.0
 * @internal
 */
import { type Frames, Headers, Messages, MessageSpec } from "@mcore-effect/protocol"
import type { EngineEntry, Waiting } from "./coordinatorRecords.ts"
import type { CoordinatorState } from "./coordinatorState.ts"
import * as Routing from "../Routing.ts"
import { sendFailed } from "./failedReply.ts"
import * as SubmissionHashes from "./submissionHashes.ts"
import { NIL, packHeader, packHeaderInt, showIdentity, withRequestId } from "./wireFrames.ts"

const H = Headers.values

/** The frame of a SUBMIT's block hashes, from the declaration. */
const HASHES_FRAME = MessageSpec.frameIndex(Messages.SubmitRequest, "blockHashes")

/** A client's CONNECT: acknowledged once; a duplicate is counted and ignored. */
export const connect = (s: CoordinatorState, identity: Buffer, key: string): void => {
  if (s.knownClients.has(key)) {
    s.counters.duplicateConnect++
    s.config.log("Info", `coordinator: client ${showIdentity(identity)} sent a duplicate CONNECT; ignored`)
    return
  }
  s.knownClients.add(key)
  s.writer.send([identity, packHeader(s.wire.CONNECT_ACK)])
}

/** An engine registered: the submissions held for one go out. */
export const registerEngine = (s: CoordinatorState, identity: Buffer): void => {
  if (!s.pool.register(identity)) return
  if (s.backlog.length > 0) {
    const waiting = s.backlog
    s.backlog = []
    for (const w of waiting) dispatch(s, w)
  }
}

/** A submission (SUBMIT_REQUEST or SUBMIT_REQUEST_WITH_KV), its envelope read. */
export const submit = (s: CoordinatorState, identity: Buffer, key: string, envelope: Frames.Envelope): void => {
  const clientRequestId = envelope.metadata.requestId as number
  let hashes: ReadonlyArray<bigint> = []
  if (envelope.spec.tag === "SubmitRequest" && s.config.policy !== "load_balanced") {
    const computed = SubmissionHashes.routingHashes(envelope, s.config.policy, s.config.blockSizeTokens, s.config.tokenizer, s.wire.client)
    if (typeof computed === "string") return s.reject("malformed", identity, computed)
    if (!Array.isArray(computed)) return refuse(s, identity, key, clientRequestId, (computed as SubmissionHashes.Refusal).refused)
    hashes = computed
  }
  dispatch(s, { envelope, client: identity, clientKey: key, clientRequestId, hashes })
}

/** The index of the engine a submission with `hashes` goes to, by the configured scoring. */
const pick = (s: CoordinatorState, engines: ReadonlyArray<EngineEntry>, hashes: ReadonlyArray<bigint>): number => {
  const loads = engines.map((e) => e.load)
  if (hashes.length === 0) return Routing.leastLoaded(loads)
  const keys = engines.map((e) => e.key)
  if (s.prefixTable !== undefined) {
    return Routing.chooseMegatron({
      alpha: s.config.alpha ?? 0.5,
      maxRequests: s.config.maxRequests ?? 256,
      loads,
      ...s.prefixTable.match(hashes, keys)
    }).engine
  }
  return Routing.choose({ beta: s.config.beta, loads, depths: s.ownership.depths(hashes, keys), hashCount: hashes.length }).engine
}

/** Records where a submission with `hashes` went: held while in flight, and in the prefix table for after. */
const claim = (s: CoordinatorState, engine: EngineEntry, hashes: ReadonlyArray<bigint>): void => {
  s.ownership.claim(engine.key, hashes)
  s.prefixTable?.assign(engine.key, hashes)
}

/** Answers a submission FAILED without routing it (it is numbered, as every answered request is). */
const refuse = (s: CoordinatorState, identity: Buffer, key: string, clientRequestId: number, why: string): void => {
  s.counters.refused++
  sendFailed(s.wire, s.toClients, { client: identity, clientKey: key, clientRequestId }, s.nextRequestId++, why)
  // Once: a client sending text prompts sends many; the count goes on in `refused`.
  if (s.counters.refused === 1) {
    s.config.log("Warn", `coordinator: answered ${showIdentity(identity)}'s request ${clientRequestId} FAILED (the first such; counted in refused): ${why}`)
  }
}

/** Re-numbers a submission and sends it to the engine the policy picks (or holds it until one registers). */
const dispatch = (s: CoordinatorState, w: Waiting): void => {
  const engines = s.pool.engines
  if (engines.length === 0) {
    s.backlog.push(w)
    return
  }
  const engine = engines[pick(s, engines, w.hashes)]!
  const requestId = s.nextRequestId
  const f = w.envelope.frames
  let metadata: Uint8Array
  try {
    // One frame: optional bodies the client left out go to the engine as nil, as main's
    // coordinator sends `[20, crid, prompt, sp, None]` for a four-element SUBMIT_REQUEST.
    metadata = withRequestId(f[0]!, requestId, s.wire.single ? 1 + w.envelope.spec.bodyKeys.length - f.length : 0)
  } catch (error) {
    // Only a frame not laid out as Python writes it takes the re-encoding path; a value msgpackr
    // decoded into something with no msgpack form (an extension type) ends here.
    return s.reject("malformed", w.client, `cannot re-number the metadata frame: ${String(error)}`)
  }
  s.nextRequestId++
  s.inFlight.add(requestId, {
    client: w.client,
    clientKey: w.clientKey,
    clientRequestId: w.clientRequestId,
    engine,
    hashes: w.hashes
  })
  engine.load++
  engine.routed++
  if (w.hashes.length > 0) claim(s, engine, w.hashes)
  // The bodies as they came, but the client's block hashes: they were for routing only, and the
  // engine gets nil in their place. (One frame: the message is frame 0, its bodies views into it.)
  const out = s.wire.single
    ? [metadata]
    : f.map((frame, i) => (i === 0 ? metadata : i === HASHES_FRAME && w.envelope.spec.tag === "SubmitRequest" ? NIL : frame))
  deliver(s, engine, out, requestId, w)
  if (s.config.debug === true) {
    s.config.log(
      "Debug",
      `coordinator: request ${requestId} (client ${showIdentity(w.client)}'s ${w.clientRequestId}) started on engine ${engine.name}`
    )
  }
}

/**
 * Sends a submission to its engine; should that engine be unreachable, the submission never
 * reached it and goes to the least loaded of the others, as Megatron-LM main's coordinator does
 * (`handlers.py:129-132`), unless it ended meanwhile (aborted). With none left it waits for one,
 * as before the first registered (Megatron's drops it and stops its loop). Called back before the
 * engine is removed, so that removing it answers FAILED only what it really held.
 */
const deliver = (s: CoordinatorState, engine: EngineEntry, out: Array<Uint8Array>, requestId: number, w: Waiting): void =>
  s.pool.deliver(engine, out, w.envelope.spec.header, requestId, w.clientRequestId, w.client, () => {
    const request = s.inFlight.get(requestId)
    if (request === undefined || request.engine !== engine) return
    engine.load--
    const engines = s.pool.engines.filter((e) => e !== engine)
    if (engines.length === 0) {
      s.inFlight.remove(requestId)
      if (w.hashes.length > 0) s.ownership.release(engine.key, w.hashes)
      s.backlog.push(w)
      return
    }
    const next = engines[Routing.leastLoaded(engines.map((e) => e.load))]!
    s.inFlight.add(requestId, { ...request, engine: next })
    next.load++
    next.routed++
    if (w.hashes.length > 0) claim(s, next, w.hashes)
    deliver(s, next, out, requestId, w)
  })

/** A client's ABORT: to the engine holding the request, or the held submission forgotten. */
export const abort = (s: CoordinatorState, identity: Buffer, key: string, clientRequestId: number): void => {
  const requestId = s.inFlight.idOf(key, clientRequestId)
  const request = requestId === undefined ? undefined : s.inFlight.get(requestId)
  if (request === undefined) {
    // Not yet routed: it never reaches an engine, and is answered FAILED here, as an engine
    // answers a request it aborts (with what it generated: nothing). A client that closes waits
    // for the replies to what it aborted (Megatron's coordinators exit on a reply for a client
    // gone), so one left unanswered held its close for its whole drainTimeout (30 s).
    // Otherwise unknown or finished: dropped.
    const held = s.backlog.findIndex((w) => w.clientKey === key && w.clientRequestId === clientRequestId)
    if (held < 0) {
      s.counters.abortsDropped++
      return
    }
    const [w] = s.backlog.splice(held, 1)
    sendFailed(s.wire, s.toClients, w!, s.nextRequestId++, "aborted before an engine took it")
    return
  }
  // Only decoded where the dialect has ABORT_REQUEST.
  const frame = packHeaderInt(s.wire.ABORT_REQUEST!, requestId!)
  s.pool.deliver(request.engine, [frame], H.ABORT_REQUEST, requestId, clientRequestId, identity)
  if (s.config.debug === true) {
    s.config.log("Debug", `coordinator: request ${requestId} (client ${showIdentity(identity)}'s ${clientRequestId}) aborted`)
  }
}
