/**
 * The block hashes the coordinator routes a submission by: the client's own (the
 * reference protocol's `blockHashes` body), or, when it sent nil or its dialect carries none, the
 * prompt's, hashed as Megatron's coordinator hashes it (the media cache key mixed in), then cut
 * down to what the policy looks at. Main's coordinator does not route a submission with
 * `multi_modal_data` by its prefix (`handlers.py`: image-bearing requests get no hashes).
 *
 * @since 0.1.0
 * @internal
 */
import { BlockHashes, type Frames, type Media, Messages, type MessageSpec } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import * as Routing from "../Routing.ts"
import type { CoordinatorTokenizer } from "../CoordinatorTokenizer.ts"
import { isNil } from "./wireFrames.ts"

type Codec = Frames.Codec<ReadonlyArray<MessageSpec.Any>>

/**
 * The hashes `policy` routes the SUBMIT_REQUEST `envelope` by, or why they cannot be read. Its
 * bodies are read with `codec`, the codec it was decoded with (default the reference protocol's).
 *
 * @internal
 */
export const routingHashes = (
  envelope: Frames.Envelope,
  policy: Routing.Policy,
  blockSizeTokens: number,
  tokenizer: CoordinatorTokenizer | undefined,
  codec: Codec = Messages.Client
): ReadonlyArray<bigint> | string | Refusal => {
  const bodies = envelope.spec.bodyKeys
  const media = bodies.indexOf("multiModalData")
  // Main's four-element SUBMIT_REQUEST has no media frame at all.
  const mediaFrame = media >= 0 ? envelope.frames[1 + media] : undefined
  if (mediaFrame !== undefined && !isNil(mediaFrame)) return []
  const descriptor = envelope.metadata.mediaDescriptor as Media.MediaDescriptor | null | undefined
  const hashes = hashesOf(codec, envelope, bodies.includes("blockHashes"), blockSizeTokens, tokenizer, descriptor?.media_cache_key ?? null)
  return typeof hashes === "string" || !Array.isArray(hashes) ? hashes : Routing.routingHashes(policy, hashes as ReadonlyArray<bigint>)
}

/** A submission the coordinator answers FAILED rather than route, and why. */
export interface Refusal {
  readonly refused: string
}

const NO_TOKENIZER = "a text prompt, and this coordinator has no tokenizer to hash it with for prefix routing: " +
  "send token ids, or give the coordinator the model's tokenizer"

/** The request's block hashes: the client's (the `blockHashes` body), or the prompt's own when there are none. */
const hashesOf = (
  codec: Codec,
  envelope: Frames.Envelope,
  clientHashes: boolean,
  blockSizeTokens: number,
  tokenizer: CoordinatorTokenizer | undefined,
  mediaKey: string | null
): ReadonlyArray<bigint> | string | Refusal => {
  if (clientHashes) {
    const given = codec.decodeBody(envelope, "blockHashes")
    if (Result.isFailure(given)) return given.failure.message
    if (given.success !== null) return Array.from(given.success as BigUint64Array)
  }
  const prompt = codec.decodeBody(envelope, "prompt")
  if (Result.isFailure(prompt)) return prompt.failure.message
  if (typeof prompt.success === "string" && tokenizer === undefined) return { refused: NO_TOKENIZER }
  const tokens = typeof prompt.success === "string"
    ? tokenizer!.tokenize(prompt.success)
    : prompt.success as ReadonlyArray<number>
  try {
    return Array.from(BlockHashes.blockHashes(tokens, blockSizeTokens, mediaKey))
  } catch (error) {
    return `cannot hash the prompt: ${String(error)}`
  }
}
