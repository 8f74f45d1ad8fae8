/**
 * Prometheus text that `/metrics` serves after the server's own, when something provides it: the
 * server as the coordinator (`mcore serve --engines-listen`) adds its coordinator's page (engines,
 * requests routed per engine, refusals, ...) and the process's CPU and memory, which a
 * coordinator process would have served on its own port.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

/**
 * The service: read at every `/metrics`. Its families must not share a name with the server's
 * (`mcore_server_*`, `mcore_client_*`).
 *
 * @example
 * ```ts
 * import { ExtraMetrics } from "@mcore-effect/server"
 * import { Effect, Layer } from "effect"
 *
 * const layer = Layer.succeed(ExtraMetrics.ExtraMetrics, {
 *   text: Effect.sync(() => `# TYPE my_engines gauge\nmy_engines 2\n`)
 * })
 * ```
 *
 * @category services
 * @since 0.2.0
 */
export class ExtraMetrics extends Context.Service<ExtraMetrics, {
  readonly text: Effect.Effect<string>
}>()("@mcore-effect/server/ExtraMetrics") {}
