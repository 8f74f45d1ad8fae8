/**
 * `mcore generate --address ADDR PROMPT`: one request against any coordinator (Megatron's or a
 * test one), its reply printed as text, as JSON (`--json`), or streamed (`--stream`) as tokens
 * arrive. Sampling flags map to the Python `SamplingParams` fields; the client validates them.
 *
 * @since 0.1.0
 */
import { type ClientError, Disaggregated, InferenceClient } from "@mcore-effect/client"
import { DialectCatalog, Prompt, SamplingParams } from "@mcore-effect/protocol"
// Named by the command's inferred error type.
import type { TextError } from "@mcore-effect/text"
import { Vocabulary } from "@mcore-effect/testkit"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import { Argument, CliError, Command, Flag } from "effect/cli"
import { clientLayer } from "../ClientLayer.ts"
import * as Flags from "../Flags.ts"
import * as Json from "../Json.ts"
import * as Output from "../Output.ts"
import * as Replies from "../Replies.ts"
import * as SettingFlags from "../SettingFlags.ts"
import * as TextOutput from "../TextOutput.ts"
import { integer, keyValues, number, parseInteger } from "../Values.ts"

const flags = {
  ...Flags.connection,
  // Optional here: a disaggregated request names its two coordinators instead (checked below).
  address: Flags.address.pipe(Flag.optional),
  prefillAddress: Flag.String("prefill-address").pipe(
    Flags.connectable,
    Flag.withMetavar("address"),
    Flag.withDescription(
      "The prefill coordinator of a disaggregated request (with --decode-address, instead of --address): prefilled there " +
        "with do_kv_handoff, decoded on the decode coordinator, the prefill's KV pin released once (protocols main, " +
        "pr-6497, reference; token ids or --tokenizer; no log probs)"
    ),
    Flag.optional
  ),
  decodeAddress: Flag.String("decode-address").pipe(
    Flags.connectable,
    Flag.withMetavar("address"),
    Flag.withDescription("The decode coordinator of a disaggregated request (see --prefill-address)"),
    Flag.optional
  ),
  stream: Flag.Boolean("stream").pipe(
    Flag.withDefault(false),
    Flag.withDescription("Print tokens as they arrive (ENGINE_REPLY_PARTIAL)")
  ),
  json: Flag.Boolean("json").pipe(
    Flag.withDefault(false),
    Flag.withDescription(
      "Print the reply map as JSON; its request_id is the coordinator's own id for the request. With --stream, " +
        "one JSON line per event, each with client_request_id (this client's id for the request, what an abort " +
        "names), the final one with coordinator_request_id too"
    )
  ),
  tokens: integer("tokens", 1).pipe(
    Flag.withAlias("n"),
    Flag.withDescription("num_tokens_to_generate"),
    Flag.optional
  ),
  temperature: number("temperature").pipe(Flag.withDescription("temperature (default 1.0)"), Flag.optional),
  topK: integer("top-k", 0).pipe(Flag.withDescription("top_k (default 0: off)"), Flag.optional),
  topP: number("top-p").pipe(Flag.withDescription("top_p (default 0.0: off)"), Flag.optional),
  stop: Flag.String("stop").pipe(
    Flag.withDescription("A stop word (stop_words); repeat for several"),
    Flag.atLeast(0)
  ),
  terminationId: integer("termination-id").pipe(Flag.withDescription("termination_id"), Flag.optional),
  set: keyValues("set", "top_n_logprobs=3").pipe(
    Flag.withDescription(
      "Any other sampling parameter, KEY=VALUE with VALUE as JSON (e.g. --set top_n_logprobs=3). A SamplingParams " +
        "field is set and checked; any other KEY is sent on purpose as an extra engine parameter (SamplingParams " +
        "extra, what Python's add_attributes sets), after the known fields"
    )
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

/** The SamplingParams fields: a `--set` key among them sets it, any other goes to `extra`. */
const KNOWN: ReadonlySet<string> = new Set(Object.keys(SamplingParams.defaults))

const samplingParams = (options: Options): SamplingParams.SamplingParamsInput => {
  const params: Record<string, unknown> = {}
  const extra: Record<string, unknown> = {}
  for (const [key, value] of options.set) {
    if (KNOWN.has(key)) params[key] = setValue(value)
    else extra[key] = setValue(value)
  }
  if (Object.keys(extra).length > 0) params.extra = extra
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

/** `--chat` and `--chat-template` render through a tokenizer's template: they need `--tokenizer`. */
/**
 * Where the request goes: `--address`, or `--prefill-address` with `--decode-address` (on a
 * protocol that carries the hand-off, and instead of `--address`).
 */
const targetOf = (
  options: Options
): Result.Result<ReadonlyArray<string> | { readonly prefill: string; readonly decode: string }, CliError.InvalidValue | CliError.MissingOption> => {
  const { decodeAddress, prefillAddress } = options
  if (Option.isNone(prefillAddress) && Option.isNone(decodeAddress)) {
    return Option.isSome(options.address) ? Result.succeed(options.address.value) : Result.fail(new CliError.MissingOption({ option: "address" }))
  }
  const bad = (option: string, value: string, expected: string) => Result.fail(new CliError.InvalidValue({ option, value, expected, kind: "flag" }))
  if (Option.isNone(prefillAddress)) return bad("decode-address", Option.getOrElse(decodeAddress, () => ""), "needs --prefill-address too")
  if (Option.isNone(decodeAddress)) return bad("prefill-address", prefillAddress.value, "needs --decode-address too")
  if (Option.isSome(options.address)) return bad("address", options.address.value.join(","), "not with --prefill-address and --decode-address")
  if (!DialectCatalog.get(options.protocol).features.has("kvHandoff")) {
    return bad("protocol", options.protocol, "a protocol that carries the KV hand-off (main, pr-6497, reference) with --prefill-address")
  }
  return Result.succeed({ prefill: prefillAddress.value, decode: decodeAddress.value })
}

const textFlagsOf = (options: Options): Result.Result<void, CliError.InvalidValue> =>
  Option.isNone(options.tokenizer) && (options.chat || Option.isSome(options.chatTemplate))
    ? Result.fail(
      new CliError.InvalidValue({
        option: options.chat ? "chat" : "chat-template",
        value: options.chat ? "true" : Option.getOrElse(options.chatTemplate, () => ""),
        expected: "needs --tokenizer DIR (the chat template is the tokenizer's)",
        kind: "flag"
      })
    )
    : Result.void

/** A refused PROMPT: the module's own error, so it is shown and exits like any bad value (code 2). */
const badPrompt = (value: string, why: string) =>
  new CliError.InvalidValue({ option: "prompt", value, expected: why, kind: "argument" })

/** The prompt as sent: text, or token ids with `--token-ids` (the first word that is not one is named). */
const promptOf = (options: Options): Result.Result<InferenceClient.PromptInput, CliError.InvalidValue> => {
  const words = options.tokenIds ? options.prompt.split(/[\s,]+/).filter((s) => s !== "") : undefined
  const ids: Array<number> = []
  for (const [index, word] of (words ?? []).entries()) {
    const id = parseInteger(word, 0)
    if (Option.isNone(id)) {
      return Result.fail(badPrompt(
        options.prompt,
        `${JSON.stringify(word)} (at index ${index}) is not a token id; with --token-ids, expected non-negative integers such as "1 2 3" or "1,2,3"`
      ))
    }
    ids.push(id.value)
  }
  const prompt = words === undefined ? options.prompt : ids
  const checked = Prompt.validate(prompt)
  if (Result.isFailure(checked)) {
    const reason = checked.failure.reason
    return Result.fail(badPrompt(options.prompt, reason._tag === "InvalidPrompt" ? reason.why : checked.failure.message))
  }
  return Result.succeed(prompt)
}

/** The flag each sampling field has, when it has one (the rest come from --set). */
const flagOf = (options: Options): Record<string, readonly [string, Option.Option<unknown>]> => ({
  num_tokens_to_generate: ["tokens", options.tokens],
  temperature: ["temperature", options.temperature],
  top_k: ["top-k", options.topK],
  top_p: ["top-p", options.topP],
  termination_id: ["termination-id", options.terminationId],
  stop_words: ["stop", options.stop.length > 0 ? Option.some(options.stop.join(" ")) : Option.none()]
})

/**
 * The sampling parameters as the client will check them, refused here first (before any
 * connection) and blamed on the flag that set the field: `--temperature -1`, or `--set
 * temperature=-1` when it came from there.
 */
const paramsOf = (options: Options): Result.Result<SamplingParams.SamplingParamsInput, CliError.InvalidValue> => {
  const params = samplingParams(options)
  const checked = SamplingParams.make(params)
  if (Result.isSuccess(checked)) return Result.succeed(params)
  const reason = checked.failure.reason
  const field = "field" in reason ? String(reason.field) : "sampling_params"
  const why = ("why" in reason ? String(reason.why) : checked.failure.message)
    .replace(/^must be /, "expected ")
    .replace(/, got [^;]*$/, "")
  const flag = flagOf(options)[field]
  if (flag !== undefined && Option.isSome(flag[1])) {
    return Result.fail(new CliError.InvalidValue({ option: flag[0], value: String(flag[1].value), expected: why, kind: "flag" }))
  }
  // An extra key's failures name it `extra.KEY`; --set wrote it as KEY.
  const key = field.startsWith("extra.") ? field.slice("extra.".length) : field
  const set = options.set.filter(([k]) => k === key).at(-1)
  return Result.fail(new CliError.InvalidValue({
    option: "set",
    value: set === undefined ? field : `${set[0]}=${set[1]}`,
    expected: `${field}: ${why}`,
    kind: "flag"
  }))
}

const text = (tokens: ReadonlyArray<number>, words: boolean): string =>
  tokens.map((id) => ` ${words ? Vocabulary.word(id) : String(id)}`).join("")

/** The reply as a person reads it: the generated text, or its token ids when it has no text. */
const printReply = (reply: InferenceClient.Reply) => {
  const decoded = Replies.typed(reply)
  if (Result.isFailure(decoded)) return Output.line(Json.stringify(reply))
  const { generated_text, generated_tokens } = decoded.success
  return Output.line(typeof generated_text === "string" ? generated_text : (generated_tokens ?? []).join(" "))
}

/** The coordinator's own id for the request: `request_id` in the reply map (its numbering, across all clients). */
const coordinatorId = (reply: InferenceClient.Reply): unknown => {
  const decoded = Replies.typed(reply)
  return Result.isSuccess(decoded) ? decoded.success.request_id ?? null : null
}

/**
 * The `--stream --json` lines of one request, each naming which id is which: new tokens as
 * `{client_request_id, partial: {new_tokens}}`, the end as `{client_request_id,
 * coordinator_request_id, final: <the reply map>}`. The client's id comes with the partials; a
 * fresh client numbers its requests from 0, and this one sends one, so 0 until a partial says.
 */
const jsonLines = () => {
  let clientRequestId = 0
  return (event: InferenceClient.StreamEvent): string => {
    if ("newTokens" in event) {
      clientRequestId = event.requestId
      return Json.stringify({ client_request_id: event.requestId, partial: { new_tokens: event.newTokens } })
    }
    return Json.stringify({
      client_request_id: clientRequestId,
      coordinator_request_id: coordinatorId(event.reply),
      final: event.reply
    })
  }
}

const streamed = (
  client: InferenceClient.Service,
  options: Options,
  prompt: InferenceClient.PromptInput,
  params: SamplingParams.SamplingParamsInput,
  submit: InferenceClient.SubmitOptions
): Effect.Effect<void, ClientError.ClientError> =>
  Effect.suspend(() => {
    let printed = 0
    const json = jsonLines()
    return client.stream(prompt, params, submit).pipe(
      Stream.runForEach((event) => {
        if (options.json) return Output.line(json(event))
        if (event._tag === "Tokens") {
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

/** The client for the target: one coordinator's, or the disaggregated one over two. */
const layerOf = (
  options: Options,
  target: ReadonlyArray<string> | { readonly prefill: string; readonly decode: string }
): Layer.Layer<InferenceClient.InferenceClient, ClientError.ClientError> =>
  !("prefill" in target)
    ? clientLayer({ ...options, address: target })
    : Disaggregated.layer({
      client: { ...SettingFlags.given(Flags.clientSettingsBesidesAddress, options), protocol: options.protocol },
      prefill: [target.prefill],
      decode: [target.decode]
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
    // Checked already by the validation below, before any connection: these cannot fail here.
    const prompt = yield* Effect.fromResult(promptOf(options))
    const params = yield* Effect.fromResult(paramsOf(options))
    const submit: InferenceClient.SubmitOptions = { timeout: Option.getOrUndefined(options.timeout) }
    yield* Effect.gen(function*() {
      const client = yield* InferenceClient.InferenceClient
      if (Option.isSome(options.tokenizer)) {
        const text = { ...options, tokenizer: options.tokenizer.value, prompt }
        return yield* TextOutput.run(client, text, params, submit)
      }
      if (options.stream) return yield* streamed(client, options, prompt, params, submit)
      const reply = yield* client.submit(prompt, params, submit)
      yield* options.json ? Output.line(Json.stringify(reply)) : printReply(reply)
    }).pipe(Effect.provide(layerOf(options, yield* Effect.fromResult(targetOf(options)))))
  })
).pipe(
  // A bad prompt or sampling value is a usage error (exit code 2), found before connecting.
  Command.validate((options) =>
    Effect.andThen(Effect.fromResult(promptOf(options)), Effect.fromResult(paramsOf(options))).pipe(
      Effect.andThen(Effect.fromResult(textFlagsOf(options))),
      Effect.andThen(Effect.fromResult(targetOf(options))),
      Effect.asVoid
    )
  ),
  Command.withDescription("Send one request to a coordinator and print its reply"),
  Command.withExamples([
    { command: "mcore generate -a tcp://127.0.0.1:5555 -n 16 \"the quick fox\"", description: "Generate 16 tokens" },
    { command: "mcore generate -a tcp://127.0.0.1:5555 --stream \"the quick fox\"", description: "Stream the tokens" },
    { command: "mcore generate -a tcp://127.0.0.1:5555 --json \"the quick fox\"", description: "The whole reply map" },
    {
      command:
        "mcore generate --prefill-address tcp://127.0.0.1:5555 --decode-address tcp://127.0.0.1:5556 --protocol main --token-ids \"1 2 3\"",
      description: "One disaggregated request: prefill on one coordinator, decode on the other"
    },
    {
      command: "mcore generate -a tcp://127.0.0.1:5555 --tokenizer ./qwen3 --chat --stream \"Name three rivers\"",
      description: "Chat with a real model, streamed as text"
    }
  ])
)
