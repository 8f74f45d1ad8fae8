/**
 * The reference protocol: the five-frame SUBMIT_REQUEST (metadata, prompt, block hashes, media,
 * offload params) of the project's reference document, multipart, the IntEnum header table.
 * Every feature. No released Megatron-LM speaks it; it stays the default, and everything the
 * testkit and the vectors check is checked in it.
 *
 * @since 0.2.0
 * @internal
 */
import { type Dialect, featuresOf } from "../../Dialect.ts"
import * as Headers from "../../Headers.ts"
import * as Messages from "../../Messages.ts"
import * as SamplingParams from "../../SamplingParams.ts"
import * as Submission from "../../Submission.ts"

/** @internal */
export const reference: Dialect = {
  name: "reference",
  megatron: "the reference protocol (five-frame SUBMIT_REQUEST)",
  framing: "multipart",
  headers: Headers.reference,
  features: new Set([...featuresOf(Headers.reference), "media", "blockHashes", "offloadParams"]),
  // The testkit coordinator counts such replies and drops them (its undelivered report).
  closedClientReply: "drop",
  samplingFields: Object.keys(SamplingParams.KnownFields.fields),
  client: Messages.Client,
  coordinator: Messages.Coordinator,
  engine: Messages.Engine,
  submit: (input, hashing) => Submission.submitRequest(input, hashing),
  submitWithKv: (input) => Submission.submitRequestWithKv(input)
}
