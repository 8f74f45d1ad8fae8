/**
 * vLLM's extension parameters through the official `openai` SDK (sent as extra body fields, as
 * clients written for vLLM send them): neutral values accepted, the rest a 400 naming the
 * parameter with nothing sent; `ignore_eos` and `stream_interval` reach the engine as
 * `termination_id: -1` and `streaming_interval` (read off the wire); `add_special_tokens`,
 * `include_stop_str_in_output` and `return_token_ids` shape the answer as vLLM's do.
 */
import { describe, expect, it } from "@effect/vitest"
import { Msgpack } from "@mcore-effect/protocol"
import { Effect } from "effect"
import OpenAI from "openai"
import { isolated, refusal, sdk, serve, type Served } from "./support/Serve.ts"

/** The sampling parameters of every SUBMIT_REQUEST the engines received. */
const submitted = (served: Served) =>
  Effect.map(Effect.forEach(served.cluster.engines, (engine) => engine.snapshot), (snapshots) =>
    snapshots.flatMap((s) =>
      s.received.filter((m) => m.name === "SUBMIT_REQUEST").map((m) =>
        (Msgpack.decode(m.frames[0]!) as ReadonlyArray<unknown>)[2] as Record<string, unknown>
      )
    ))

const chat = (extra: Record<string, unknown>) =>
  ({ model: "test-model", messages: [{ role: "user", content: "the quick fox" }], max_tokens: 4, ...extra }) as never

describe("vLLM's extension parameters", () => {
  it.live("neutral values accepted; others refused by name, nothing sent", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const openai = sdk(served.baseURL)
      const neutral = {
        repetition_penalty: 1,
        length_penalty: 1,
        min_p: 0,
        min_tokens: 0,
        use_beam_search: false,
        skip_special_tokens: true,
        spaces_between_special_tokens: true,
        truncate_prompt_tokens: null,
        allowed_token_ids: [],
        bad_words: [],
        stop_token_ids: [],
        prompt_logprobs: null,
        priority: 0,
        ignore_eos: false,
        include_stop_str_in_output: false,
        add_special_tokens: false,
        return_token_ids: false
      }
      const answer = yield* Effect.promise(() => openai.chat.completions.create(chat(neutral)))
      expect((answer as OpenAI.ChatCompletion).choices[0]!.finish_reason).toBe("length")
      const completion = yield* Effect.promise(() =>
        openai.completions.create({ model: "test-model", prompt: "the quick fox", max_tokens: 2, ...neutral, add_special_tokens: true } as never)
      )
      expect((completion as OpenAI.Completion).usage!.completion_tokens).toBe(2)
      const sent = (yield* submitted(served)).length
      const cases: ReadonlyArray<readonly [Record<string, unknown>, string]> = [
        [{ repetition_penalty: 1.2 }, "repetition_penalty"],
        [{ min_p: 0.05 }, "min_p"],
        [{ min_tokens: 3 }, "min_tokens"],
        [{ use_beam_search: true }, "use_beam_search"],
        [{ skip_special_tokens: false }, "skip_special_tokens"],
        [{ stop_token_ids: [5] }, "stop_token_ids"],
        [{ bad_words: ["fox"] }, "bad_words"],
        [{ truncate_prompt_tokens: 8 }, "truncate_prompt_tokens"],
        [{ add_special_tokens: true }, "add_special_tokens"],
        [{ min_p: 2 }, "min_p"],
        [{ stream: true, return_token_ids: true }, "return_token_ids"],
        [{ stream: true, include_stop_str_in_output: true }, "include_stop_str_in_output"]
      ]
      for (const [extra, param] of cases) {
        const error = yield* refusal(() => openai.chat.completions.create(chat(extra)))
        expect({ extra, status: error.status, param: error.param }).toEqual({ extra, status: 400, param })
        expect(error.type).toBe("invalid_request_error")
      }
      expect((yield* submitted(served)).length).toBe(sent)
    }).pipe(isolated))

  it.live("ignore_eos is termination_id -1 and stream_interval is streaming_interval on the wire", () =>
    Effect.gen(function*() {
      const served = yield* serve()
      const openai = sdk(served.baseURL)
      yield* Effect.promise(() => openai.chat.completions.create(chat({})))
      yield* Effect.promise(() => openai.chat.completions.create(chat({ ignore_eos: true })))
      const stream = yield* Effect.promise(() =>
        openai.chat.completions.create(chat({ stream: true, stream_interval: 3, max_tokens: 6 })) as unknown as Promise<
          AsyncIterable<OpenAI.ChatCompletionChunk>
        >
      )
      let text = ""
      yield* Effect.promise(async () => {
        for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? ""
      })
      expect(text.trim().split(" ")).toHaveLength(6)
      const [plain, ignoring, streamed] = yield* submitted(served)
      // The word tokenizer's eos (id 0) by default; -1 (none) with ignore_eos.
      expect(plain!["termination_id"]).toBe(0)
      expect(ignoring!["termination_id"]).toBe(-1)
      expect(streamed!["streaming_interval"]).toBe(3)
      expect(plain!["streaming_interval"]).toBe(1)
    }).pipe(isolated))

  it.live("return_token_ids and include_stop_str_in_output, with Qwen3's tokenizer", () =>
    Effect.gen(function*() {
      const { baseURL, tokenizer } = yield* serve({ tokenizer: "qwen3" })
      const openai = sdk(baseURL)
      const prompt = "The quick brown fox"
      const completion = (yield* Effect.promise(() =>
        openai.completions.create({ model: "test-model", prompt, max_tokens: 6, return_token_ids: true } as never)
      )) as OpenAI.Completion & { choices: Array<{ prompt_token_ids: Array<number>; token_ids: Array<number> }> }
      const choice = completion.choices[0]!
      expect(choice.prompt_token_ids).toEqual(tokenizer.encode(prompt))
      expect(choice.token_ids).toHaveLength(6)
      expect(tokenizer.decode(choice.token_ids, { skipSpecialTokens: true })).toBe(choice.text)

      // A stop string from the text itself: cut before it, or kept with include_stop_str_in_output.
      const stop = choice.text.slice(2, 4)
      expect(stop).toHaveLength(2)
      const cut = (yield* Effect.promise(() => openai.completions.create({ model: "test-model", prompt, max_tokens: 6, stop })))
        .choices[0]!
      const kept = ((yield* Effect.promise(() =>
        openai.completions.create({ model: "test-model", prompt, max_tokens: 6, stop, include_stop_str_in_output: true } as never)
      )) as OpenAI.Completion).choices[0]!
      expect(cut.finish_reason).toBe("stop")
      expect(cut.text).toBe(choice.text.slice(0, choice.text.indexOf(stop)))
      expect(kept.text).toBe(cut.text + stop)
    }).pipe(isolated))
})
