/**
 * A generation's text, token by token ({@link Progress}: the detokenizer, the ids consumed, eos
 * and stop strings), the request as `TextGeneration` submits it ({@link Plan}), and the fields of
 * a reply it reads ({@link viewOf}): what `TextGeneration`'s `generate` and `stream` share.
 *
 * @since 0.1.0
 * @internal
 */
import { ClientError, InferenceClient } from "@mcore-effect/client"
import { Reply, type SamplingParams } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import * as Detokenizer from "../Detokenizer.ts"
import type { FinishReason, Generation } from "./generationTypes.ts"
import type * as Tokenizer from "../Tokenizer.ts"

/** The fields of a reply the text layer reads, whichever form the client hands over. */
export interface ReplyView {
  readonly coordinatorRequestId: number | undefined
  readonly generatedTokens: ReadonlyArray<number>
  readonly cachedTokens: number
  readonly logProbs: ReadonlyArray<number> | undefined
  readonly topLogProbs: ReadonlyArray<Readonly<Record<string, number>>> | undefined
  readonly promptLogProbs: ReadonlyArray<number> | undefined
  readonly promptTopLogProbs: ReadonlyArray<Readonly<Record<string, number>>> | undefined
}

/**
 * The fields the text layer reads, or why the reply cannot be read: a raw reply map (the client's
 * default) is decoded here, and one whose known fields have the wrong types fails its request
 * with the client's own `MalformedReply`, as a typed reply would have. A reply `FAILED` fails it
 * with `RequestFailed`: its tokens, if any, are not an answer.
 */
export const viewOf = (reply: InferenceClient.Reply, requestId: number | undefined): ReplyView | ClientError.ClientError => {
  // core_v0.16 replies with the request's record: its requests merged (one per checkpoint).
  const request = InferenceClient.requestOf(reply)
  const typed = InferenceClient.isDeserialized(request) ? Result.succeed(request) : Reply.decodeReply(request)
  if (Result.isFailure(typed)) {
    return ClientError.clientError(new ClientError.MalformedReply({ requestId: requestId ?? -1, why: typed.failure.message }))
  }
  const r = typed.success
  if (r.status === "FAILED") {
    // The reason is the FAIL event's payload (Megatron's engines and our coordinator write one).
    const fail = r.events?.find((event) => event["type"] === "FAIL")?.["payload"]
    const why = typeof fail === "string" ? fail : "the reply says FAILED and gives no reason"
    return ClientError.clientError(new ClientError.RequestFailed({ requestId: requestId ?? -1, why }))
  }
  return {
    coordinatorRequestId: r.request_id,
    generatedTokens: r.generated_tokens ?? [],
    cachedTokens: r.num_cached_tokens ?? 0,
    logProbs: r.generated_log_probs ?? undefined,
    topLogProbs: r.generated_top_n_logprobs ?? undefined,
    promptLogProbs: r.prompt_log_probs ?? undefined,
    promptTopLogProbs: r.prompt_top_n_logprobs ?? undefined
  }
}

/** The request as submitted: ids, sampling parameters and what ends the text. */
export interface Plan {
  readonly promptIds: ReadonlyArray<number>
  readonly params: SamplingParams.SamplingParamsInput
  readonly stop: ReadonlyArray<string>
  readonly eos: ReadonlySet<number>
  readonly skipSpecialTokens: boolean
  readonly budget: number | undefined
  readonly submit: InferenceClient.SubmitOptions
}

/**
 * What a generation's text is, token by token: the detokenizer, the ids consumed, and whether an
 * eos id or a stop string has ended it.
 */
export class Progress {
  readonly detokenizer: Detokenizer.Detokenizer
  readonly tokenIds: Array<number> = []
  text = ""
  ended = false
  requestId: number | undefined = undefined
  constructor(tokenizer: Tokenizer.Service, readonly plan: Plan) {
    this.detokenizer = Detokenizer.make(tokenizer, { skipSpecialTokens: plan.skipSpecialTokens, stop: plan.stop })
  }

  /** The text and the ids the last `feed` consumed. */
  fedText = ""
  fedIds: ReadonlyArray<number> = []

  /**
   * Feeds ids; sets `fedText` and `fedIds` to the new text and the ids consumed (the rest, past an
   * end, are dropped). Fields rather than a result object: this runs once per streamed token.
   */
  feed(ids: ReadonlyArray<number>): void {
    if (this.ended || ids.length === 0) {
      this.fedText = ""
      this.fedIds = []
      return
    }
    let take = ids.length
    const eos = this.plan.eos
    for (let i = 0; i < ids.length; i++) {
      if (eos.has(ids[i]!)) {
        take = i + 1
        this.ended = true
        break
      }
    }
    const taken = take === ids.length ? ids : ids.slice(0, take)
    const before = this.detokenizer.tokenCount
    let text = this.detokenizer.push(taken)
    const consumed = this.detokenizer.tokenCount - before
    const used = consumed === taken.length ? taken : taken.slice(0, consumed)
    if (this.detokenizer.stopString !== undefined) this.ended = true
    if (this.ended) text += this.detokenizer.finish()
    for (let i = 0; i < used.length; i++) this.tokenIds.push(used[i]!)
    this.text += text
    this.fedText = text
    this.fedIds = used
  }

  /** The end of the reply: the rest of the held text. */
  close(): string {
    const rest = this.detokenizer.finish()
    this.text += rest
    return rest
  }

  result(view: ReplyView | undefined, aborted: boolean): Generation {
    const plan = this.plan
    const count = this.tokenIds.length
    const finishReason: FinishReason = aborted
      ? "aborted"
      : this.ended || plan.budget === undefined || count < plan.budget
      ? "stop"
      : "length"
    const cachedTokens = view?.cachedTokens ?? 0
    return {
      text: this.text,
      tokenIds: this.tokenIds,
      promptTokenIds: plan.promptIds,
      finishReason,
      stopString: this.detokenizer.stopString,
      usage: {
        promptTokens: plan.promptIds.length,
        completionTokens: count,
        cachedTokens,
        totalTokens: plan.promptIds.length + count
      },
      logProbs: view?.logProbs?.slice(0, count),
      topLogProbs: view?.topLogProbs?.slice(0, count),
      promptLogProbs: view?.promptLogProbs,
      promptTopLogProbs: view?.promptTopLogProbs,
      requestId: this.requestId,
      coordinatorRequestId: view?.coordinatorRequestId
    }
  }
}
