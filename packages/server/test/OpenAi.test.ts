/**
 * The official `openai` SDK pointed at the server, as an application would use it: chat and
 * completions, plain and streamed, `include_usage`, `n`, stop strings, errors raised as the SDK's
 * own classes, and aborting (an `AbortController` mid-stream, a client giving up on a plain
 * request): exactly one ABORT on the wire each and nothing left in flight. The prompt and chat
 * paths run with the real Qwen3 tokenizer and its chat template.
 *
 * One suite, two set-ups: the server over a coordinator (`--coordinator`: the test cluster's,
 * reached over a socket), and the server as the coordinator (`--engines-listen`: the engines
 * dial the server's own process).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import { eventually, isolated, setups } from "./support/Serve.ts"

const sdk = (baseURL: string, apiKey = "unused") => new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 20_000 })

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

describe.each(setups)("the openai SDK against the server %s", (_name, serve) => {
  it.live("chat and completions, plain and streamed, with Qwen3's tokenizer and chat template", () =>
    Effect.gen(function*() {
      const { baseURL, tokenizer } = yield* serve({ tokenizer: "qwen3" })
      const openai = sdk(baseURL)
      const messages = [
        { role: "system" as const, content: "You are terse." },
        { role: "user" as const, content: "Name three rivers. 你好 👋" }
      ]
      const chat = yield* promise(() => openai.chat.completions.create({ model: "test-model", messages, max_tokens: 6 }))
      expect(chat.object).toBe("chat.completion")
      expect(chat.choices).toHaveLength(1)
      expect(chat.choices[0]!.finish_reason).toBe("length")
      expect(chat.usage!.completion_tokens).toBe(6)
      expect(chat.usage!.prompt_tokens).toBeGreaterThan(10)
      const content = chat.choices[0]!.message.content!
      expect(content.length).toBeGreaterThan(0)

      // Streamed, the deltas add up to the same text (same prompt, same tokens from the engines).
      const stream = yield* promise(() =>
        openai.chat.completions.create({
          model: "test-model",
          messages,
          max_tokens: 6,
          stream: true,
          stream_options: { include_usage: true }
        })
      )
      let streamed = ""
      let usage: OpenAI.CompletionUsage | null | undefined
      let finish: string | null = null
      yield* promise(async () => {
        for await (const chunk of stream) {
          for (const choice of chunk.choices) {
            streamed += choice.delta.content ?? ""
            finish = choice.finish_reason ?? finish
          }
          if (chunk.usage) usage = chunk.usage
        }
      })
      expect(streamed).toBe(content)
      expect(finish).toBe("length")
      expect(usage).toMatchObject({ completion_tokens: 6, prompt_tokens: chat.usage!.prompt_tokens })

      // Completions: the prompt tokenized with Qwen3 (the text round-trips through echo).
      const text = "The quick brown fox, 日本語 and ünïcödé."
      const completion = yield* promise(() =>
        openai.completions.create({ model: "test-model", prompt: text, max_tokens: 5, echo: true })
      )
      expect(completion.choices[0]!.text.startsWith(text)).toBe(true)
      expect(completion.usage!.prompt_tokens).toBe(tokenizer.encode(text).length)

      // The SDK's stream helper accumulates the same text.
      const runner = openai.chat.completions.stream({ model: "test-model", messages, max_tokens: 6 })
      const final = yield* promise(() => runner.finalChatCompletion())
      expect(final.choices[0]!.message.content).toBe(content)
    }).pipe(isolated))

  it.live("n: 2, stop strings, include_usage on completions; errors are the SDK's classes", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* serve()
      const openai = sdk(baseURL)
      const two = yield* promise(() =>
        openai.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "a red fox" }], n: 2, max_tokens: 4 })
      )
      expect(two.choices.map((c) => c.index)).toEqual([0, 1])
      // The test engines are deterministic: the same prompt gives the same text twice.
      expect(two.choices[0]!.message.content).toBe(two.choices[1]!.message.content)
      expect(two.usage!.completion_tokens).toBe(8)

      const words = two.choices[0]!.message.content!.split(" ")
      const stopped = yield* promise(() =>
        openai.chat.completions.create({
          model: "test-model",
          messages: [{ role: "user", content: "a red fox" }],
          max_tokens: 4,
          stop: ` ${words[1]}`
        })
      )
      expect(stopped.choices[0]!.message.content).toBe(words[0])
      expect(stopped.choices[0]!.finish_reason).toBe("stop")

      const stream = yield* promise(() =>
        openai.completions.create({
          model: "test-model",
          prompt: ["a red fox", "the blue sky"],
          n: 2,
          max_tokens: 3,
          stream: true,
          stream_options: { include_usage: true }
        })
      )
      const texts = ["", "", "", ""]
      const finishes: Array<string | null> = [null, null, null, null]
      let usage: OpenAI.CompletionUsage | undefined
      yield* promise(async () => {
        for await (const chunk of stream) {
          for (const choice of chunk.choices) {
            texts[choice.index] += choice.text
            finishes[choice.index] = choice.finish_reason ?? finishes[choice.index]!
          }
          if (chunk.usage) usage = chunk.usage
        }
      })
      expect(texts[0]).toBe(texts[1])
      expect(texts[2]).toBe(texts[3])
      expect(texts[0]!.split(" ")).toHaveLength(3)
      expect(finishes).toEqual(["length", "length", "length", "length"])
      expect(usage).toMatchObject({ prompt_tokens: 6, completion_tokens: 12, total_tokens: 18 })

      const refused = yield* promise(() =>
        openai.chat.completions.create({ model: "test-model", messages: [{ role: "user", content: "hi" }], temperature: 9 }).then(
          () => undefined,
          (error: unknown) => error
        )
      )
      expect(refused).toBeInstanceOf(OpenAI.BadRequestError)
      expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("temperature")
      const unknown = yield* promise(() => openai.models.retrieve("nope").then(() => undefined, (e: unknown) => e))
      expect(unknown).toBeInstanceOf(OpenAI.NotFoundError)
      const models = yield* promise(() => openai.models.list())
      expect(models.data.map((m) => m.id)).toEqual(["test-model"])
    }).pipe(isolated))

  it.live("the API key through the SDK: a wrong one is an AuthenticationError", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* serve({ server: { apiKey: "sesame" } })
      const wrong = yield* promise(() => sdk(baseURL, "open").models.list().then(() => undefined, (e: unknown) => e))
      expect(wrong).toBeInstanceOf(OpenAI.AuthenticationError)
      const right = yield* promise(() => sdk(baseURL, "sesame").models.list())
      expect(right.data).toHaveLength(1)
    }).pipe(isolated))

  it.live("aborting: mid-stream (AbortController) and a plain request given up: one ABORT each, nothing in flight", () =>
    Effect.gen(function*() {
      const { aborts, baseURL, inFlight } = yield* serve({ cluster: { engines: 2, engine: { stepMs: 20 } } })
      const openai = sdk(baseURL)
      const controller = new AbortController()
      const stream = yield* promise(() =>
        openai.chat.completions.create(
          { model: "test-model", messages: [{ role: "user", content: "a red fox" }], max_tokens: 2_000, stream: true },
          { signal: controller.signal }
        )
      )
      let chunks = 0
      const ended = yield* promise(async () => {
        try {
          for await (const _ of stream) {
            if (++chunks === 4) controller.abort()
          }
          return "ended"
        } catch (error) {
          return error instanceof OpenAI.APIUserAbortError ? "aborted" : String(error)
        }
      })
      // The SDK ends the iteration quietly on its own abort (or raises APIUserAbortError).
      expect(["ended", "aborted"]).toContain(ended)
      expect(chunks).toBeLessThan(10)
      yield* eventually("one ABORT", aborts, (n) => n === 1)
      yield* eventually("nothing in flight", inFlight, (n) => n === 0)

      const plain = new AbortController()
      const request = openai.completions.create(
        { model: "test-model", prompt: "a red fox", max_tokens: 2_000 },
        { signal: plain.signal }
      ).then(() => "finished", () => "aborted")
      yield* eventually("the request in flight", inFlight, (n) => n === 1)
      plain.abort()
      expect(yield* promise(() => request)).toBe("aborted")
      yield* eventually("a second ABORT", aborts, (n) => n === 2)
      yield* eventually("nothing in flight", inFlight, (n) => n === 0)
      // Still exactly two after a while: no second ABORT for either.
      yield* Effect.sleep("200 millis")
      expect(yield* aborts).toBe(2)
      const metrics = yield* Effect.promise(() => fetch(`${baseURL.slice(0, -3)}/metrics`).then((r) => r.text()))
      expect(metrics).toMatch(/mcore_server_aborts_total\{reason="disconnect"\} 2/)
      // The stream went away after its 200 headers; the plain request before its answer (499).
      expect(metrics).toMatch(/mcore_server_requests_total\{[^}]*route="\/v1\/chat\/completions"[^}]*status="200"[^}]*\} 1/)
      expect(metrics).toMatch(/mcore_server_requests_total\{[^}]*route="\/v1\/completions"[^}]*status="499"[^}]*\} 1/)
    }).pipe(isolated))
})
