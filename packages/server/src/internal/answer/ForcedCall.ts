/**
 * A forced `tool_choice` checked in the reply: what a chat completion and a response answer in
 * place of text where a call was asked for and not made, plain or streamed.
 *
 * @since 0.2.0
 */
import { serverError, type ServerError, ToolChoiceNotMet } from "../../ServerError.ts"
import type { Finished } from "../Plan.ts"
import * as AssistantReply from "../tools/AssistantReply.ts"

/**
 * The error of a reply that does not meet a forced `tool_choice` (`AssistantReply.unmet`), or
 * `undefined`.
 *
 * @since 0.2.0
 */
export const notMet = (
  reading: AssistantReply.Reading,
  reply: AssistantReply.Reply,
  finished: Finished
): ServerError | undefined => {
  const why = AssistantReply.unmet(reading, reply, finished.finishReason)
  if (why === undefined) return undefined
  const name = reading.forced?.name
  return serverError(new ToolChoiceNotMet({ choice: name === undefined ? "\"required\"" : `function ${JSON.stringify(name)}`, why }))
}

/**
 * Why a finished plain answer cannot be given (its whole text read as a reply), when its reading
 * forces a call; `undefined` when it does not, or when the call was made.
 *
 * @since 0.2.0
 */
export const refusal = (reading: AssistantReply.Reading | undefined, finished: Finished): ServerError | undefined =>
  reading?.forced === undefined ? undefined : notMet(reading, AssistantReply.read(reading, finished.text, true), finished)
