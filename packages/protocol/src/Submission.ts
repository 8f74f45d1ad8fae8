/**
 * Building the two submission messages from what a caller hands over, with every check done
 * before any frame exists: a bad prompt, bad parameters or unsupported media fail here, so
 * nothing is ever half-sent. (Offload params that msgpack cannot hold fail at encode, which also
 * happens before anything is sent.)
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as EncodedParams from "./internal/encodedParams.ts"
import * as Media from "./Media.ts"
import type * as Messages from "./Messages.ts"
import type * as MessageSpec from "./MessageSpec.ts"
import { Raw } from "./Msgpack.ts"
import { hashesFor, type HashingConfig } from "./PrefixHashing.ts"
import * as Prompt from "./Prompt.ts"
import { InvalidKvHandoff, type ProtocolError, protocolError } from "./ProtocolError.ts"
import * as SamplingParams from "./SamplingParams.ts"
import type { KvMeta } from "./WireTypes.ts"

/**
 * A SUBMIT_REQUEST message.
 *
 * @category models
 * @since 0.1.0
 */
export type SubmitRequest = MessageSpec.Type<typeof Messages.SubmitRequest>

/**
 * A SUBMIT_REQUEST_WITH_KV message.
 *
 * @category models
 * @since 0.1.0
 */
export type SubmitRequestWithKv = MessageSpec.Type<typeof Messages.SubmitRequestWithKv>

/**
 * What a caller submits.
 *
 * @category models
 * @since 0.1.0
 */
export interface SubmitInput {
  readonly requestId: number
  /** A string, or token ids (an array or an integer typed array). Checked here. */
  readonly prompt: unknown
  readonly samplingParams?: SamplingParams.SamplingParamsInput | undefined
  /** vLLM-style modality map: `image` and/or `video`. */
  readonly multiModalData?: Media.MultiModalData | null | undefined
  /** Opaque metadata for the engine's payload stager; any msgpack-encodable value. */
  readonly offloadParams?: unknown
  /** Force `streaming` on, for stream submissions. */
  readonly streaming?: boolean | undefined
}

/** Validated parameters, from the per-object cache (see `internal/encodedParams.ts`). */
const params = (
  input: SamplingParams.SamplingParamsInput | undefined,
  streaming: boolean | undefined
): Result.Result<SamplingParams.SamplingParams, ProtocolError> => EncodedParams.make(input, streaming === true)

/**
 * Builds a five-frame SUBMIT_REQUEST: validates the prompt and parameters, serializes the media
 * once (its exact bytes are both frame 3 and the input of its cache key), and hashes the prompt
 * when the deployment's configuration says this client should.
 *
 * @example
 * ```ts
 * import { Messages, Submission } from "@mcore-effect/protocol"
 * import { Result } from "effect"
 *
 * const message = Submission.submitRequest(
 *   { requestId: 0, prompt: [1, 2, 3, 4], samplingParams: { num_tokens_to_generate: 8 } },
 *   { blockSizeTokens: 2, prefixCachingPolicy: "longest_prefix" }
 * )
 * const frames = Result.flatMap(message, Messages.Client.encode) // five frames
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const submitRequest = (
  input: SubmitInput,
  hashing: HashingConfig
): Result.Result<SubmitRequest, ProtocolError> => {
  const prompt = Prompt.frame(input.prompt)
  if (Result.isFailure(prompt)) return Result.fail(prompt.failure)
  const samplingParams = params(input.samplingParams, input.streaming)
  if (Result.isFailure(samplingParams)) return Result.fail(samplingParams.failure)
  const media = Media.prepare(input.multiModalData)
  if (Result.isFailure(media)) return Result.fail(media.failure)
  const prepared = media.success
  return Result.succeed({
    _tag: "SubmitRequest",
    requestId: input.requestId,
    samplingParams: samplingParams.success,
    mediaDescriptor: prepared === null ? null : prepared.descriptor,
    prompt: prompt.success,
    // Checked by `Prompt.frame`, which encoded it.
    blockHashes: hashesFor(input.prompt as Prompt.Prompt, hashing, prepared?.cacheKey),
    media: prepared === null ? null : new Raw(prepared.frame),
    offloadParams: input.offloadParams ?? null
  })
}

/**
 * What a caller submits with a KV handoff.
 *
 * @category models
 * @since 0.1.0
 */
export interface SubmitWithKvInput {
  readonly requestId: number
  readonly prompt: unknown
  readonly samplingParams?: SamplingParams.SamplingParamsInput | undefined
  /** The prefill peer's KV export (NIXL agent and layout). */
  readonly kvMeta: KvMeta
  /** Remote block ids holding the request's KV state, one per block of the prompt. */
  readonly srcBlockIds: ReadonlyArray<number>
  readonly streaming?: boolean | undefined
}

/**
 * Builds a three-frame SUBMIT_REQUEST_WITH_KV.
 *
 * @example
 * ```ts
 * import { Submission } from "@mcore-effect/protocol"
 *
 * Submission.submitRequestWithKv({
 *   requestId: 3, prompt: [1, 2, 3], kvMeta: { agent: "prefill-0" }, srcBlockIds: [0]
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const submitRequestWithKv = (input: SubmitWithKvInput): Result.Result<SubmitRequestWithKv, ProtocolError> => {
  const prompt = Prompt.frame(input.prompt)
  if (Result.isFailure(prompt)) return Result.fail(prompt.failure)
  const samplingParams = params(input.samplingParams, input.streaming)
  if (Result.isFailure(samplingParams)) return Result.fail(samplingParams.failure)
  if (input.kvMeta === null || typeof input.kvMeta !== "object" || Array.isArray(input.kvMeta)) {
    return Result.fail(protocolError(new InvalidKvHandoff({ field: "kv_meta", why: "must be a map" })))
  }
  const ids = input.srcBlockIds
  if (!Array.isArray(ids) || !ids.every((id) => Number.isSafeInteger(id) && id >= 0)) {
    return Result.fail(
      protocolError(new InvalidKvHandoff({ field: "src_block_ids", why: "must be non-negative integers" }))
    )
  }
  return Result.succeed({
    _tag: "SubmitRequestWithKv",
    requestId: input.requestId,
    samplingParams: samplingParams.success,
    kvMeta: input.kvMeta,
    prompt: prompt.success,
    srcBlockIds: ids
  })
}
