/**
 * `generated_text` filled in by the test coordinator for replies that ask for it
 * (`needs_detokenize`), as Megatron's coordinator does (`finalize_text`), from the test
 * vocabulary.
 *
 * @since 0.1.0
 * @internal
 */
import { Msgpack, MsgpackScan, Values } from "@mcore-effect/protocol"
import * as Vocabulary from "./Vocabulary.ts"
import { tryDecode } from "./WireFrames.ts"

const { isPlainObject: isMap } = Values

const KEY_GENERATED_TEXT = Msgpack.encode("generated_text")
const KEY_GENERATED_TOKENS = Msgpack.encode("generated_tokens")
const KEY_SAMPLING_PARAMS = Msgpack.encode("sampling_params")
const KEY_DETOKENIZE_STOP_SEQUENCE = Msgpack.encode("detokenize_stop_sequence")

/**
 * The reply with `generated_text` replaced by the detokenized `generated_tokens`, or `undefined`
 * when the body is not a map holding both keys with a token array.
 */
const fillGeneratedText = (body: Uint8Array): Uint8Array | undefined => {
  const found = MsgpackScan.findInMap(body, 0, [KEY_GENERATED_TEXT, KEY_GENERATED_TOKENS, KEY_SAMPLING_PARAMS])
  if (found === undefined || found.end !== body.length) return undefined
  const [text, tokens, params] = found.values
  if (text === undefined || tokens === undefined) return undefined
  const ids = Msgpack.decode(body.subarray(tokens[0], tokens[1]))
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === "number")) return undefined
  let keepStopSequence = false
  if (params !== undefined) {
    const inner = MsgpackScan.findInMap(body, params[0], [KEY_DETOKENIZE_STOP_SEQUENCE])
    const flag = inner?.values[0]
    keepStopSequence = flag !== undefined && body[flag[0]] === 0xc3
  }
  const encoded = Msgpack.encode(Vocabulary.detokenize(ids, { removeEod: !keepStopSequence }))
  const out = new Uint8Array(body.length - (text[1] - text[0]) + encoded.length)
  out.set(body.subarray(0, text[0]), 0)
  out.set(encoded, text[0])
  out.set(body.subarray(text[1]), text[0] + encoded.length)
  return out
}

/**
 * Fills `generated_text` from the vocabulary (Megatron's `finalize_text`). The value is
 * spliced into the body's bytes; only `generated_tokens` is decoded. A body laid out in a way
 * the splice does not expect is decoded and re-encoded whole instead.
 *
 * @internal
 */
export const fill = (body: Buffer): Uint8Array => {
  try {
    const spliced = fillGeneratedText(body)
    if (spliced !== undefined) return spliced
  } catch {
    // Fall through to the slow path, which judges the body itself.
  }
  const reply = tryDecode(body)
  if (!isMap(reply) || !Array.isArray(reply.generated_tokens)) return body
  const params = isMap(reply.sampling_params) ? reply.sampling_params : {}
  reply.generated_text = Vocabulary.detokenize(reply.generated_tokens as Array<number>, {
    removeEod: params.detokenize_stop_sequence !== true
  })
  return Msgpack.encode(reply)
}
