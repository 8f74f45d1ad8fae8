/**
 * The checks every dialect's submission shares, in one place: the prompt, the parameters (as the
 * dialect serializes them), and what the dialect cannot carry (streaming, media, offload params,
 * client block hashes), each refused before a message exists.
 *
 * @since 0.2.0
 * @internal
 */
import * as Result from "effect/Result"
import { type Dialect, requireFeature, samplingParamsFor, unsupported } from "../../Dialect.ts"
import * as EncodedParams from "../encodedParams.ts"
import * as Media from "../../Media.ts"
import type * as Msgpack from "../../Msgpack.ts"
import { type HashingConfig, routesOnPrefixes } from "../../PrefixHashing.ts"
import * as Prompt from "../../Prompt.ts"
import type { ProtocolError } from "../../ProtocolError.ts"
import type * as SamplingParams from "../../SamplingParams.ts"
import type { SubmitInput } from "../../Submission.ts"

/**
 * A submission's checked parts.
 *
 * @internal
 */
export interface Parts {
  /** The prompt's msgpack bytes (`Prompt.frame`), written as they are. */
  readonly prompt: Msgpack.Raw
  readonly samplingParams: SamplingParams.SamplingParams
  readonly media: Media.PreparedMedia | null
}

/**
 * The parameters of a submission, validated (from the client's cache) and as the dialect
 * serializes them; a stream needs the dialect's partials.
 *
 * @internal
 */
export const paramsFor = (
  dialect: Dialect,
  input: SamplingParams.SamplingParamsInput | undefined,
  streaming: boolean | undefined
): Result.Result<SamplingParams.SamplingParams, ProtocolError> => {
  const made = EncodedParams.make(input, streaming === true)
  if (Result.isFailure(made)) return made
  if (made.success.streaming === true) {
    const ok = requireFeature(dialect, "streaming", `Megatron-LM ${dialect.megatron} sends no partial replies; nothing was sent`)
    if (Result.isFailure(ok)) return Result.fail(ok.failure)
  }
  return samplingParamsFor(dialect, made.success)
}

/**
 * Checks a SUBMIT_REQUEST's parts for a dialect whose coordinator hashes prompts itself and
 * takes no offload params.
 *
 * @internal
 */
export const parts = (dialect: Dialect, input: SubmitInput, hashing: HashingConfig): Result.Result<Parts, ProtocolError> => {
  const prompt = Prompt.frame(input.prompt)
  if (Result.isFailure(prompt)) return Result.fail(prompt.failure)
  const samplingParams = paramsFor(dialect, input.samplingParams, input.streaming)
  if (Result.isFailure(samplingParams)) return Result.fail(samplingParams.failure)
  if (routesOnPrefixes(hashing.prefixCachingPolicy) && hashing.blockSizeTokens != null) {
    return Result.fail(unsupported(
      dialect,
      "block hashes from the client",
      `Megatron-LM ${dialect.megatron}'s coordinator hashes prompts itself: set its prefix caching policy on the coordinator, not on the client`
    ))
  }
  if (input.offloadParams !== undefined && input.offloadParams !== null) {
    return Result.fail(unsupported(dialect, "offload params"))
  }
  let media: Media.PreparedMedia | null = null
  if (input.multiModalData !== undefined && input.multiModalData !== null) {
    if (!dialect.features.has("media")) return Result.fail(unsupported(dialect, "media (multi_modal_data)"))
    const prepared = Media.prepare(input.multiModalData)
    if (Result.isFailure(prepared)) return Result.fail(prepared.failure)
    media = prepared.success
  }
  return Result.succeed({ prompt: prompt.success, samplingParams: samplingParams.success, media })
}
