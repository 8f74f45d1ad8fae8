/**
 * Part one of the demo: prompts streamed one at a time, their tokens printed as words the moment
 * each partial reply arrives, as a chat frontend would.
 *
 * @since 0.1.0
 * @internal
 */
import type { ClientError, InferenceClient } from "@mcore-effect/client"
import { Vocabulary } from "@mcore-effect/testkit"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Output from "../Output.ts"
import * as Replies from "../Replies.ts"
import * as Stats from "./Stats.ts"

/**
 * What one streamed prompt measured.
 *
 * @since 0.1.0
 */
export interface Streamed {
  readonly prompt: string
  readonly tokens: number
  /** Milliseconds from the start of the stream to its first tokens. */
  readonly timeToFirstTokenMillis: number
  /** The reply's own `latency`, in milliseconds. */
  readonly latencyMillis: number
}

const words = (tokens: ReadonlyArray<number>): string => tokens.map((id) => ` ${Vocabulary.word(id)}`).join("")

/**
 * Streams one prompt, writing `prompt -> tokens...` on one line as the tokens arrive.
 *
 * @example
 * ```ts
 * import { InferenceClient } from "@mcore-effect/client"
 * import { Effect } from "effect"
 * import { streamOne } from "./Streaming.ts"
 *
 * const program = Effect.gen(function*() {
 *   const client = yield* InferenceClient.InferenceClient
 *   return yield* streamOne(client, "the quick fox", 12)
 * })
 * ```
 *
 * @since 0.1.0
 */
export const streamOne = Effect.fn("demo.streamOne")(function*(
  client: InferenceClient.Service,
  prompt: string,
  tokens: number
): Effect.fn.Return<Streamed, ClientError.ClientError> {
  yield* Output.write(`  ${prompt} ->`)
  const startedAt = performance.now()
  let firstAt = Number.NaN
  let count = 0
  let latencyMillis = Number.NaN
  yield* client.stream(prompt, { num_tokens_to_generate: tokens }).pipe(
    Stream.runForEach((event) => {
      if (event._tag === "Final") {
        latencyMillis = (event.reply.latency ?? Number.NaN) * 1000
        // The step that finishes a request sends the final reply, not one more partial: its
        // last tokens are only in the reply.
        const rest = Replies.generatedTokens(event.reply).slice(count)
        count += rest.length
        return Output.write(words(rest))
      }
      if (count === 0) firstAt = performance.now()
      count += event.newTokens.length
      return Output.write(words(event.newTokens))
    })
  )
  const timeToFirstTokenMillis = firstAt - startedAt
  yield* Output.line(`   [${count} tokens, first after ${Stats.millis(timeToFirstTokenMillis)}]`)
  return { prompt, tokens: count, timeToFirstTokenMillis, latencyMillis }
})

/**
 * Streams each prompt in turn.
 *
 * @since 0.1.0
 */
export const run = Effect.fn("demo.streaming")(function*(
  client: InferenceClient.Service,
  prompts: ReadonlyArray<string>,
  tokens: number
): Effect.fn.Return<ReadonlyArray<Streamed>, ClientError.ClientError> {
  const out: Array<Streamed> = []
  for (const prompt of prompts) out.push(yield* streamOne(client, prompt, tokens))
  return out
})
