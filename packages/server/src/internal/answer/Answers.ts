/**
 * Where a plan's answer is written: the one place that reads which endpoint's answer it is
 * (`Plan.Answer`) and shapes it, as the records of a stream or as one JSON body. `Respond` asks;
 * nothing here calls back into an endpoint's handler.
 *
 * @since 0.2.0
 */
import type { Usage } from "../../OpenAiSchema.ts"
import type { ServerError } from "../../ServerError.ts"
import type { Answer, Finished, Meta, Plan } from "../Plan.ts"
import { ResponseEvents } from "./ResponseEvents.ts"
import * as ResponseObject from "./ResponseObject.ts"
import * as ChatChoices from "./ChatChoices.ts"
import * as CompletionChoices from "./CompletionChoices.ts"
import * as ForcedCall from "./ForcedCall.ts"
import type { Records } from "./Records.ts"

/**
 * The prefix of a response's id.
 *
 * @since 0.2.0
 */
export const idPrefix = (answer: Answer): string => {
  switch (answer._tag) {
    case "Chat":
      return "chatcmpl-"
    case "Completion":
      return "cmpl-"
    case "Responses":
      return "resp_"
  }
}

/**
 * The records of one stream of `plan`'s answer (its own: a reader keeps what it read so far).
 *
 * @since 0.2.0
 */
export const records = (plan: Plan, meta: Meta): Records => {
  const answer = plan.answer
  switch (answer._tag) {
    case "Chat":
      return new ChatChoices.ChatChunks(answer, meta, plan.includeUsage)
    case "Completion":
      return new CompletionChoices.CompletionChunks(answer, meta, plan.includeUsage)
    case "Responses":
      return new ResponseEvents(meta, answer.request, answer.tokenizer, answer.reading)
  }
}

/**
 * Whether a finished choice may be refused (a forced `tool_choice`): then a plain answer waits
 * for every choice and checks each with {@link refusal} before anything is written.
 *
 * @since 0.2.0
 */
export const mayRefuse = (answer: Answer): boolean =>
  answer._tag !== "Completion" && answer.reading?.forced !== undefined

/**
 * Why a finished choice of a plain answer cannot be given, if it cannot.
 *
 * @since 0.2.0
 */
export const refusal = (answer: Answer, finished: Finished): ServerError | undefined =>
  answer._tag === "Completion" ? undefined : ForcedCall.refusal(answer.reading, finished)

/**
 * The body of a plain answer from its finished choices (choice `p * n + j` the `j`th of prompt
 * `p`) and their usage.
 *
 * @since 0.2.0
 */
export const body = (plan: Plan, meta: Meta, finished: ReadonlyArray<Finished>, usage: Usage): unknown => {
  const answer = plan.answer
  switch (answer._tag) {
    case "Responses": {
      const one = finished[0]!
      const { reading, request, tokenizer } = answer
      const used = ResponseObject.usage(usage, ResponseObject.reasoningTokens(tokenizer, reading, one))
      return ResponseObject.response(meta, request, ResponseObject.statusOf(one), ResponseObject.output(reading, one), used)
    }
    case "Chat":
    case "Completion":
      return {
        id: meta.id,
        object: answer._tag === "Chat" ? "chat.completion" : "text_completion",
        created: meta.created,
        model: meta.model,
        choices: finished.map((choice, index) => choiceOf(plan, answer, index, choice)),
        usage,
        system_fingerprint: null
      }
  }
}

/**
 * A choice of a plain answer, as the plan's vLLM fields ask: `include_stop_str_in_output` puts
 * the stop string that ended it back at its end; `return_token_ids` adds its `token_ids` and, as
 * vLLM writes them, `prompt_token_ids` (a completions choice's own prompt's; for a chat, on every
 * choice, its one prompt).
 */
const choiceOf = (plan: Plan, answer: Answer & { readonly _tag: "Chat" | "Completion" }, index: number, finished: Finished): unknown => {
  const prompt = plan.prompts[Math.floor(index / plan.n)]!
  const shown: Finished = plan.includeStopString && finished.stopString !== undefined
    ? { ...finished, text: finished.text + finished.stopString }
    : finished
  const choice = answer._tag === "Chat"
    ? ChatChoices.choice(answer, index, shown)
    : CompletionChoices.choice(answer, index, shown, prompt)
  return plan.returnTokenIds ? { ...(choice as object), prompt_token_ids: prompt.ids, token_ids: finished.tokens } : choice
}
