/**
 * Megatron-LM main (refs/heads/main at d98e8a64dd, after core_v0.19): every message one msgpack
 * frame, the IntEnum table with every header. SUBMIT_REQUEST is `[20, request_id, prompt,
 * sampling_params]`, or `[20, request_id, prompt, sampling_params, multi_modal_data]` with media
 * (main's coordinator takes either, `handlers.py:86`; coordinators branched before media, such
 * as PR 6639's, only the first), SUBMIT_REQUEST_WITH_KV `[24, request_id, prompt,
 * sampling_params, kv_meta, src_block_ids]`; replies `[21, request_id, reply]` and partials
 * `[22, request_id, partial]`; an engine step's replies `[21, [reply, ...]]` and partials
 * `[22, [partial, ...]]`, each reply naming the coordinator's id in its `request_id`. The
 * coordinator hashes prompts itself (so no client block hashes) and takes no offload params.
 *
 * @since 0.2.0
 * @internal
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { type Dialect, featuresOf } from "../../Dialect.ts"
import * as Frames from "../../Frames.ts"
import * as Headers from "../../Headers.ts"
import { MediaWire } from "../../Media.ts"
import { Raw } from "../../Msgpack.ts"
import * as M from "../../Messages.ts"
import * as MessageSpec from "../../MessageSpec.ts"
import { PartialReply, ReplyMap } from "../../Reply.ts"
import { KnownFields, SamplingParams } from "../../SamplingParams.ts"
import * as Submission from "../../Submission.ts"
import { IntList, KvMeta, RequestId } from "../../WireTypes.ts"
import { parts } from "./submissionParts.ts"

const H = Headers.values

/**
 * `[20, request_id, prompt, sampling_params]`, or with media `[20, request_id, prompt,
 * sampling_params, multi_modal_data]`. Main's coordinator reads three fields after the header
 * as `multi_modal_data = None` (`handlers.py:86`), so the four elements with no media and the
 * five that Megatron's own client sends (its media always there, nil without any) are one
 * request to it; a coordinator branched before media (PR 6639's frontend capacity benchmark)
 * unpacks exactly three fields and dies on five. `multiModalData` absent: four elements; present
 * (nil included, as Megatron's client sends it): five.
 *
 * @internal
 */
export const SubmitRequest = MessageSpec.make("SubmitRequest", H.SUBMIT_REQUEST, {
  metadata: { requestId: RequestId },
  bodies: {
    prompt: M.PromptBody,
    samplingParams: SamplingParams,
    multiModalData: Schema.optionalKey(Schema.NullOr(Schema.Union([MediaWire, M.RawFrame])))
  }
})

/**
 * `[24, request_id, prompt, sampling_params, kv_meta, src_block_ids]`.
 *
 * @internal
 */
export const SubmitRequestWithKv = MessageSpec.make("SubmitRequestWithKv", H.SUBMIT_REQUEST_WITH_KV, {
  metadata: { requestId: RequestId },
  bodies: { prompt: M.PromptBody, samplingParams: SamplingParams, kvMeta: KvMeta, srcBlockIds: IntList }
})

/**
 * An engine step's finished requests: `[21, [reply, ...]]`.
 *
 * @internal
 */
export const EngineReplyBatch = MessageSpec.make("EngineReplyBatch", H.ENGINE_REPLY, {
  metadata: {},
  bodies: { replies: Schema.Array(ReplyMap) }
})

/**
 * An engine step's partials: `[22, [partial, ...]]`.
 *
 * @internal
 */
export const EngineReplyPartialBatch = MessageSpec.make("EngineReplyPartialBatch", H.ENGINE_REPLY_PARTIAL, {
  metadata: {},
  bodies: { partials: Schema.Array(PartialReply) }
})

const single = { framing: "single", headers: Headers.reference } as const

/** @internal */
export const main: Dialect = {
  name: "main",
  megatron: "main (d98e8a64dd)",
  framing: "single",
  headers: Headers.reference,
  features: new Set([...featuresOf(Headers.reference), "media"]),
  closedClientReply: "exit",
  samplingFields: Object.keys(KnownFields.fields),
  client: Frames.codec([
    M.Connect,
    SubmitRequest,
    SubmitRequestWithKv,
    ...M.controls
  ], single),
  coordinator: Frames.codec([M.ConnectAck, M.EngineReply, M.EngineReplyPartial], single),
  engine: Frames.codec([EngineReplyBatch, EngineReplyPartialBatch, M.Disconnect], single),
  submit: (input, hashing) =>
    Result.map(parts(main, input, hashing), (p) =>
      p.media === null
        // Four elements: what main's coordinator and those branched before media all take.
        ? { _tag: "SubmitRequest", requestId: input.requestId, prompt: p.prompt, samplingParams: p.samplingParams }
        : {
          _tag: "SubmitRequest",
          requestId: input.requestId,
          prompt: p.prompt,
          samplingParams: p.samplingParams,
          // The same bytes the reference sends as its media frame.
          multiModalData: new Raw(p.media.frame)
        }),
  // The reference's message; only the layout differs.
  submitWithKv: (input) => Submission.submitRequestWithKv(input)
}
