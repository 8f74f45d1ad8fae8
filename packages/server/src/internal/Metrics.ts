/**
 * The server's metrics, as Effect `Metric`s (so `/metrics` renders them with the client's own,
 * `mcore_client_*`, in one Prometheus text page): requests by route and status, requests in
 * flight, prompt and completion tokens, time to first token and latency histograms, and aborts
 * (client disconnects and deadlines), and request fields ignored.
 *
 * @since 0.1.0
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"

const seconds = Metric.exponentialBoundaries({ start: 0.0005, factor: 2, count: 20 })

/**
 * Requests answered, by `route` and `status`.
 *
 * @since 0.1.0
 */
export const requests = Metric.counter("mcore_server_requests_total", {
  description: "HTTP requests answered, by route and status",
  incremental: true
})

/**
 * Generation requests being served (admitted and not yet answered in full).
 *
 * @since 0.1.0
 */
export const inFlight = Metric.gauge("mcore_server_requests_in_flight", {
  description: "Generation requests being served"
})

/**
 * Prompt tokens of finished generations.
 *
 * @since 0.1.0
 */
export const promptTokens = Metric.counter("mcore_server_prompt_tokens_total", {
  description: "Prompt tokens of finished generations",
  incremental: true
})

/**
 * Generated tokens of finished generations.
 *
 * @since 0.1.0
 */
export const completionTokens = Metric.counter("mcore_server_completion_tokens_total", {
  description: "Generated tokens of finished generations",
  incremental: true
})

/**
 * Seconds from a streaming request's arrival to its first content chunk.
 *
 * @since 0.1.0
 */
export const timeToFirstToken = Metric.histogram("mcore_server_time_to_first_token_seconds", {
  description: "Seconds from a streaming request's arrival to its first content chunk",
  boundaries: seconds
})

/**
 * Seconds from a generation request's arrival to its last byte, by `route`.
 *
 * @since 0.1.0
 */
export const latency = Metric.histogram("mcore_server_request_duration_seconds", {
  description: "Seconds from a generation request's arrival to its last byte",
  boundaries: seconds
})

/**
 * Generations aborted, by `reason`: `disconnect` (the HTTP client went away), `deadline`,
 * `shutdown` (still running at the end of the grace period).
 *
 * @since 0.1.0
 */
export const aborts = Metric.counter("mcore_server_aborts_total", {
  description: "Generations aborted (client disconnect, deadline, shutdown)",
  incremental: true
})

/**
 * Request fields accepted and ignored, by `field`: the name when it is one of
 * `IgnoredFields`' lists, `other` for any other (a bounded label set).
 *
 * @since 0.1.0
 */
export const ignoredFields = Metric.counter("mcore_server_ignored_fields_total", {
  description: "Request fields accepted and ignored (listed in x-ignored-fields), by field",
  incremental: true
})

/**
 * Why a generation was aborted.
 *
 * @since 0.1.0
 */
export type AbortReason = "disconnect" | "deadline" | "shutdown"

/**
 * Records into the metrics without an effect per update, against the context the server was
 * built in; labelled series are made once and kept.
 *
 * @since 0.1.0
 */
export class Recorder {
  private readonly byStatus = new Map<string, Metric.Counter<number>>()
  private readonly byRoute = new Map<string, Metric.Histogram<number>>()
  private readonly byReason = new Map<string, Metric.Counter<number>>()
  private readonly byField = new Map<string, Metric.Counter<number>>()

  constructor(private readonly context: Context.Context<never>) {}

  answered(route: string, status: number): void {
    const key = `${route} ${status}`
    let counter = this.byStatus.get(key)
    if (counter === undefined) {
      counter = Metric.withAttributes(requests, { route, status: String(status) })
      this.byStatus.set(key, counter)
    }
    counter.updateUnsafe(1, this.context)
  }

  started(): void {
    inFlight.modifyUnsafe(1, this.context)
  }

  finished(route: string, startedAt: number): void {
    inFlight.modifyUnsafe(-1, this.context)
    let histogram = this.byRoute.get(route)
    if (histogram === undefined) {
      histogram = Metric.withAttributes(latency, { route })
      this.byRoute.set(route, histogram)
    }
    histogram.updateUnsafe((performance.now() - startedAt) / 1000, this.context)
  }

  tokens(prompt: number, completion: number): void {
    if (prompt > 0) promptTokens.updateUnsafe(prompt, this.context)
    if (completion > 0) completionTokens.updateUnsafe(completion, this.context)
  }

  firstToken(startedAt: number): void {
    timeToFirstToken.updateUnsafe((performance.now() - startedAt) / 1000, this.context)
  }

  aborted(reason: AbortReason): void {
    let counter = this.byReason.get(reason)
    if (counter === undefined) {
      counter = Metric.withAttributes(aborts, { reason })
      this.byReason.set(reason, counter)
    }
    counter.updateUnsafe(1, this.context)
  }

  /** One ignored field; `field` is already a bounded label (`IgnoredFields.label`). */
  ignoredField(field: string): void {
    let counter = this.byField.get(field)
    if (counter === undefined) {
      counter = Metric.withAttributes(ignoredFields, { field })
      this.byField.set(field, counter)
    }
    counter.updateUnsafe(1, this.context)
  }

  /** Runs a log effect with the server's context (its logger and minimum level). */
  log(effect: Effect.Effect<void>): void {
    Effect.runSyncWith(this.context)(effect)
  }
}
