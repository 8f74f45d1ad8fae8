/**
 * The README's example: text generation and the Effect AI `LanguageModel` over a coordinator.
 * It runs as is against the testkit's coordinator and engines with their word-level tokenizer:
 *
 *     node --conditions=source --import tsx packages/text/examples/quickstart.ts
 *
 * Against a Megatron deployment, give `InferenceClient.layer` its coordinator's address and
 * `Tokenizer.layer` its model's tokenizer directory, and drop the test cluster.
 */
import { type ClientError, InferenceClient } from "@mcore-effect/client"
import { TestCluster, type TestkitError, WordTokenizer } from "@mcore-effect/testkit"
import { LanguageModel as Megatron, type TextError, TextGeneration, Tokenizer } from "@mcore-effect/text"
import { Effect, Layer, Stream } from "effect"
import { type AiError, LanguageModel } from "effect/ai"
import { fileURLToPath } from "node:url"

/** Chat, stream, and ask the LanguageModel; returns the three texts. */
export const program: Effect.Effect<
  { readonly chat: string; readonly streamed: string; readonly languageModel: string },
  TestkitError.TestkitError | ClientError.ClientError | TextError.TextError | AiError.AiError
> = Effect.gen(function*() {
  const cluster = yield* TestCluster.make({ engines: 2, engine: { stepMs: 5 } })
  const tokenizerDirectory = yield* WordTokenizer.directory

  const text = TextGeneration.layer().pipe(
    Layer.provide(Tokenizer.layer(tokenizerDirectory)),
    Layer.provide(InferenceClient.layer({ address: cluster.address, protocol: cluster.protocol }))
  )
  const layers = Megatron.layer.pipe(Layer.provideMerge(text))

  return yield* Effect.gen(function*() {
    const generation = yield* TextGeneration.TextGeneration

    // A chat, rendered with the tokenizer's chat template, answered at once.
    const answer = yield* generation.generate(
      { messages: [{ role: "system", content: "be quick" }, { role: "user", content: "the red fox" }] },
      { samplingParams: { num_tokens_to_generate: 8 } }
    )
    console.log(`chat: ${answer.text} (${answer.finishReason}, ${answer.usage.completionTokens} tokens)`)

    // Streamed text: deltas as tokens arrive (the final reply's tail included), then a summary.
    let streamed = ""
    yield* generation.stream("the quick fox", { samplingParams: { num_tokens_to_generate: 12 }, stop: [" river"] }).pipe(
      Stream.runForEach((part) =>
        Effect.sync(() => {
          if (part._tag === "TextDelta") streamed += part.text
          else console.log(`stream: ${part.text} (${part.finishReason})`)
        })
      )
    )

    // Effect AI: LanguageModel.generateText against the same deployment.
    const response = yield* LanguageModel.generateText({ prompt: "one two three" }).pipe(
      Megatron.withConfigOverride({ samplingParams: { num_tokens_to_generate: 6 } })
    )
    console.log(`LanguageModel: ${response.text} (${response.finishReason})`)
    return { chat: answer.text, streamed, languageModel: response.text }
  }).pipe(Effect.provide(layers))
}).pipe(Effect.scoped)

if (process.argv[1] === fileURLToPath(import.meta.url)) Effect.runPromise(program)
