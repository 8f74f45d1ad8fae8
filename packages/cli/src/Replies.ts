/**
 * Reading a reply the client handed over, whichever form it has: the client is built with
 * `deserialize: false` so `--json` can print the reply map exactly as it came, and the typed view
 * comes from the protocol's own decoder when a field is needed.
 *
 * @since 0.1.0
 * @internal
 */
import { InferenceClient } from "@mcore-effect/client"
import { type ProtocolError, Reply } from "@mcore-effect/protocol"
import * as Result from "effect/Result"

/**
 * The typed view of a reply.
 *
 * @example
 * ```ts
 * import { Result } from "effect"
 * import { typed } from "./Replies.ts"
 *
 * const reply = typed({ latency: 0.1, generated_tokens: ["tensor", [5, 6]] })
 * if (Result.isSuccess(reply)) reply.success.generated_tokens // [5, 6]
 * ```
 *
 * @since 0.1.0
 */
export const typed = (
  reply: InferenceClient.Reply
): Result.Result<Reply.DynamicInferenceRequest, ProtocolError.ProtocolError> => {
  // core_v0.16 replies with the request's record: its requests merged are the one read.
  const request = InferenceClient.requestOf(reply)
  return InferenceClient.isDeserialized(request) ? Result.succeed(request) : Reply.decodeReply(request)
}

/**
 * The generated tokens of a reply (none when it carries none, or cannot be read).
 *
 * @since 0.1.0
 */
export const generatedTokens = (reply: InferenceClient.Reply): ReadonlyArray<number> => {
  const decoded = typed(reply)
  return Result.isSuccess(decoded) ? decoded.success.generated_tokens ?? [] : []
}
