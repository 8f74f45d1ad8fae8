/**
 * The `InferenceClient` as a benchmark subject: the layer built once in a `ManagedRuntime` (the
 * handshake happens there), then each measurement run as one Effect in that runtime, written as
 * an application would write it. Two ways to fan out:
 *
 * - `submit`: a burst is `Effect.forEach` over `submit` with unbounded concurrency (replies
 *   dropped as they arrive, as the baseline drops them): one fiber per request;
 * - `submitAll`: a burst is one `submitAll` stream over the same request n times, drained.
 *
 * One-at-a-time round trips are a loop of `submit`s in one fiber either way. `protocol` picks the
 * dialect (the `main` subject: Megatron-LM main's one-frame messages).
 */
import { InferenceClient } from "@mcore-effect/client"
import type { Dialect, SamplingParams } from "@mcore-effect/protocol"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Stream from "effect/Stream"
import type { Subject } from "./measured.ts"

/** The same request `n` times, made as the batch reads it (no array of n requests held). */
const repeated = <A>(value: A, n: number): Iterable<A> => ({
  *[Symbol.iterator]() {
    for (let i = 0; i < n; i++) yield value
  }
})

export const make = async (
  address: string,
  prompt: ReadonlyArray<number>,
  samplingParams: SamplingParams.SamplingParamsInput,
  fanOut: "submit" | "submitAll",
  protocol: Dialect.Name = "reference"
): Promise<Subject> => {
  const runtime = ManagedRuntime.make(InferenceClient.layer({ address, protocol }))
  const client = await runtime.runPromise(Effect.gen(function*() {
    return yield* InferenceClient.InferenceClient
  }))
  const submit = () => client.submit(prompt, samplingParams)
  const request = { prompt, samplingParams }

  return {
    burst: (n) =>
      runtime.runPromise(
        fanOut === "submit"
          ? Effect.forEach(new Array<undefined>(n), submit, { concurrency: "unbounded", discard: true })
          : Stream.runDrain(client.submitAll(repeated(request, n)))
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
