/**
 * `mcore coordinator --metrics-port N [--metrics-host H]`: the coordinator's metrics
 * (`CoordinatorMetrics.prometheus`, read from its snapshot at each scrape) at `GET /metrics`,
 * on an HTTP server of their own, for the test coordinator and for the one real engines dial
 * alike. Anything else is 404.
 *
 * @since 0.2.0
 * @internal
 */
import { NodeHttpServer } from "@effect/platform-node"
import { CoordinatorMetrics } from "@mcore-effect/coordinator"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServer from "effect/http/HttpServer"
import type { ServeError } from "effect/http/HttpServerError"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { createServer } from "node:http"
import * as HttpUrl from "../HttpUrl.ts"
import type { Watched } from "./CoordinatorWatch.ts"

/** The default `--metrics-host`: metrics name the engines, so they stay on this machine unless told. */
export const DEFAULT_HOST = "127.0.0.1"

/**
 * Serves the metrics until the scope closes; returns their URL (with the port bound, for 0).
 * Fails with `ServeError` when the port cannot be bound.
 */
export const serve = (coordinator: Watched, host: string, port: number): Effect.Effect<string, ServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      HttpRouter.serve(CoordinatorMetrics.layerHttp(coordinator), { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(createServer, { host, port }))
      )
    )
    return `${HttpUrl.of(Context.get(context, HttpServer.HttpServer).address, host)}/metrics`
  })
