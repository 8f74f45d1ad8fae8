/**
 * OpenAI's request bodies for `/v1/chat/completions` and `/v1/completions` as Schema (what is
 * validated, once), and the response and chunk shapes this server writes. A field of the wrong
 * type, out of range or unknown is refused with a 400 naming it ({@link decode}); a parameter that
 * would change the result and is not supported is refused by the handlers, never ignored.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"
import * as SchemaParser from "effect/SchemaParser"
import * as JsonDepth from "./internal/JsonDepth.ts"
import { badRequest, type ServerError } from "./ServerError.ts"
import * as ToolSchema from "./internal/tools/ToolSchema.ts"

/**
 * An integer from `min` to `max`. Not `Schema.Int`: it takes only safe integers and says
 * "Expected an integer" of `2**53`, which is one; out of range, this names the bound.
 *
 * @since 0.1.0
 * @category schemas
 */
export const intBetween = (min: number, max: number) =>
  Schema.Number.check(Schema.makeFilter((n: number) =>
    !Number.isInteger(n)
      ? "Expected an integer"
      : n < min || n > max
      ? `Expected an integer from ${min} to ${max}, got ${n}`
      : true
  ))

/**
 * Largest `top_k`: Megatron's engines hold it in an int32 tensor.
 *
 * @since 0.1.0
 * @category limits
 */
export const MAX_TOP_K = 2 ** 31 - 1

const SafeInt = intBetween(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)
/** A token count: exact as a JSON number; the context length (`ContextLength.tokensToGenerate`) bounds it after. */
const TokenCount = intBetween(0, Number.MAX_SAFE_INTEGER)
const PositiveInt = intBetween(1, Number.MAX_SAFE_INTEGER)
const optionalNullable = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/**
 * Most choices one request may ask for (`n`, times the prompts of a completions request).
 *
 * @since 0.1.0
 * @category limits
 */
export const MAX_CHOICES = 128

/**
 * Most stop strings (OpenAI allows 4; engines cope with more).
 *
 * @since 0.1.0
 * @category limits
 */
export const MAX_STOP = 16

/**
 * `stop`: one string or a list of them.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Stop = Schema.Union([
  Schema.String,
  Schema.Array(Schema.String).check(Schema.isMaxLength(MAX_STOP))
])

/**
 * `stream_options`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const StreamOptions = Schema.Struct({
  include_usage: optionalNullable(Schema.Boolean),
  continuous_usage_stats: optionalNullable(Schema.Boolean)
})

/**
 * vLLM's extension parameters (what vLLM's OpenAI server takes beyond OpenAI's fields), spread
 * into both request schemas; the server takes each at its neutral value, maps those it can
 * honour, and refuses the rest by name.
 *
 * @since 0.2.0
 * @category schemas
 */
export const vllmFields = {
  repetition_penalty: optionalNullable(Schema.Finite.check(Schema.isGreaterThan(0))),
  length_penalty: optionalNullable(Schema.Finite),
  min_p: optionalNullable(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))),
  min_tokens: optionalNullable(NonNegativeInt),
  use_beam_search: optionalNullable(Schema.Boolean),
  skip_special_tokens: optionalNullable(Schema.Boolean),
  spaces_between_special_tokens: optionalNullable(Schema.Boolean),
  truncate_prompt_tokens: optionalNullable(Schema.Int),
  allowed_token_ids: optionalNullable(Schema.Array(NonNegativeInt)),
  bad_words: optionalNullable(Schema.Array(Schema.String)),
  stop_token_ids: optionalNullable(Schema.Array(NonNegativeInt)),
  prompt_logprobs: optionalNullable(NonNegativeInt),
  priority: optionalNullable(Schema.Int),
  ignore_eos: optionalNullable(Schema.Boolean),
  include_stop_str_in_output: optionalNullable(Schema.Boolean),
  stream_interval: optionalNullable(Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))),
  add_special_tokens: optionalNullable(Schema.Boolean),
  return_token_ids: optionalNullable(Schema.Boolean)
}

/**
 * vLLM's extension parameters as a request holds them.
 *
 * @since 0.2.0
 * @category models
 */
export type VllmFields = Schema.Struct<typeof vllmFields>["Type"]

/** Fields both endpoints take, with OpenAI's ranges. */
const sampling = {
  model: Schema.optionalKey(Schema.String),
  max_tokens: optionalNullable(TokenCount),
  temperature: optionalNullable(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 2 }))),
  top_p: optionalNullable(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))),
  /** Extension (vLLM's): 0 or -1 means no top-k. */
  top_k: optionalNullable(intBetween(-1, MAX_TOP_K)),
  n: optionalNullable(intBetween(1, MAX_CHOICES)),
  stream: optionalNullable(Schema.Boolean),
  stream_options: optionalNullable(StreamOptions),
  stop: optionalNullable(Stop),
  seed: optionalNullable(SafeInt),
  presence_penalty: optionalNullable(Schema.Finite.check(Schema.isBetween({ minimum: -2, maximum: 2 }))),
  frequency_penalty: optionalNullable(Schema.Finite.check(Schema.isBetween({ minimum: -2, maximum: 2 }))),
  logit_bias: optionalNullable(Schema.Record(Schema.String, Schema.Finite)),
  // Routing keys over several coordinators (internal/RoutingKey): strings, or null for none.
  prompt_cache_key: optionalNullable(Schema.String),
  user: optionalNullable(Schema.String),
  // `metadata`, `store`... are accepted and ignored before the decode (IgnoredFields).
  // vLLM's extension parameters (`VllmParams` reads them).
  ...vllmFields
}

/**
 * `image_url` of an image part: a `data:` URL or an `http(s)` one. `detail` is taken and ignored,
 * as vLLM does: the engine's image preprocessing decides the resolution.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ImageUrl = Schema.Struct({
  url: Schema.String,
  detail: optionalNullable(Schema.Literals(["auto", "low", "high"]))
})

/**
 * A part of a message's content: `text` (with `text`) or `image_url` (with `image_url`); the
 * type is checked when the messages are read (`ChatMessages`), so that any other part (audio,
 * video, files) is refused by name, saying what it is.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ContentPart = Schema.Struct({
  type: Schema.String,
  text: Schema.optionalKey(Schema.String),
  image_url: Schema.optionalKey(ImageUrl),
  // The other parts' payloads, taken so that the part is refused for what it is (audio, video,
  // a file) by `ChatMessages`, not for an unknown key.
  input_audio: Schema.optionalKey(Schema.Unknown),
  audio_url: Schema.optionalKey(Schema.Unknown),
  video_url: Schema.optionalKey(Schema.Unknown),
  file: Schema.optionalKey(Schema.Unknown),
  image_embeds: Schema.optionalKey(Schema.Unknown)
})

/**
 * One chat message. `content` may be null for an assistant turn that made tool calls.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatMessage = Schema.Struct({
  role: Schema.Literals(["system", "developer", "user", "assistant", "tool"]),
  content: Schema.optionalKey(Schema.NullOr(Schema.Union([Schema.String, Schema.Array(ContentPart)]))),
  name: Schema.optionalKey(Schema.String),
  tool_call_id: Schema.optionalKey(Schema.String),
  tool_calls: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.Unknown))),
  refusal: optionalNullable(Schema.String),
  // An assistant turn's reasoning sent back, under either name (vLLM takes both; this server
  // answers with both): the template gets it as `reasoning_content` and `reasoning`.
  reasoning_content: optionalNullable(Schema.String),
  reasoning: optionalNullable(Schema.String),
  // The rest of an assistant message as OpenAI's and vLLM's responses write it, so that a client
  // can send a response's message back as it came: `annotations` (citations, never rendered) at
  // any value; `audio` and `function_call` only at null (`ChatMessages` refuses others).
  annotations: optionalNullable(Schema.Array(Schema.Unknown)),
  audio: optionalNullable(Schema.Unknown),
  function_call: optionalNullable(Schema.Unknown)
})

/**
 * @since 0.1.0
 * @category models
 */
export type ChatMessage = typeof ChatMessage.Type

/**
 * The body of `POST /v1/chat/completions`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const ChatCompletionRequest = Schema.Struct({
  ...sampling,
  messages: Schema.Array(ChatMessage).check(Schema.isMinLength(1)),
  max_completion_tokens: optionalNullable(TokenCount),
  logprobs: optionalNullable(Schema.Boolean),
  top_logprobs: optionalNullable(intBetween(0, 20)),
  // Tool calls and reasoning (see internal/ToolRequest).
  tools: optionalNullable(Schema.Array(ToolSchema.Tool)),
  tool_choice: optionalNullable(ToolSchema.ToolChoice),
  chat_template_kwargs: optionalNullable(ToolSchema.ChatTemplateKwargs),
  // Refused unless empty or neutral (see ChatCompletions).
  functions: optionalNullable(Schema.Array(Schema.Unknown)),
  function_call: optionalNullable(Schema.Unknown),
  parallel_tool_calls: optionalNullable(Schema.Boolean),
  response_format: optionalNullable(Schema.Struct({ type: Schema.String, json_schema: Schema.optionalKey(Schema.Unknown) })),
  modalities: optionalNullable(Schema.Array(Schema.String)),
  audio: optionalNullable(Schema.Unknown),
  prediction: optionalNullable(Schema.Unknown),
  reasoning_effort: optionalNullable(ToolSchema.ReasoningEffort),
  web_search_options: optionalNullable(Schema.Unknown)
})

/**
 * @since 0.1.0
 * @category models
 */
export type ChatCompletionRequest = typeof ChatCompletionRequest.Type

/**
 * `prompt` of a completions request: a text, a list of texts, token ids, or a list of token-id
 * lists.
 *
 * @since 0.1.0
 * @category schemas
 */
export const PromptInput = Schema.Union([
  Schema.String,
  Schema.Array(Schema.String).check(Schema.isMinLength(1)),
  // Any number here: each id is checked against the vocabulary (`Prompts.tokenPrompt`), which
  // says what is wrong with it (negative, not an integer, past the vocabulary) where the union
  // could only say "Expected string".
  Schema.Array(Schema.Number).check(Schema.isMinLength(1)),
  Schema.Array(Schema.Array(Schema.Number).check(Schema.isMinLength(1))).check(Schema.isMinLength(1))
])

/**
 * The body of `POST /v1/completions`.
 *
 * @since 0.1.0
 * @category schemas
 */
export const CompletionRequest = Schema.Struct({
  ...sampling,
  prompt: PromptInput,
  /** Top log probs per token, 0 to 5 (OpenAI's range); present asks for log probs at all. */
  logprobs: optionalNullable(intBetween(0, 20)),
  echo: optionalNullable(Schema.Boolean),
  best_of: optionalNullable(PositiveInt),
  suffix: optionalNullable(Schema.String)
})

/**
 * @since 0.1.0
 * @category models
 */
export type CompletionRequest = typeof CompletionRequest.Type

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

/** `["messages", 0, "role"]` -> `messages[0].role`. */
const pathName = (path: ReadonlyArray<PropertyKey>): string | null => {
  const out = JsonDepth.pathName(path)
  return out === "" ? null : out
}

/**
 * A decoder for a request body that refuses unknown keys and turns the first issue into a 400
 * naming the field. `common`, when given, recognises bodies the schema accepts as they are (see
 * `CommonShape`): those are taken without the Schema decode; every other body, and every error,
 * goes through it.
 *
 * @example
 * ```ts
 * import { OpenAiSchema } from "@mcore-effect/server"
 * import { Result } from "effect"
 *
 * const decode = OpenAiSchema.decode(OpenAiSchema.CompletionRequest)
 * const refused = decode({ prompt: "hi", temperature: 7 })
 * if (Result.isFailure(refused)) refused.failure.message // "temperature: Expected ..."
 * ```
 *
 * @since 0.1.0
 * @category schemas
 */
export const decode = <S extends Schema.Top & { readonly DecodingServices: never }>(
  schema: S,
  common?: ((body: unknown) => boolean) | undefined
) => {
  const parse = SchemaParser.decodeUnknownResult(schema as never, { onExcessProperty: "error", errors: "first" }) as (
    input: unknown
  ) => Result.Result<S["Type"], SchemaIssue.Issue>
  return (input: unknown): Result.Result<S["Type"], ServerError> => {
    if (typeof input !== "object" || input === null || Array.isArray(input)) {
      return Result.fail(badRequest(null, "the request body must be a JSON object"))
    }
    if (common !== undefined && common(input)) return Result.succeed(input as S["Type"])
    const decoded = parse(input)
    if (Result.isSuccess(decoded)) return Result.succeed(decoded.success)
    const first = formatter(decoded.failure).issues[0]
    const param = first?.path === undefined ? null : pathName(first.path as ReadonlyArray<PropertyKey>)
    const message = first?.message ?? "invalid request"
    const unknown = message === "Unexpected key" || message === "Expected no excess property"
    return Result.fail(badRequest(param, unknown ? "unknown parameter" : message))
  }
}

// ---------------------------------------------------------------------------------------------
// Responses (written by this server; plain shapes)
// ---------------------------------------------------------------------------------------------

/**
 * `finish_reason`.
 *
 * @since 0.1.0
 * @category models
 */
export type FinishReason = "stop" | "length" | "abort" | "tool_calls"

/**
 * `usage`, with cached prompt tokens.
 *
 * @since 0.1.0
 * @category models
 */
export interface Usage {
  readonly prompt_tokens: number
  readonly completion_tokens: number
  readonly total_tokens: number
  readonly prompt_tokens_details: { readonly cached_tokens: number }
}

/**
 * A chat log prob entry (`choices[].logprobs.content[]`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ChatLogprob {
  readonly token: string
  readonly logprob: number
  readonly bytes: ReadonlyArray<number>
  readonly top_logprobs: ReadonlyArray<{ readonly token: string; readonly logprob: number; readonly bytes: ReadonlyArray<number> }>
}

/**
 * The log probs of a completions choice.
 *
 * @since 0.1.0
 * @category models
 */
export interface CompletionLogprobs {
  readonly tokens: ReadonlyArray<string>
  readonly token_logprobs: ReadonlyArray<number | null>
  readonly top_logprobs: ReadonlyArray<Record<string, number> | null> | null
  readonly text_offset: ReadonlyArray<number>
}
