/**
 * The body of `POST /v1/responses` (OpenAI's Responses API) as Schema. The body's own fields are
 * decoded strictly here, as the other endpoints' are (`OpenAiSchema.decode`: a field of the wrong
 * type, out of range or unknown is a 400 naming it), once the fields that change nothing are
 * sifted out (`IgnoredFields`, in `Responses`); its input items, tools, `tool_choice` and
 * `text.format` are kept as JSON objects and read by type (`ResponsesInput`), so that an item or
 * tool of a type this server does not take is refused by its type's name rather than by the first
 * key it does not know. Each item type it does take is a strict Schema of its own, below.
 *
 * @since 0.2.0
 */
import * as Schema from "effect/Schema"
import * as ToolSchema from "./internal/tools/ToolSchema.ts"

const optionalNullable = <S extends Schema.Top>(schema: S) => Schema.optionalKey(Schema.NullOr(schema))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))
const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/**
 * The body of `POST /v1/responses`.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ResponsesRequest = Schema.Struct({
  model: Schema.optionalKey(Schema.String),
  input: Schema.Union([Schema.String, Schema.Array(JsonObject)]),
  instructions: optionalNullable(Schema.String),
  max_output_tokens: optionalNullable(NonNegativeInt),
  temperature: optionalNullable(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 2 }))),
  top_p: optionalNullable(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 1 }))),
  stream: optionalNullable(Schema.Boolean),
  stream_options: optionalNullable(Schema.Struct({ include_obfuscation: optionalNullable(Schema.Boolean) })),
  tools: optionalNullable(Schema.Array(JsonObject)),
  tool_choice: optionalNullable(Schema.Union([Schema.String, JsonObject])),
  parallel_tool_calls: optionalNullable(Schema.Boolean),
  max_tool_calls: optionalNullable(NonNegativeInt),
  reasoning: optionalNullable(Schema.Struct({
    effort: optionalNullable(ToolSchema.ReasoningEffort),
    summary: optionalNullable(Schema.String),
    generate_summary: optionalNullable(Schema.String)
  })),
  text: optionalNullable(Schema.Struct({
    format: optionalNullable(JsonObject),
    verbosity: optionalNullable(Schema.String)
  })),
  truncation: optionalNullable(Schema.Literals(["auto", "disabled"])),
  include: optionalNullable(Schema.Array(Schema.String)),
  top_logprobs: optionalNullable(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 20 }))),
  // Stateful: refused unless absent, null or their "nothing stored" value (see ResponsesInput;
  // `store` is `IgnoredFields`', as on the other endpoints).
  background: optionalNullable(Schema.Boolean),
  previous_response_id: optionalNullable(Schema.String),
  conversation: optionalNullable(Schema.Unknown),
  prompt: optionalNullable(Schema.Unknown),
  context_management: optionalNullable(Schema.Unknown),
  moderation: optionalNullable(Schema.Unknown),
  // Repeated in the response, as vLLM does; it changes nothing else. The other fields that change
  // nothing (`store: false`, `service_tier`, ...) are `IgnoredFields`' (see `Responses`).
  metadata: optionalNullable(Schema.Record(Schema.String, Schema.String)),
  // Routing keys over several coordinators (internal/RoutingKey), repeated in the response.
  prompt_cache_key: optionalNullable(Schema.String),
  user: optionalNullable(Schema.String)
})

/**
 * @since 0.2.0
 * @category models
 */
export type ResponsesRequest = typeof ResponsesRequest.Type

/**
 * A content part of a message item: read by its `type` (`input_text`, `output_text`); the others
 * are refused by name.
 */
const Part = JsonObject

/**
 * A message item: `type` may be left out (the easy input message).
 *
 * @since 0.2.0
 * @category schemas
 */
export const MessageItem = Schema.Struct({
  type: Schema.optionalKey(Schema.Literal("message")),
  role: Schema.Literals(["user", "system", "developer", "assistant"]),
  content: Schema.Union([Schema.String, Schema.Array(Part)]),
  id: optionalNullable(Schema.String),
  status: optionalNullable(Schema.String),
  phase: optionalNullable(Schema.String)
})

/**
 * A text part (`input_text` of any role; `output_text` of the assistant's, as a response gave it).
 *
 * @since 0.2.0
 * @category schemas
 */
export const TextPart = Schema.Struct({
  type: Schema.Literals(["input_text", "output_text"]),
  text: Schema.String,
  annotations: Schema.optionalKey(Schema.Array(Schema.Unknown)),
  logprobs: optionalNullable(Schema.Array(Schema.Unknown))
})

/**
 * A function call the model made (a response's output item, sent back with its result).
 *
 * @since 0.2.0
 * @category schemas
 */
export const FunctionCallItem = Schema.Struct({
  type: Schema.Literal("function_call"),
  call_id: Schema.String,
  name: Schema.String,
  arguments: Schema.String,
  id: optionalNullable(Schema.String),
  status: optionalNullable(Schema.String)
})

/**
 * The result of a function call: a text, or text parts.
 *
 * @since 0.2.0
 * @category schemas
 */
export const FunctionCallOutputItem = Schema.Struct({
  type: Schema.Literal("function_call_output"),
  call_id: Schema.String,
  output: Schema.Union([Schema.String, Schema.Array(Part)]),
  id: optionalNullable(Schema.String),
  status: optionalNullable(Schema.String)
})

/**
 * A reasoning item of an earlier response: its text (`content`, as this server writes it) goes
 * back to the template with the assistant turn it preceded.
 *
 * @since 0.2.0
 * @category schemas
 */
export const ReasoningItem = Schema.Struct({
  type: Schema.Literal("reasoning"),
  id: optionalNullable(Schema.String),
  summary: Schema.Array(Schema.Struct({ type: Schema.Literal("summary_text"), text: Schema.String })),
  content: optionalNullable(Schema.Array(Schema.Struct({ type: Schema.Literal("reasoning_text"), text: Schema.String }))),
  encrypted_content: optionalNullable(Schema.String),
  status: optionalNullable(Schema.String)
})

/**
 * A function tool, in the Responses shape (`name` at the top, not under `function`).
 *
 * @since 0.2.0
 * @category schemas
 */
export const FunctionTool = Schema.Struct({
  type: Schema.Literal("function"),
  name: ToolSchema.FunctionName,
  description: optionalNullable(Schema.String),
  parameters: optionalNullable(JsonObject),
  strict: optionalNullable(Schema.Boolean)
})

/**
 * `tool_choice` naming a function.
 *
 * @since 0.2.0
 * @category schemas
 */
export const FunctionChoice = Schema.Struct({
  type: Schema.Literal("function"),
  name: Schema.String
})
