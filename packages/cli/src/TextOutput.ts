/**
 * `mcore generate --tokenizer DIR`: the request made and printed as text through
 * `@mcore-effect/text`, against any coordinator. The prompt is tokenized here (or, with `--chat`,
 * rendered with the tokenizer's chat template first) and token ids are submitted; the reply is
 * detokenized here, streamed text included (`--stream`), so it works with a real Megatron
 * deployment, whose replies carry no text.
 *
 * @since 0.1.0
 * @internal
 */
import type { ClientError, InferenceClient } from "@mcore-effect/client"
import type { SamplingParams } from "@mcore-effect/protocol"
import { ChatTemplate, TextError, TextGeneration, Tokenizer } from "@mcore-effect/text"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Json from "./Json.ts"
import * as Output from "./Output.ts"

/**
 * What the text path needs of `mcore generate`'s flags.
 *
 * @since 0.1.0
 */
export interface Options {
  /** The tokenizer directory. */
  readonly tokenizer: string
  /** The prompt is a chat: a JSON array of `{ role, content }` messages, or text as one user message. */
  readonly chat: boolean
  /** A chat template file overriding the tokenizer's. */
  readonly chatTemplate: Option.Option<string>
  readonly stream: boolean
  readonly json: boolean
  readonly stop: ReadonlyArray<string>
  /** The prompt as `mcore generate` parsed it: text, or ids with `--token-ids`. */
  readonly prompt: InferenceClient.PromptInput
}

const invalid = (name: string, why: string) =>
  Effect.fail(TextError.textError(new TextError.InvalidArgument({ name, why })))

/** A chat from the command line: JSON messages, or text as the user's one message. */
const chatOf = (text: string): Effect.Effect<TextGeneration.ChatPrompt, TextError.TextError> => {
  if (!text.trimStart().startsWith("[")) return Effect.succeed({ messages: [{ role: "user", content: text }] })
  let messages: unknown
  try {
    messages = JSON.parse(text)
  } catch (cause) {
    return invalid("--chat prompt", `not JSON: ${cause instanceof Error ? cause.message : String(cause)}`)
  }
  return Array.isArray(messages)
    ? Effect.succeed({ messages: messages as Array<ChatTemplate.Message> })
    : invalid("--chat prompt", "expected a JSON array of { role, content } messages")
}

const promptOf = (options: Options): Effect.Effect<TextGeneration.Prompt, TextError.TextError> => {
  const prompt = options.prompt
  if (typeof prompt !== "string") {
    return options.chat ? invalid("--chat", "takes messages, not --token-ids") : Effect.succeed({ tokens: Array.from(prompt) })
  }
  return options.chat ? chatOf(prompt) : Effect.succeed(prompt)
}

/**
 * Runs the request and prints its text: at once, or (`--stream`) delta by delta then a newline;
 * with `--json`, the whole generation (or one JSON line per streamed part).
 *
 * @since 0.1.0
 */
export const run = (
  client: InferenceClient.Service,
  options: Options,
  samplingParams: SamplingParams.SamplingParamsInput,
  submit: InferenceClient.SubmitOptions
): Effect.Effect<void, TextError.TextError | ClientError.ClientError> =>
  Effect.gen(function*() {
    const tokenizer = yield* Tokenizer.fromDirectory(options.tokenizer)
    const chatTemplate = Option.isSome(options.chatTemplate)
      ? yield* ChatTemplate.fromFile(options.chatTemplate.value, tokenizer)
      : undefined
    const text = yield* TextGeneration.make(client, tokenizer, { chatTemplate })
    const prompt = yield* promptOf(options)
    const generateOptions: TextGeneration.GenerateOptions = { samplingParams, stop: options.stop, timeout: submit.timeout }
    if (!options.stream) {
      const generation = yield* text.generate(prompt, generateOptions)
      return yield* Output.line(options.json ? Json.stringify(generation) : generation.text)
    }
    yield* text.stream(prompt, generateOptions).pipe(
      Stream.runForEach((part) =>
        options.json
          ? Output.line(Json.stringify(part))
          : part._tag === "TextDelta"
          ? Output.write(part.text)
          : Output.line()
      )
    )
  })
