/**
 * What every route of one server shares: its resolved options, the admission gate, the metrics
 * recorder and the API-key check.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { InferenceClient } from "@mcore-effect/client"
import type { Dialect } from "@mcore-effect/protocol"
import { Tokenizer } from "@mcore-effect/text"
import { apiKeyCheck, Gate } from "./Admission.ts"
import * as ContextLength from "./ContextLength.ts"
import { Recorder } from "./Metrics.ts"
import type { Resolved } from "../ServerConfig.ts"
import type { ServerError } from "../ServerError.ts"

/**
 * The shared state.
 *
 * @since 0.1.0
 */
export interface State {
  readonly config: Resolved
  readonly gate: Gate
  readonly metrics: Recorder
  readonly checkApiKey: (authorization: string | undefined) => ServerError | undefined
  /**
   * The model's context length: prompt and generated tokens together (the option, else what the
   * tokenizer's directory declares, else `ContextLength.FALLBACK`).
   */
  readonly maxModelLen: number
  /** Unix seconds when the server started (`created` of the model). */
  readonly startedAt: number
  /**
   * The dialect the client speaks, to refuse what it cannot carry (media) before doing any work
   * for it; `undefined` without a client (the client refuses it then, on submit).
   */
  readonly dialect: Dialect.Dialect | undefined
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
    Effect.map(Effect.all([
      Effect.context<never>(),
      Effect.serviceOption(Tokenizer.Tokenizer),
      Effect.serviceOption(InferenceClient.InferenceClient)
    ]), ([context, tokenizer, client]) => ({
      config,
      maxModelLen: config.maxModelLen ??
        Option.match(tokenizer, { onNone: () => undefined, onSome: (t) => ContextLength.fromDirectory(t.source) }) ??
        ContextLength.FALLBACK,
      gate: new Gate(config.maxConcurrentRequests),
      metrics: new Recorder(context),
      checkApiKey: apiKeyCheck(config.apiKey),
      startedAt: Math.floor(Date.now() / 1000),
      dialect: Option.match(client, { onNone: () => undefined, onSome: (c) => c.dialect })
    }))
  )
