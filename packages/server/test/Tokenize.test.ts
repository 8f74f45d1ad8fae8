/**
 * vLLM's `/tokenize` and `/detokenize` over real HTTP (plain fetch: the SDK has no call for
 * them), with Qwen3's tokenizer and template: a prompt's ids are the tokenizer's, a chat's count
 * is the `prompt_tokens` the chat endpoint reports (through the `openai` SDK) for the same
 * messages, detokenizing gives the text back; refusals are OpenAI's error shape.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import { isolated, post, serve } from "./support/Serve.ts"

describe("/tokenize and /detokenize", () => {
  it.live("prompts and chats to ids and back, as vLLM answers", () =>
    Effect.gen(function*() {
      const { baseURL, cluster, tokenizer, url } = yield* serve({ tokenizer: "qwen3" })
      const text = "The quick brown fox, 日本語 👋"
      const prompt = yield* post(`${url}/tokenize`, { model: "test-model", prompt: text })
      expect(prompt.status).toBe(200)
      const ids = tokenizer.encode(text)
      expect(prompt.json()).toEqual({ count: ids.length, max_model_len: 131_072, tokens: ids })
      const strs = (yield* post(`${url}/tokenize`, { prompt: "a b", return_token_strs: true })).json()
      expect(strs.token_strs.join("")).toBe("a b")

      const messages = [{ role: "system", content: "Be brief." }, { role: "user", content: "Name a river." }]
      const chat = (yield* post(`${url}/tokenize`, { model: "test-model", messages })).json()
      const openai = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 })
      const answered = yield* Effect.promise(() =>
        openai.chat.completions.create({ model: "test-model", messages: messages as never, max_tokens: 1 })
      )
      expect(chat.count).toBe(answered.usage!.prompt_tokens)
      expect(chat.tokens).toHaveLength(chat.count)
      const bare = (yield* post(`${url}/tokenize`, { messages, add_generation_prompt: false })).json()
      expect(bare.count).toBeLessThan(chat.count)
      expect(chat.tokens.slice(0, bare.count)).toEqual(bare.tokens)

      const back = yield* post(`${url}/detokenize`, { model: "test-model", tokens: ids })
      expect(back.json()).toEqual({ prompt: text })
      expect((yield* post(`${url}/detokenize`, { tokens: [] })).json()).toEqual({ prompt: "" })

      const sent = (yield* cluster.coordinator.snapshot).nextRequestId
      const refusals: ReadonlyArray<readonly [string, unknown, number, string | null]> = [
        ["/detokenize", { tokens: [1, 999_999_999] }, 400, "tokens[1]"],
        ["/detokenize", { tokens: "abc" }, 400, "tokens"],
        ["/tokenize", { prompt: "hi", frobnicate: 1 }, 400, "frobnicate"],
        ["/tokenize", { messages: [] }, 400, "messages"],
        ["/tokenize", { messages, add_special_tokens: true }, 400, "add_special_tokens"],
        ["/tokenize", {}, 400, "prompt"],
        ["/tokenize", { model: "gpt-4", prompt: "hi" }, 404, null]
      ]
      for (const [route, body, status, param] of refusals) {
        const response = yield* post(`${url}${route}`, body)
        expect({ route, body, status: response.status }).toEqual({ route, body, status })
        const error = response.json().error
        if (param !== null) expect({ body, param: error.param }).toEqual({ body, param })
        expect(error.message.length).toBeGreaterThan(0)
      }
      // Answered here: the coordinator saw only the one chat completion.
      expect((yield* cluster.coordinator.snapshot).nextRequestId).toBe(sent)
    }).pipe(isolated))

  it.live("the API key applies to them too", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ server: { apiKey: "secret" } })
      expect((yield* post(`${url}/tokenize`, { prompt: "the quick fox" })).status).toBe(401)
      const ok = yield* post(`${url}/tokenize`, { prompt: "the quick fox" }, { authorization: "Bearer secret" })
      expect(ok.json().count).toBe(3)
    }).pipe(isolated))
})
