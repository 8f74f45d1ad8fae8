/**
 * Whether the client makes spans: only when a tracing backend is installed, asked of each fiber's
 * context (the answer is remembered for the last context, which fibers forked together share).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, References, Tracer } from "effect"
import { tracing } from "../src/internal/spans.ts"

const tracer = Tracer.make({ span: (options) => new Tracer.NativeSpan(options) })
const traced = Effect.withFiber((fiber) => Effect.succeed(tracing(fiber)))

describe("Spans.tracing", () => {
  it.effect("follows each fiber's context, whatever was asked before", () =>
    Effect.gen(function*() {
      const withTracer = traced.pipe(Effect.provideService(Tracer.Tracer, tracer))
      const disabled = withTracer.pipe(Effect.provideService(References.TracerEnabled, false))
      const answers: Array<boolean> = []
      for (const effect of [traced, traced, withTracer, withTracer, traced, disabled, withTracer, traced]) {
        answers.push(yield* effect)
      }
      expect(answers).toEqual([false, false, true, true, false, false, true, false])
      const forked = yield* Effect.forEach([1, 2, 3], () => withTracer, { concurrency: "unbounded" })
      expect(forked).toEqual([true, true, true])
    }))
})
