/**
 * What `/health` says beyond the server's own state, when something provides it: the server as
 * the coordinator (`mcore serve --engines-listen`) reports which engines are registered, and is
 * not ready while none is. Without this service, `/health` reads the client's connection alone.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"

/**
 * One reading: whether requests can be served (with the status to give when not), and fields
 * added to `/health`'s body.
 *
 * @category models
 * @since 0.2.0
 */
export interface Report {
  readonly ready: boolean
  /** `/health`'s `status` when not `ready` (snake case, as the server's own: `no_engines`). */
  readonly status: string
  readonly fields: Readonly<Record<string, unknown>>
}

/**
 * The service: read at every `/health`.
 *
 * @example
 * ```ts
 * import { HealthReport } from "@mcore-effect/server"
 * import { Effect, Layer } from "effect"
 *
 * // Ready while at least one engine is registered, and says which.
 * declare const engines: Effect.Effect<ReadonlyArray<string>>
 * const layer = Layer.succeed(HealthReport.HealthReport, {
 *   report: Effect.map(engines, (up) => ({ ready: up.length > 0, status: "no_engines", fields: { engines: up } }))
 * })
 * ```
 *
 * @category services
 * @since 0.2.0
 */
export class HealthReport extends Context.Service<HealthReport, {
  readonly report: Effect.Effect<Report>
}>()("@mcore-effect/server/HealthReport") {}
