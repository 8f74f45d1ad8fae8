/**
 * `mcore generate --address ADDR PROMPT`: one request against any coordinator (Megatron's or a
 * test one), its reply printed as text, as JSON (`--json`), or streamed (`--stream`) as tokens
 * arrive. Sampling flags map to the Python `SamplingParams` fields; the client validates them.
 *
 * @since 0.1.0
 */
import { type ClientError, InferenceClient } from "@mcore-effect/client"
// Named by the command's inferred error type.
import type { TextError } from "@mcore-effect/text"
import type { SamplingParams } from "@mcore-effect/protocol"
import { Vocabulary } from "@mcore-effect/testkit"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import { Argument, Command, Flag } from "effect/cli"
import { clientLayer } from "../ClientLayer.ts"
import * as Flags from "../Flags.ts"
import * as Json from "../Json.ts"
import * as Output from "../Output.ts"
import { intAtLeast } from "../Positive.ts"
import * as Replies from "../Replies.ts"
import * as TextOutput from "../TextOutput.ts"

const flags = {
  ...Flags.connection,
  stream: Flag.Boolean("stream").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Print tokens as they arrive (ENGINE_REPLY_PARTIAL)")
  ),
  json: Flag.Boolean("json").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Print the reply map as JSON (with --stream: one JSON line per event)")
  ),
  tokens: intAtLeast("tokens", 1).pipe(
    Flag.withAlias("n"),
    Flag.withDescription("num_tokens_to_generate"),
    Flag.optional
  ),
  temperature: Flag.Finite("temperature").pipe(Flag.withDescription("temperature (default 1.0)"), Flag.optional),
  topK: Flag.Int("top-k").pipe(Flag.withDescription("top_k (default 0: off)"), Flag.optional),
  topP: Flag.Finite("top-p").pipe(Flag.withDescription("top_p (default 0.0: off)"), Flag.optional),
  stop: Flag.String("stop").pipe(
    Flag.withDescription("A stop word (stop_words); repeat for several"),
    Flag.atLeast(0)
  ),
  terminationId: Flag.Int("termination-id").pipe(Flag.withDescription("termination_id"), Flag.optional),
  set: Flag.KeyValuePair("set").pipe(
    Flag.withDescription("Any other SamplingParams field, KEY=VALUE with VALUE as JSON (e.g. --set top_n_logprobs=3)"),
    Flag.optional
  ),
  timeout: Flags.duration("timeout").pipe(
    Flag.withDescription("Abort the request if it has not finished by then"),
    Flag.optional
  ),
  tokenIds: Flag.Boolean("token-ids").pipe(
    Flag.withDefault(false),
    Flag.withDescription("PROMPT is token ids (\"1 2 3\" or \"1,2,3\"), not text")
  ),
  testVocabulary: Flag.Boolean("test-vocabulary").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Print streamed tokens as words of the test engines' vocabulary (for mcore coordinator)")
  ),
  tokenizer: Flag.String("tokenizer").pipe(
    Flag.withMetavar("dir"),
    Flag.withDescription("A Hugging Face tokenizer directory: tokenize the prompt and print (or --stream) text here"),
    Flag.optional
  ),
  chat: Flag.Boolean("chat").pipe(
    Flag.withDefault(false),
    Flag.withDescription("PROMPT is a chat (JSON [{\"role\", \"content\"}...], or text as one user message), rendered with the tokenizer's chat template (needs --tokenizer)")
  ),
  chatTemplate: Flag.String("chat-template").pipe(
    Flag.withMetavar("file"),
    Flag.withDescription("A Jinja chat template file to use instead of the tokenizer's"),
    Flag.optional
  ),
  prompt: Argument.String("prompt").pipe(Argument.withDescription("The prompt"))
} as const

type Options = Command.Command.Config.Infer<typeof flags>

/** A `--set` value: JSON when it parses as JSON, else the string itself (`--set mode=fast`). */
const setValue = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

const samplingParams = (options: Options): SamplingParams.SamplingParamsInput => {
  const params: Record<string, unknown> = {}
  if (Option.isSome(options.set)) {
    for (const [key, value] of Object.entries(options.set.value)) params[key] = setValue(value)
  }
  const put = (key: string, value: Option.Option<unknown>) => {
    if (Option.isSome(value)) params[key] = value.value
  }
  put("num_tokens_to_generate", options.tokens)
  put("temperature", options.temperature)
  put("top_k", options.topK)
  put("top_p", options.topP)
  put("termination_id", options.terminationId)
  if (options.stop.length > 0) params.stop_words = options.stop
  return params
}

/**
 * The prompt as sent: text, or token ids with `--token-ids`. Anything that is not an id is kept
 * as `NaN`, so the client refuses it with its own `InvalidRequest`.
 */
const promptOf = (options: Options): InferenceClient.PromptInput =>
  options.tokenIds
    ? options.prompt.split(/[\s,]+/).filter((s) => s !== "").map((s) => (/^\d+$/.test(s) ? Number(s) : Number.NaN))
    : options.prompt

const text = (tokens: ReadonlyArray<number>, words: boolean): string =>
  tokens.map((id) => ` ${words ? Vocabulary.word(id) : String(id)}`).join("")

/** The reply as a person reads it: the generated text, or its token ids when it has no text. */
const printReply = (reply: InferenceClient.Reply) => {
  const decoded = Replies.typed(reply)
  if (Result.isFailure(decoded)) return Output.line(Json.stringify(reply))
  const { generated_text, generated_tokens } = decoded.success
  return Output.line(typeof generated_text === "string" ? generated_text : (generated_tokens ?? []).join(" "))
}

const streamed = (
  client: InferenceClient.Service,
  options: Options,
  params: SamplingParams.SamplingParamsInput,
  submit: InferenceClient.SubmitOptions
): Effect.Effect<void, ClientError.ClientError> =>
  Effect.suspend(() => {
    let printed = 0
    return client.stream(promptOf(options), params, submit).pipe(
      Stream.runForEach((event) => {
        if (options.json) {
          return Output.line(
            Json.stringify(
              event._tag === "Partial"
                ? { partial: { request_id: event.requestId, new_tokens: event.newTokens } }
                : { final: event.reply }
            )
          )
        }
        if (event._tag === "Partial") {
          printed += event.newTokens.length
          return Output.write(text(event.newTokens, options.testVocabulary))
        }
        // The last step's tokens come only in the final reply.
        const rest = Replies.generatedTokens(event.reply).slice(printed)
        return Output.line(text(rest, options.testVocabulary)).pipe(
          Effect.andThen(options.testVocabulary ? Effect.void : printReply(event.reply))
        )
      })
    )
  })

/**
 * The command.
 *
 * @example
 * ```sh
 * mcore generate --address tcp://127.0.0.1:5555 --tokens 16 "the quick fox"
 * mcore generate -a tcp://127.0.0.1:5555 --stream --test-vocabulary "the quick fox"
 * mcore generate -a tcp://127.0.0.1:5555 --json --temperature 0.7 --stop . "one two"
 * ```
 *
 * @since 0.1.0
 */
export const command = Command.make(
  "generate",
  flags,
  Effect.fn("mcore.generate")(function*(options) {
    const params = samplingParams(options)
    const submit: InferenceClient.SubmitOptions = { timeout: Option.getOrUndefined(options.timeout) }
    if (Option.isNone(options.tokenizer) && (options.chat || Option.isSome(options.chatTemplate))) {
      return yield* Effect.fail(new Error("--chat and --chat-template need --tokenizer DIR"))
    }
    yield* Effect.gen(function*() {
      const client = yield* InferenceClient.InferenceClient
      if (Option.isSome(options.tokenizer)) {
        const text = { ...options, tokenizer: options.tokenizer.value, prompt: promptOf(options) }
        return yield* TextOutput.run(client, text, params, submit)
      }
      if (options.stream) return yield* streamed(client, options, params, submit)
      const reply = yield* client.submit(promptOf(options), params, submit)
      yield* options.json ? Output.line(Json.stringify(reply)) : printReply(reply)
    }).pipe(Effect.provide(clientLayer(options)))
  })
).pipe(
  Command.withDescription("Send one request to a coordinator and print its reply"),
  Command.withExamples([
    { command: "mcore generate -a tcp://127.0.0.1:5555 -n 16 \"the quick fox\"", description: "Generate 16 tokens" },
    { command: "mcore generate -a tcp://127.0.0.1:5555 --stream \"the quick fox\"", description: "Stream the tokens" },
    { command: "mcore generate -a tcp://127.0.0.1:5555 --json \"the quick fox\"", description: "The whole reply map" },
    {
      command: "mcore generate -a tcp://127.0.0.1:5555 --tokenizer ./qwen3 --chat --stream \"Name three rivers\"",
      description: "Chat with a real model, streamed as text"
    }
  ])
)
