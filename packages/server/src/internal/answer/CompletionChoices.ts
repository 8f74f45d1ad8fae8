/**
 * A completion's choices, plain (`choice`) and streamed (`CompletionChunks`): the text (after the
 * prompt, with `echo`) and OpenAI's completions log probs, `logprobs: k` giving each token's log
 * prob and, per token, the token and its top `k` (with `echo`, the prompt's too, the first
 * token's being `null` as OpenAI and vLLM write it).
 *
 * @since 0.2.0
 */
import type { TextGeneration, Tokenizer } from "@mcore-effect/text"
import type * as OpenAiSchema from "../../OpenAiSchema.ts"
import type { CompletionAnswer, Finished, Meta, Prompt } from "../Plan.ts"
import * as TopLogprobs from "../TopLogprobs.ts"
import { Chunks } from "./Chunks.ts"

/**
 * OpenAI's completions log probs for `ids`, whose texts start at `offset`: one entry per token in
 * each list; a token without a log prob (the prompt's first, with `echo`) has `null` in both
 * `token_logprobs` and `top_logprobs`, as vLLM writes it. `top` is the engine's alternatives per
 * token, `k` the request's `logprobs`.
 */
const logprobsOf = (
  tokenizer: Tokenizer.Service,
  ids: ReadonlyArray<number>,
  logprobs: ReadonlyArray<number | null | undefined>,
  top: ReadonlyArray<Readonly<Record<string, number>> | null | undefined>,
  k: number,
  offset: number
): OpenAiSchema.CompletionLogprobs => {
  const tokens: Array<string> = []
  const values: Array<number | null> = []
  const tops: Array<Record<string, number> | null> = []
  const offsets: Array<number> = []
  let at = offset
  for (let i = 0; i < ids.length; i++) {
    const token = tokenizer.decode([ids[i]!])
    const value = logprobs[i]
    tokens.push(token)
    values.push(value ?? null)
    // The token and its top `k` (vLLM's `logprobs + 1`).
    tops.push(value == null ? null : TopLogprobs.record(token, value, top[i], k + 1))
    offsets.push(at)
    at += token.length
  }
  return { tokens, token_logprobs: values, top_logprobs: tops, text_offset: offsets }
}

/** Where the text after `lp`'s tokens starts. */
const endOf = (lp: OpenAiSchema.CompletionLogprobs, start: number): number => {
  const last = lp.tokens.length - 1
  return last < 0 ? start : lp.text_offset[last]! + lp.tokens[last]!.length
}

/** `list`'s first `length` items, `undefined` past its end: positions stay aligned. */
const padded = <A>(list: ReadonlyArray<A> | undefined, length: number): Array<A | undefined> =>
  Array.from({ length }, (_, i) => list?.[i])

/**
 * A choice's log probs (`null` when none were asked for); without echo, its tokens' texts start
 * at `offset` (what went out before).
 */
const choiceLogprobs = (
  completion: CompletionAnswer,
  finished: Finished,
  prompt: Prompt,
  offset: number
): OpenAiSchema.CompletionLogprobs | null => {
  const { echo, logprobs: k, tokenizer } = completion
  if (k === undefined) return null
  const generated = finished.logprobs ?? []
  const top = finished.topLogprobs ?? []
  if (!echo) return logprobsOf(tokenizer, finished.tokens, generated, top, k, offset)
  // The prompt's first token has no log prob (nothing precedes it); the others' are aligned to
  // their tokens even when the engine sent fewer.
  const rest = prompt.ids.length - 1
  const ids = [...prompt.ids, ...finished.tokens]
  const values = [null, ...padded(finished.promptLogprobs, rest), ...generated]
  const tops = [null, ...padded(finished.promptTopLogprobs, rest), ...top]
  return logprobsOf(tokenizer, ids, values, tops, k, 0)
}

/**
 * A choice of a plain completion.
 *
 * @since 0.2.0
 */
export const choice = (completion: CompletionAnswer, index: number, finished: Finished, prompt: Prompt): unknown => ({
  index,
  text: completion.echo ? prompt.text + finished.text : finished.text,
  logprobs: choiceLogprobs(completion, finished, prompt, 0),
  finish_reason: finished.finishReason
})

/**
 * The records of a streamed completion. Log probs are streamed per chunk where the engines'
 * partials carry them: not with top log probs (partials carry no top tokens) nor with echo (the
 * prompt's come with the final reply); then all of them come with the closing chunk.
 *
 * @since 0.2.0
 */
export class CompletionChunks extends Chunks {
  // Per choice, where the next streamed token's text starts in the completion (`text_offset`).
  private readonly offsets: Array<number> = []

  constructor(private readonly completion: CompletionAnswer, meta: Meta, includeUsage: boolean) {
    super(meta, includeUsage)
  }

  protected get object(): string {
    return "text_completion"
  }

  protected openingChoice(index: number, prompt: Prompt): unknown {
    return this.completion.echo ? { index, text: prompt.text, logprobs: null, finish_reason: null } : undefined
  }

  protected deltaChoice(index: number, text: string): unknown {
    return { index, text, logprobs: null, finish_reason: null }
  }

  protected deltaLogprobsChoice(index: number, part: TextGeneration.TextDelta): unknown {
    const { echo, logprobs, tokenizer } = this.completion
    if (logprobs !== 0 || echo) return undefined
    const start = this.offsets[index] ?? 0
    // `logprobs: 0`: each token's entry is the token alone.
    const lp = logprobsOf(tokenizer, part.tokenIds, part.logProbs ?? [], [], 0, start)
    this.offsets[index] = endOf(lp, start)
    return { index, text: part.text, logprobs: lp, finish_reason: null }
  }

  protected closingChoice(index: number, finished: Finished, prompt: Prompt): unknown {
    return {
      index,
      text: "",
      logprobs: choiceLogprobs(this.completion, finished, prompt, this.offsets[index] ?? 0),
      finish_reason: finished.finishReason
    }
  }
}
