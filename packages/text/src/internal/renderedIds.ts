/**
 * The token ids of rendered chats, by their text. A chat answered from the chat template's render
 * cache comes back as the same text, and tokenizing it again is not free even with the piece
 * cache warm (PERFORMANCE.md#rendered-chats-token-ids-srcinternalrenderedidsts). Exact: the
 * ids are a function of the text (the tokenizer holds no state between calls). Bounded like the
 * render cache; texts longer than its longest key are never held.
 *
 * @since 0.1.0
 * @internal
 */
import type * as Tokenizer from "../Tokenizer.ts"
import { Lru } from "./Lru.ts"
import * as RenderCache from "./renderCache.ts"

/**
 * `encode(text, { addSpecialTokens: false })` for rendered chats, from the cache when the text
 * was seen; each answer is a fresh array (the caller may change it).
 *
 * @since 0.1.0
 * @internal
 */
export const make = (tokenizer: Tokenizer.Service, entries = RenderCache.defaults.entries): (text: string) => Array<number> => {
  const noSpecial = { addSpecialTokens: false } as const
  if (entries <= 0) return (text) => tokenizer.encode(text, noSpecial)
  const held = new Lru<string, ReadonlyArray<number>>(entries)
  return (text) => {
    if (text.length > RenderCache.defaults.maxKeyLength) return tokenizer.encode(text, noSpecial)
    const ids = held.get(text)
    if (ids !== undefined) return ids.slice()
    const fresh = tokenizer.encode(text, noSpecial)
    held.set(text, fresh.slice())
    return fresh
  }
}
