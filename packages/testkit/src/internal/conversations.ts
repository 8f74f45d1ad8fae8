/**
 * Whole conversations between a client and the coordinator, for `Arbitraries.conversation`
 * (public through it).
 *
 * @since 0.1.0
 * @internal
 */
import { Messages, Reply, SamplingParams } from "@mcore-effect/protocol"
import * as fc from "fast-check"
import { type Options, replyMap, tokenId } from "./fieldArbitraries.ts"
import { message, submitRequest } from "./messageArbitraries.ts"

// -------------------------------------------------------------------------------------------------
// conversations
// -------------------------------------------------------------------------------------------------

/**
 * One message of a conversation, with the side that sent it.
 *
 * @category models
 * @since 0.1.0
 */
export type ConversationEvent =
  | { readonly from: "client"; readonly message: Messages.ClientMessage }
  | { readonly from: "coordinator"; readonly message: Messages.CoordinatorMessage }

/**
 * How a request ends in a conversation.
 *
 * @category models
 * @since 0.1.0
 */
export type RequestOutcome = "completed" | "streamed" | "aborted" | "abortedAfterReply" | "unanswered"

/**
 * A client's session with the coordinator, in the order the messages travel.
 *
 * @category models
 * @since 0.1.0
 */
export interface Conversation {
  readonly events: ReadonlyArray<ConversationEvent>
  /** How each submitted request ends, by request id (`0 .. n-1`). */
  readonly outcomes: ReadonlyArray<RequestOutcome>
}

/**
 * Options of {@link conversation}.
 *
 * @category models
 * @since 0.1.0
 */
export interface ConversationOptions extends Options {
  /** Most requests submitted. Default 6. */
  readonly maxRequests?: number | undefined
  /** Most partials for a streamed request. Default 4. */
  readonly maxPartials?: number | undefined
  /** Interleave control signals (pause/unpause, epochs, profiler). Default true. */
  readonly controlSignals?: boolean | undefined
}

type Track = ReadonlyArray<ConversationEvent>

const client = (message: Messages.ClientMessage): ConversationEvent => ({ from: "client", message })
const coordinator = (message: Messages.CoordinatorMessage): ConversationEvent => ({ from: "coordinator", message })

interface RequestPlan {
  readonly submitted: Messages.ClientMessage & { readonly _tag: "SubmitRequest" | "SubmitRequestWithKv" }
  readonly outcome: RequestOutcome
  readonly partials: ReadonlyArray<ReadonlyArray<number>>
  readonly reply: Reply.ReplyMap
  readonly tail: ReadonlyArray<number>
  readonly status: "COMPLETED" | "FAILED"
}

/** What happens to one request, its id aside (ids are given by position). */
const requestPlan = (options: ConversationOptions): fc.Arbitrary<RequestPlan> =>
  fc.record({
    submitted: fc.oneof(
      { weight: 5, arbitrary: submitRequest(options) },
      { weight: 1, arbitrary: message(Messages.SubmitRequestWithKv, options) }
    ),
    outcome: fc.constantFrom<RequestOutcome>("completed", "completed", "streamed", "streamed", "aborted", "abortedAfterReply", "unanswered"),
    partials: fc.array(fc.array(tokenId(), { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: Math.max(1, options.maxPartials ?? 4) }),
    reply: replyMap(undefined, options),
    tail: fc.array(tokenId(), { maxLength: 4 }),
    status: fc.constantFrom("COMPLETED" as const, "COMPLETED" as const, "FAILED" as const)
  })

/** The events of request `id`, in their own order: the submission first. */
const requestTrack = (id: number, plan: RequestPlan): Track => {
  const { outcome, partials, reply, submitted, tail } = plan
  const streamed = outcome === "streamed"
  const samplingParams = streamed ? SamplingParams.withStreaming(submitted.samplingParams) : submitted.samplingParams
  const track: Array<ConversationEvent> = [client({ ...submitted, requestId: id, samplingParams })]
  const fromPartials = partials.flat()
  const generated = streamed ? [...fromPartials, ...tail] : [...tail, ...fromPartials]
  const final = coordinator({
    _tag: "EngineReply",
    requestId: id,
    reply: {
      ...reply,
      request_id: id,
      status: outcome === "aborted" || outcome === "abortedAfterReply" ? "FAILED" : plan.status,
      generated_tokens: generated,
      generated_length: generated.length
    }
  })
  if (streamed) {
    for (const new_tokens of partials) {
      track.push(coordinator({ _tag: "EngineReplyPartial", requestId: id, partial: { request_id: id, new_tokens } }))
    }
  }
  switch (outcome) {
    case "completed":
    case "streamed":
      track.push(final)
      break
    case "aborted":
      track.push(client({ _tag: "AbortRequest", requestId: id }))
      break
    case "abortedAfterReply":
      // The abort crossed the reply on the wire.
      track.push(client({ _tag: "AbortRequest", requestId: id }), final)
      break
    case "unanswered":
      break
  }
  if (submitted._tag === "SubmitRequestWithKv" && (outcome === "completed" || outcome === "streamed")) {
    track.push(client({ _tag: "ReleaseKv", requestId: id }))
  }
  return track
}

const controlTrack = (options: Options): fc.Arbitrary<Track> =>
  fc.oneof(
    fc.constant<Track>([client({ _tag: "Pause" }), client({ _tag: "Unpause" })]),
    fc.constant<Track>([client({ _tag: "Pause" }), client({ _tag: "Suspend" }), client({ _tag: "Resume" }), client({ _tag: "Unpause" })]),
    fc.constant<Track>([client({ _tag: "StartCudaProfiler" }), client({ _tag: "StopCudaProfiler" })]),
    message(Messages.SetGenerationEpoch, options).map((m): Track => [client(m)])
  )

/**
 * Merges tracks keeping each track's own order. A request's submission only goes out after every
 * earlier request's (ids increase in the order they are sent); `choices` pick among the tracks
 * that may go next.
 */
const interleave = (requests: ReadonlyArray<Track>, controls: ReadonlyArray<Track>, choices: ReadonlyArray<number>): Array<ConversationEvent> => {
  const tracks = [...requests, ...controls].map((t) => [...t])
  const started = tracks.map((_, i) => i >= requests.length)
  let nextRequest = 0
  const out: Array<ConversationEvent> = []
  for (let step = 0; ; step++) {
    const eligible: Array<number> = []
    for (let i = 0; i < tracks.length; i++) {
      if (tracks[i]!.length > 0 && (started[i] || i === nextRequest)) eligible.push(i)
    }
    if (eligible.length === 0) return out
    const pick = eligible[(choices[step] ?? 0) % eligible.length]!
    if (!started[pick]) {
      started[pick] = true
      nextRequest++
    }
    out.push(tracks[pick]!.shift()!)
  }
}

/**
 * A whole conversation: CONNECT and its CONNECT_ACK, then requests submitted with ids 0, 1, 2, ...
 * in that order, each followed (interleaved with the others) by what the coordinator sends for
 * it: partials for streamed requests, then the reply; or an abort from the client (sometimes
 * crossing the reply); or nothing yet. KV-handoff requests are released after their reply.
 * Control signals come in plausible pairs (pause then unpause, profiler start then stop). Ends,
 * sometimes, with DISCONNECT.
 *
 * @example
 * ```ts
 * import { Arbitraries } from "@mcore-effect/testkit/arbitraries"
 * import * as fc from "fast-check"
 *
 * fc.assert(fc.property(Arbitraries.conversation({ maxRequests: 4 }), ({ events }) => {
 *   const submitted = events.flatMap((e) =>
 *     e.from === "client" && e.message._tag.startsWith("SubmitRequest") ? [(e.message as { requestId: number }).requestId] : []
 *   )
 *   return submitted.every((id, i) => id === i)
 * }))
 * ```
 *
 * @category arbitraries
 * @since 0.1.0
 */
export const conversation = (options?: ConversationOptions): fc.Arbitrary<Conversation> => {
  const opts = options ?? {}
  const maxRequests = opts.maxRequests ?? 6
  const controls = opts.controlSignals === false
    ? fc.constant<Array<Track>>([])
    : fc.array(controlTrack(opts), { maxLength: 2 })
  return fc
    .tuple(
      fc.array(requestPlan(opts), { maxLength: maxRequests }),
      controls,
      // Missing choices default to the first eligible track.
      fc.array(fc.nat(), { maxLength: maxRequests * (6 + (opts.maxPartials ?? 4)) }),
      fc.boolean()
    )
    .map(([plans, controlTracks, choices, disconnect]): Conversation => ({
      events: [
        client({ _tag: "Connect" }),
        coordinator({ _tag: "ConnectAck" }),
        ...interleave(plans.map((plan, id) => requestTrack(id, plan)), controlTracks, choices),
        ...(disconnect ? [client({ _tag: "Disconnect" })] : [])
      ],
      outcomes: plans.map((plan) => plan.outcome)
    }))
}
