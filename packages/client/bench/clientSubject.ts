/**
 * The `InferenceClient` as a benchmark subject: the layer built once in a `ManagedRuntime` (the
 * handshake happens there), then each measurement run as one Effect in that runtime, written as
 * an application would write it: a burst is `Effect.forEach` over `submit` with unbounded
 * concurrency (replies dropped as they arrive, as the baseline drops them), one-at-a-time round
 * trips a loop of `submit`s in one fiber.
 */
import { InferenceClient } from "@mcore-effect/client"
import type { SamplingParams } from "@mcore-effect/protocol"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import type { Subject } from "./subject.ts"

export const make = async (
  address: string,
  prompt: ReadonlyArray<number>,
  samplingParams: SamplingParams.SamplingParamsInput
): Promise<Subject> => {
  const runtime = ManagedRuntime.make(InferenceClient.layer({ address }))
  const client = await runtime.runPromise(Effect.gen(function*() {
    return yield* InferenceClient.InferenceClient
  }))
  const submit = () => client.submit(prompt, samplingParams)

  return {
    burst: (n) =>
      runtime.runPromise(
        Effect.forEach(new Array<undefined>(n), submit, { concurrency: "unbounded", discard: true })
      ),
    sequential: (n) =>
      runtime.runPromise(Effect.gen(function*() {
        const times = new Array<number>(n)
        for (let i = 0; i < n; i++) {
          const start = performance.now()
          yield* submit()
          times[i] = performance.now() - start
        }
        return times
      })),
    close: () => runtime.dispose()
  }
}
