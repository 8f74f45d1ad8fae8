/**
 * What every route of one server shares: its resolved options, the admission gate, the metrics
 * recorder, the API-key check and what is known of the coordinator's health.
 *
 * @since 0.1.0
 */
import type { ClientError } from "@mcore-effect/client"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { apiKeyCheck, Gate } from "./Admission.ts"
import { Recorder } from "./Metrics.ts"
import type { Resolved } from "./ServerConfig.ts"
import type { ServerError } from "./ServerError.ts"

/**
 * The coordinator as the server last saw it: `ready` once the client connected, `lost` when a
 * request failed because the connection dropped (or the client closed), `ready` again when a
 * request next gets a reply. The client's public API says nothing of its connection between
 * requests, so this is what `/health` reports.
 *
 * @since 0.1.0
 */
export class CoordinatorHealth {
  private lostSince: number | undefined = undefined

  get ready(): boolean {
    return this.lostSince === undefined
  }

  /** Seconds since the coordinator was seen lost, when it is. */
  get lostSeconds(): number | undefined {
    return this.lostSince === undefined ? undefined : (performance.now() - this.lostSince) / 1000
  }

  replied(): void {
    this.lostSince = undefined
  }

  failed(error: ClientError.ClientError): void {
    const tag = error.reason._tag
    if ((tag === "CoordinatorLost" || tag === "ClientClosed") && this.lostSince === undefined) {
      this.lostSince = performance.now()
    }
  }
}

/**
 * The shared state.
 *
 * @since 0.1.0
 */
export interface State {
  readonly config: Resolved
  readonly gate: Gate
  readonly metrics: Recorder
  readonly health: CoordinatorHealth
  readonly checkApiKey: (authorization: string | undefined) => ServerError | undefined
  /** Unix seconds when the server started (`created` of the model). */
  readonly startedAt: number
}

/**
 * The state as a service.
 *
 * @since 0.1.0
 */
export class ServerState extends Context.Service<ServerState, State>()("@mcore-effect/server/ServerState") {}

/**
 * The state for one server.
 *
 * @since 0.1.0
 */
export const layer = (config: Resolved): Layer.Layer<ServerState> =>
  Layer.effect(
    ServerState,
    Effect.map(Effect.context<never>(), (context) => ({
      config,
      gate: new Gate(config.maxConcurrentRequests),
      metrics: new Recorder(context),
      health: new CoordinatorHealth(),
      checkApiKey: apiKeyCheck(config.apiKey),
      startedAt: Math.floor(Date.now() / 1000)
    }))
  )
