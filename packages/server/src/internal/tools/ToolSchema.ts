/**
 * OpenAI's `tools`, `tool_choice` and `chat_template_kwargs` as Schema (a part of the chat
 * request's schema, `OpenAiSchema.ChatCompletionRequest`).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * A function's name as OpenAI allows it: letters, digits, `_` and `-`, at most 64.
 *
 * @since 0.1.0
 */
export const FunctionName = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9_.-]{1,64}$/))

/**
 * One of `tools`: a function, its description and its parameters' JSON schema.
 *
 * @since 0.1.0
 */
export const Tool = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({
    name: FunctionName,
    description: Schema.optionalKey(Schema.NullOr(Schema.String)),
    parameters: Schema.optionalKey(Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))),
    strict: Schema.optionalKey(Schema.NullOr(Schema.Boolean))
  })
})

/**
 * @since 0.1.0
 */
export type Tool = typeof Tool.Type

/**
 * `tool_choice`: `none`, `auto`, `required`, or a named function.
 *
 * @since 0.1.0
 */
export const ToolChoice = Schema.Union([
  Schema.Literals(["none", "auto", "required"]),
  Schema.Struct({ type: Schema.Literal("function"), function: Schema.Struct({ name: Schema.String }) })
])

/**
 * `reasoning_effort` (OpenAI's values).
 *
 * @since 0.1.0
 */
export const ReasoningEffort = Schema.Literals(["none", "minimal", "low", "medium", "high"])

/**
 * `chat_template_kwargs`: extra variables of the chat template (Qwen3's `enable_thinking`...),
 * JSON values by name.
 *
 * @since 0.1.0
 */
export const ChatTemplateKwargs = Schema.Record(Schema.String, Schema.Unknown)
