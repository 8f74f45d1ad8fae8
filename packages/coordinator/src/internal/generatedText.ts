/**
 * `generated_text` filled in by the coordinator, as Megatron's coordinator does
 * (`finalize_text`, `detokenize`), with the coordinator's tokenizer: for replies that ask for it
 * (`needs_detokenize`) in the reference protocol and PR 6497, for every reply in main and the
 * releases; and core_v0.17/18's `prompt` for a prompt given as token ids.
 *
 * @since 0.1.0
 * @internal
 */
import { Msgpack, MsgpackScan, Values } from "@mcore-effect/protocol"
import type { CoordinatorTokenizer } from "../CoordinatorTokenizer.ts"
import { tryDecode } from "./wireFrames.ts"

const { isPlainObject: isMap } = Values

const KEY_GENERATED_TEXT = Msgpack.encode("generated_text")
const KEY_GENERATED_TOKENS = Msgpack.encode("generated_tokens")
const KEY_SAMPLING_PARAMS = Msgpack.encode("sampling_params")
const KEY_DETOKENIZE_STOP_SEQUENCE = Msgpack.encode("detokenize_stop_sequence")
const KEY_PROMPT = Msgpack.encode("prompt")
const KEY_PROMPT_TOKENS = Msgpack.encode("prompt_tokens")

/** `body` with the bytes in `[start, end)` replaced by `value`. */
const splice = (body: Uint8Array, start: number, end: number, value: Uint8Array): Uint8Array => {
  const out = new Uint8Array(body.length - (end - start) + value.length)
  out.set(body.subarray(0, start), 0)
  out.set(value, start)
  out.set(body.subarray(end), start + value.length)
  return out
}

/**
 * The reply with `generated_text` replaced by the detokenized `generated_tokens`, or `undefined`
 * when the body is not a map holding both keys with a token array.
 */
const fillGeneratedText = (body: Uint8Array, tokenizer: CoordinatorTokenizer): Uint8Array | undefined => {
  // Read up to the last of the three keys only (the 14th of a Megatron reply's 36): the entries
  // after it go to the client as they came, unread.
  const found = MsgpackScan.findKeys(body, 0, [KEY_GENERATED_TEXT, KEY_GENERATED_TOKENS, KEY_SAMPLING_PARAMS])
  if (found === undefined) return undefined
  const [text, tokens, params] = found
  if (text === undefined || tokens === undefined) return undefined
  const ids = Msgpack.decode(body.subarray(tokens[0], tokens[1]))
  if (!Array.isArray(ids) || !ids.every((id) => typeof id === "number")) return undefined
  let keepStopSequence = false
  if (params !== undefined) {
    const flag = MsgpackScan.findKeys(body, params[0], [KEY_DETOKENIZE_STOP_SEQUENCE])?.[0]
    keepStopSequence = flag !== undefined && body[flag[0]] === 0xc3
  }
  const encoded = Msgpack.encode(tokenizer.detokenize(ids, { removeEod: !keepStopSequence }))
  return splice(body, text[0], text[1], encoded)
}

/**
 * Fills `generated_text` with `tokenizer` (Megatron's `finalize_text`). The value is
 * spliced into the body's bytes; only `generated_tokens` is decoded. A body laid out in a way
 * the splice does not expect is decoded and re-encoded whole instead.
 *
 * @internal
 */
export const fill = (body: Uint8Array, tokenizer: CoordinatorTokenizer): Uint8Array => {
  try {
    const spliced = fillGeneratedText(body, tokenizer)
    if (spliced !== undefined) return spliced
  } catch {
    // Fall through to the slow path, which judges the body itself.
  }
  const reply = tryDecode(body)
  if (!isMap(reply) || !Array.isArray(reply.generated_tokens)) return body
  const params = isMap(reply.sampling_params) ? reply.sampling_params : {}
  reply.generated_text = tokenizer.detokenize(reply.generated_tokens as Array<number>, {
    removeEod: params.detokenize_stop_sequence !== true
  })
  return Msgpack.encode(reply)
}

/**
 * core_v0.17/18's coordinator: a reply whose `prompt` is nil (the prompt was token ids) gets
 * the text of `prompt_tokens[1]` (the tensor's values), EOD kept. Anything else is left as it is.
 *
 * @internal
 */
export const fillPrompt = (body: Uint8Array, tokenizer: CoordinatorTokenizer): Uint8Array => {
  try {
    const found = MsgpackScan.findKeys(body, 0, [KEY_PROMPT, KEY_PROMPT_TOKENS])
    const prompt = found?.[0]
    const tokens = found?.[1]
    if (prompt === undefined || tokens === undefined || body[prompt[0]] !== 0xc0) return body
    const tensor = Msgpack.decode(body.subarray(tokens[0], tokens[1]))
    const ids = Array.isArray(tensor) ? tensor[1] : undefined
    if (!Array.isArray(ids) || !ids.every((id) => typeof id === "number")) return body
    return splice(body, prompt[0], prompt[1], Msgpack.encode(tokenizer.detokenize(ids)))
  } catch {
    return body
  }
}
