/**
 * The block hashes the test coordinator routes a submission by: the client's own (the
 * `blockHashes` body), or, when it sent nil, the prompt's, hashed as Megatron's coordinator
 * hashes it (the media cache key mixed in), then cut down to what the policy looks at.
 *
 * @since 0.1.0
 * @internal
 */
import { BlockHashes, type Frames, type Media, Messages } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import * as Routing from "./Routing.ts"
import * as Vocabulary from "./Vocabulary.ts"

/** The hashes `policy` routes the SUBMIT_REQUEST `envelope` by, or why they cannot be read. @internal */
export const routingHashes = (
  envelope: Frames.Envelope,
  policy: Routing.Policy,
  blockSizeTokens: number
): ReadonlyArray<bigint> | string => {
  const media = envelope.metadata.mediaDescriptor as Media.MediaDescriptor | null
  const hashes = hashesOf(envelope, blockSizeTokens, media?.media_cache_key ?? null)
  return typeof hashes === "string" ? hashes : Routing.routingHashes(policy, hashes)
}

/** The request's block hashes: the client's (the `blockHashes` body), or the prompt's own when it is nil. */
const hashesOf = (envelope: Frames.Envelope, blockSizeTokens: number, mediaKey: string | null): ReadonlyArray<bigint> | string => {
  const given = Messages.Client.decodeBody(envelope, "blockHashes")
  if (Result.isFailure(given)) return given.failure.message
  if (given.success !== null) return Array.from(given.success as BigUint64Array)
  const prompt = Messages.Client.decodeBody(envelope, "prompt")
  if (Result.isFailure(prompt)) return prompt.failure.message
  const tokens = typeof prompt.success === "string"
    ? Vocabulary.tokenize(prompt.success)
    : prompt.success as ReadonlyArray<number>
  try {
    return Array.from(BlockHashes.blockHashes(tokens, blockSizeTokens, mediaKey))
  } catch (error) {
    return `cannot hash the prompt: ${String(error)}`
  }
}
