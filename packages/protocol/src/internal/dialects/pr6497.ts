/**
 * Megatron-LM PR 6497 (`refs/pull/6497/head`, fe4e618222): the wire-schema refactor whose
 * `messages.py` declares each message as metadata fields plus payload frames. Multipart and the
 * IntEnum table, as the reference; its SUBMIT_REQUEST is two frames, `[20, request_id,
 * sampling_params]` and the prompt (no media, no client block hashes, no offload params: its
 * coordinator hashes prompts itself). Everything else is byte-identical to the reference.
 *
 * @since 0.2.0
 * @internal
 */
import * as Result from "effect/Result"
import { type Dialect, featuresOf } from "../../Dialect.ts"
import * as Frames from "../../Frames.ts"
import * as Headers from "../../Headers.ts"
import * as M from "../../Messages.ts"
import * as MessageSpec from "../../MessageSpec.ts"
import { KnownFields, SamplingParams } from "../../SamplingParams.ts"
import * as Submission from "../../Submission.ts"
import { RequestId } from "../../WireTypes.ts"
import { parts } from "./submissionParts.ts"

/**
 * `[20, request_id, sampling_params]` + the prompt frame.
 *
 * @internal
 */
export const SubmitRequest = MessageSpec.make("SubmitRequest", Headers.values.SUBMIT_REQUEST, {
  metadata: { requestId: RequestId, samplingParams: SamplingParams },
  bodies: { prompt: M.PromptBody }
})

const client = Frames.codec([
  M.Connect,
  SubmitRequest,
  M.SubmitRequestWithKv,
  ...M.controls
])

/** @internal */
export const pr6497: Dialect = {
  name: "pr-6497",
  megatron: "PR 6497 (refs/pull/6497/head)",
  framing: "multipart",
  headers: Headers.reference,
  features: featuresOf(Headers.reference),
  closedClientReply: "exit",
  samplingFields: Object.keys(KnownFields.fields),
  client,
  coordinator: M.Coordinator,
  engine: M.Engine,
  submit: (input, hashing) =>
    Result.map(parts(pr6497, input, hashing), (p) => ({
      _tag: "SubmitRequest",
      requestId: input.requestId,
      samplingParams: p.samplingParams,
      prompt: p.prompt
    })),
  // The reference's three frames, byte for byte (its sampling fields are this dialect's too).
  submitWithKv: (input) => Submission.submitRequestWithKv(input)
}
