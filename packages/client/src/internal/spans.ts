/**
 * Tracing of the client's operations, made only when someone can see it.
 *
 * Per-request spans cost more than the rest of the client's own work; with the built-in native
 * tracer nobody can see them, so they are made only when a tracing backend is installed
 * (measurements in the package's PERFORMANCE.md, "Spans only when someone can see them").
 *
 * @since 0.1.0
 * @internal
 */
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as References from "effect/References"
import type * as Scope from "effect/Scope"
import * as Tracer from "effect/Tracer"
import type { ClientError } from "../ClientError.ts"

/**
 * The span attribute naming a request (the client's id).
 *
 * @since 0.1.0
 */
export const REQUEST_ID = "mcore.request_id"

/**
 * Whether a tracing backend is installed for `fiber`.
 *
 * @since 0.1.0
 */
export const tracing = (fiber: Fiber.Fiber<unknown, unknown>): boolean => {
  // Fibers forked for a batch of requests share their parent's context: asked once for it.
  const context = fiber.context
  if (context === lastContext) return lastAnswer
  lastAnswer = fiber.getRef(References.TracerEnabled) && fiber.getRef(Tracer.Tracer) !== Tracer.nativeTracer
  lastContext = context
  return lastAnswer
}

let lastContext: Context.Context<never> | undefined = undefined
let lastAnswer = false

/**
 * Runs `start` in a span named `name` that lasts as long as the scope (a stream's lifetime), when
 * a tracing backend is installed; else with no span.
 *
 * @since 0.1.0
 */
export const inScopeSpan = <A>(
  fiber: Fiber.Fiber<unknown, unknown>,
  name: string,
  start: (span: Tracer.Span | undefined) => Effect.Effect<A, ClientError, Scope.Scope>
): Effect.Effect<A, ClientError, Scope.Scope> => {
  if (!tracing(fiber)) return start(undefined)
  return Effect.makeSpan(name).pipe(
    Effect.tap((span) =>
      Effect.addFinalizer((exit) =>
        Effect.clockWith((clock) => Effect.sync(() => span.end(clock.currentTimeNanosUnsafe(), exit)))
      )
    ),
    Effect.flatMap(start)
  )
}
