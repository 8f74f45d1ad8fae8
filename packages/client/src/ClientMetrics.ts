/**
 * The client's Effect metrics. They live in the `MetricRegistry` of the context the client layer
 * was built in (so a test or an application reads them with `Metric.value` there), and carry the
 * `CurrentMetricAttributes` of that context. Several clients in one registry add up.
 *
 * @example
 * ```ts
 * import { ClientMetrics, InferenceClient } from "@mcore-effect/client"
 * import { Effect, Metric } from "effect"
 *
 * const report = Effect.gen(function*() {
 *   const client = yield* InferenceClient.InferenceClient
 *   yield* client.submit("Hello")
 *   const done = yield* Metric.value(ClientMetrics.completed) // { count: 1, ... }
 *   const latency = yield* Metric.value(ClientMetrics.latency) // buckets, count, min, max, sum
 *   return { done: done.count, meanSeconds: latency.sum / latency.count }
 * })
 * ```
 *
 * @since 0.1.0
 */
import type * as Context from "effect/Context"
import * as Metric from "effect/Metric"

const seconds = Metric.exponentialBoundaries({ start: 0.0005, factor: 2, count: 20 })

/**
 * Requests handed to the coordinator (validation failures are not counted).
 *
 * @since 0.1.0
 * @category metrics
 */
export const submitted = Metric.counter("mcore_client_requests_submitted", {
  description: "Requests sent to the coordinator",
  incremental: true
})

/**
 * Requests whose final reply arrived.
 *
 * @since 0.1.0
 * @category metrics
 */
export const completed = Metric.counter("mcore_client_requests_completed", {
  description: "Requests whose final reply arrived",
  incremental: true
})

/**
 * Requests aborted: the waiting fiber was interrupted, a stream was dropped early, or
 * `abort(requestId)` was called while it was pending.
 *
 * @since 0.1.0
 * @category metrics
 */
export const aborted = Metric.counter("mcore_client_requests_aborted", {
  description: "Requests aborted (interruption, early end of a stream, abort)",
  incremental: true
})

/**
 * Requests that failed after being sent: `CoordinatorLost`, `ClientClosed`, `RequestTimeout`,
 * `SendFailed`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const failed = Metric.counter("mcore_client_requests_failed", {
  description: "Requests failed after submission (coordinator lost, client closed, timeout, send failure)",
  incremental: true
})

/**
 * Requests submitted and not yet finished.
 *
 * @since 0.1.0
 * @category metrics
 */
export const inFlight = Metric.gauge("mcore_client_requests_in_flight", {
  description: "Requests submitted and not yet finished"
})

/**
 * Seconds from submission to the final reply (the `latency` added to the reply).
 *
 * @since 0.1.0
 * @category metrics
 */
export const latency = Metric.histogram("mcore_client_request_latency_seconds", {
  description: "Seconds from submission to the final reply",
  boundaries: seconds
})

/**
 * Seconds from submission to the first partial of a streaming request.
 *
 * @since 0.1.0
 * @category metrics
 */
export const timeToFirstToken = Metric.histogram("mcore_client_time_to_first_token_seconds", {
  description: "Seconds from submission to the first streamed tokens",
  boundaries: seconds
})

/**
 * Generated tokens received in final replies.
 *
 * @since 0.1.0
 * @category metrics
 */
export const tokensReceived = Metric.counter("mcore_client_tokens_received", {
  description: "Generated tokens received in final replies",
  incremental: true
})

/**
 * Messages from the coordinator that were dropped, by `reason`: `malformed` (not a message of the
 * protocol), `unknown_request` (a reply or partial for an id that is not pending: aborted,
 * timed out, failed, or never sent) or `too_large` (over `maxFrameBytes` or `maxDecodedBytes`;
 * its request failed with `ReplyTooLarge`).
 *
 * @since 0.1.0
 * @category metrics
 */
export const messagesDropped = Metric.counter("mcore_client_messages_dropped", {
  description: "Messages from the coordinator dropped (malformed, or for a request that is not pending)",
  incremental: true
})

/**
 * Acknowledgements the coordinator relayed, by `signal` (`pause`, `stop`): core_v0.16's
 * coordinator sends PAUSE_ACK and STOP_ACK to every client it knows once every engine has acked,
 * whoever sent the signal. They are expected, not malformed: counted here, nothing else.
 *
 * @since 0.2.0
 * @category metrics
 */
export const controlAcks = Metric.counter("mcore_client_control_acks", {
  description: "PAUSE_ACK / STOP_ACK messages relayed by the coordinator (core_v0.16)",
  incremental: true
})

const pauseAcks = Metric.withAttributes(controlAcks, { signal: "pause" })
const stopAcks = Metric.withAttributes(controlAcks, { signal: "stop" })

const malformedDropped = Metric.withAttributes(messagesDropped, { reason: "malformed" })
const unknownDropped = Metric.withAttributes(messagesDropped, { reason: "unknown_request" })
const tooLargeDropped = Metric.withAttributes(messagesDropped, { reason: "too_large" })

/**
 * A fleet's coordinators that are joined now (1) or not (0), each with a `coordinator`
 * attribute, its address. (A fleet builds each coordinator's client with that attribute too, so
 * every `mcore_client_*` metric above is per coordinator under a fleet.)
 *
 * @since 0.2.0
 * @category metrics
 */
export const fleetCoordinatorUp = Metric.gauge("mcore_fleet_coordinator_up", {
  description: "1 while the fleet's coordinator is joined, else 0"
})

/**
 * Requests a fleet's coordinator held when it went down that were submitted again on another
 * coordinator (attribute `coordinator`: the one that went down).
 *
 * @since 0.2.0
 * @category metrics
 */
export const fleetResubmitted = Metric.counter("mcore_fleet_requests_resubmitted", {
  description: "Requests submitted again elsewhere after their coordinator went down",
  incremental: true
})

/**
 * Every series a client (or a fleet, about one coordinator) writes under the attributes of
 * `context`, removed from its registry: what a fleet does when a coordinator has left it, so
 * that coordinators that come and go (a Kubernetes Service's pods) do not leave a series each
 * behind for ever.
 *
 * @since 0.2.0
 * @category metrics
 * @internal
 */
export const removeSeries = (context: Context.Context<never>): void => {
  for (
    const metric of [
      submitted, completed, aborted, failed, inFlight, latency, timeToFirstToken, tokensReceived,
      malformedDropped, unknownDropped, tooLargeDropped, pauseAcks, stopAcks, fleetCoordinatorUp, fleetResubmitted
    ] as ReadonlyArray<Metric.Metric<never, unknown>>
  ) Metric.removeUnsafe(metric, context)
}

/**
 * Records into the metrics from plain callbacks (the socket loops run outside the fiber runtime),
 * against the context the client was built in.
 *
 * @since 0.1.0
 * @category metrics
 * @internal
 */
export class Recorder {
  constructor(private readonly context: Context.Context<never>) {}

  submitted(): void {
    submitted.updateUnsafe(1, this.context)
    inFlight.modifyUnsafe(1, this.context)
  }

  completed(latencySeconds: number, tokens: number): void {
    completed.updateUnsafe(1, this.context)
    inFlight.modifyUnsafe(-1, this.context)
    latency.updateUnsafe(latencySeconds, this.context)
    if (tokens > 0) tokensReceived.updateUnsafe(tokens, this.context)
  }

  firstToken(seconds: number): void {
    timeToFirstToken.updateUnsafe(seconds, this.context)
  }

  aborted(): void {
    aborted.updateUnsafe(1, this.context)
    inFlight.modifyUnsafe(-1, this.context)
  }

  failed(count: number): void {
    if (count === 0) return
    failed.updateUnsafe(count, this.context)
    inFlight.modifyUnsafe(-count, this.context)
  }

  malformed(): void {
    malformedDropped.updateUnsafe(1, this.context)
  }

  unknownRequest(): void {
    unknownDropped.updateUnsafe(1, this.context)
  }

  tooLarge(): void {
    tooLargeDropped.updateUnsafe(1, this.context)
  }

  acknowledged(signal: "pause" | "stop"): void {
    ;(signal === "pause" ? pauseAcks : stopAcks).updateUnsafe(1, this.context)
  }
}
