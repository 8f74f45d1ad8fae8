/**
 * A chat completion's choices, plain (`choice`) and streamed (`ChatChunks`): the message or its
 * deltas, OpenAI's chat log probs, and, when the replies are read, the tool calls and reasoning
 * read out of the text (`tools/AssistantReply`), a forced `tool_choice` checked (`ForcedCall`).
 *
 * @since 0.2.0
 */
import type { TextGeneration, Tokenizer } from "@mcore-effect/text"
import type * as OpenAiSchema from "../../OpenAiSchema.ts"
import type { ServerError } from "../../ServerError.ts"
import type { ChatAnswer, Finished, Meta, Prompt } from "../Plan.ts"
import * as AssistantReply from "../tools/AssistantReply.ts"
import * as TopLogprobs from "../TopLogprobs.ts"
import { Chunks } from "./Chunks.ts"
import * as ForcedCall from "./ForcedCall.ts"

/** Answers without log probs or reading, one per tokenizer: nothing made per request. */
const plainAnswers = new WeakMap<Tokenizer.Service, ChatAnswer>()

/**
 * A chat's answer: with neither log probs nor a reading of the replies, the same for every
 * request (PERFORMANCE.md#endpoint-shapes).
 *
 * @since 0.2.0
 */
export const answer = (
  tokenizer: Tokenizer.Service,
  logprobs: number | undefined,
  reading: AssistantReply.Reading
): ChatAnswer => {
  const reads = reading.reasoning !== undefined || reading.calls !== undefined
  if (logprobs !== undefined || reads) return { _tag: "Chat", tokenizer, logprobs, reading: reads ? reading : undefined }
  let plain = plainAnswers.get(tokenizer)
  if (plain === undefined) {
    plain = { _tag: "Chat", tokenizer, logprobs: undefined, reading: undefined }
    plainAnswers.set(tokenizer, plain)
  }
  return plain
}

const bytesOf = (token: string): Array<number> => Array.from(Buffer.from(token, "utf8"))

/** OpenAI's chat log probs of `tokens`, `top` alternatives per token. */
const chatLogprobs = (
  tokenizer: Tokenizer.Service,
  finished: Pick<Finished, "tokens" | "logprobs" | "topLogprobs">,
  top: number
): { readonly content: ReadonlyArray<OpenAiSchema.ChatLogprob> } => {
  const content: Array<OpenAiSchema.ChatLogprob> = []
  const values = finished.logprobs ?? []
  const tops = finished.topLogprobs ?? []
  for (let i = 0; i < finished.tokens.length; i++) {
    const token = tokenizer.decode([finished.tokens[i]!])
    const logprob = values[i] ?? 0
    // The token first, then the engine's alternatives, `top` in all (`TopLogprobs`).
    const alternatives = TopLogprobs.entries(token, logprob, tops[i], top).map(([t, lp]) => ({ token: t, logprob: lp, bytes: bytesOf(t) }))
    content.push({ token, logprob, bytes: bytesOf(token), top_logprobs: alternatives })
  }
  return { content }
}

/** A finished choice's log probs, `null` when none were asked for. */
const logprobsOf = (chat: ChatAnswer, finished: Finished) =>
  chat.logprobs === undefined ? null : chatLogprobs(chat.tokenizer, finished, chat.logprobs)

/** Reads a finished text as the message and finish reason of a choice. */
const readFinished = (reading: AssistantReply.Reading, finished: Finished) => {
  const reply = AssistantReply.read(reading, finished.text, true)
  const called = reply.calls.length > 0
  const message: Record<string, unknown> = {
    role: "assistant",
    content: called && reply.content === "" ? null : reply.content,
    refusal: null
  }
  if (reading.reasoning !== undefined) {
    // Under both names: `reasoning_content` (what vLLM wrote first, and DeepSeek's API) and
    // `reasoning` (vLLM's current name, `ChatMessage.reasoning` in its protocol).
    const reasoning = reply.reasoning === "" ? null : reply.reasoning
    message["reasoning_content"] = reasoning
    message["reasoning"] = reasoning
  }
  if (called) message["tool_calls"] = AssistantReply.toolCalls(reply.calls)
  return { message, finishReason: called && finished.finishReason === "stop" ? "tool_calls" as const : finished.finishReason }
}

/**
 * A choice of a plain chat completion.
 *
 * @since 0.2.0
 */
export const choice = (chat: ChatAnswer, index: number, finished: Finished): unknown => {
  if (chat.reading === undefined) {
    return {
      index,
      message: { role: "assistant", content: finished.text, refusal: null },
      logprobs: logprobsOf(chat, finished),
      finish_reason: finished.finishReason
    }
  }
  const read = readFinished(chat.reading, finished)
  return { index, message: read.message, logprobs: logprobsOf(chat, finished), finish_reason: read.finishReason }
}

/** The choice of a content chunk carrying `delta`. */
const chunk = (index: number, delta: unknown) => ({ index, delta, logprobs: null, finish_reason: null })

/**
 * The records of a streamed chat completion. When the replies are read, each choice's text is
 * read as it comes: each text gives zero or more chunks (reasoning, content, tool-call pieces),
 * the end the rest and the closing chunk, and a forced `tool_choice` not met refuses the choice.
 *
 * @since 0.2.0
 */
export class ChatChunks extends Chunks {
  // Per choice index, when the replies are read: what each choice read so far.
  private readonly readers: Array<AssistantReply.Deltas | undefined> = []

  constructor(private readonly chat: ChatAnswer, meta: Meta, includeUsage: boolean) {
    super(meta, includeUsage)
  }

  protected get object(): string {
    return "chat.completion.chunk"
  }

  protected openingChoice(index: number): unknown {
    return { index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }
  }

  protected deltaChoice(index: number, content: string): unknown {
    return chunk(index, { content })
  }

  protected deltaLogprobsChoice(index: number, part: TextGeneration.TextDelta): unknown {
    // Per chunk only without top log probs (the engines' partials carry no top tokens), and not
    // when the replies are read (a reader owns the text it is given; its chunks carry none).
    if (this.chat.logprobs !== 0 || this.chat.reading !== undefined) return undefined
    return {
      index,
      delta: { content: part.text },
      logprobs: chatLogprobs(this.chat.tokenizer, { tokens: part.tokenIds, logprobs: part.logProbs, topLogprobs: undefined }, 0),
      finish_reason: null
    }
  }

  protected closingChoice(index: number, finished: Finished): unknown {
    return { index, delta: {}, logprobs: logprobsOf(this.chat, finished), finish_reason: finished.finishReason }
  }

  private reader(index: number, reading: AssistantReply.Reading): AssistantReply.Deltas {
    return (this.readers[index] ??= new AssistantReply.Deltas(reading))
  }

  override delta(index: number, text: string): string {
    const reading = this.chat.reading
    if (reading === undefined) return super.delta(index, text)
    let records = ""
    for (const delta of this.reader(index, reading).push(text)) records += this.record(chunk(index, delta))
    return records
  }

  override closing(index: number, finished: Finished, prompt: Prompt): string {
    const reading = this.chat.reading
    if (reading === undefined) return super.closing(index, finished, prompt)
    const deltas = this.reader(index, reading)
    let records = ""
    for (const delta of deltas.end()) records += this.record(chunk(index, delta))
    const reason = deltas.calledTools && finished.finishReason === "stop" ? "tool_calls" : finished.finishReason
    return records + this.record({ index, delta: {}, logprobs: logprobsOf(this.chat, finished), finish_reason: reason })
  }

  override refusal(index: number, finished: Finished): ServerError | undefined {
    const reading = this.chat.reading
    if (reading?.forced === undefined) return undefined
    return ForcedCall.notMet(reading, this.reader(index, reading).final(), finished)
  }
}
