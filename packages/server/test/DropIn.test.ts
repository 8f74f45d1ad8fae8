/**
 * The server as a drop-in for vLLM's clients, through the official `openai` SDK: fields that
 * change nothing accepted, named in `x-ignored-fields`, counted in `/metrics`; fields that would
 * change the output refused by name, nothing sent; unknown names refused; the body's nesting
 * limit (at the limit, one past it, 100,000 levels) on every JSON route; `top_logprobs` one entry
 * per token; errors that name the real problem; `/version`, `/v1/health`, `max_model_len`.
 */
import { describe, expect, it } from "@effect/vitest"
import type { TestCluster } from "@mcore-effect/testkit"
import { Effect } from "effect"
import * as Http from "node:http"
import * as IgnoredFields from "../src/internal/IgnoredFields.ts"
import * as JsonDepth from "../src/internal/JsonDepth.ts"
import { isolated, post, refusal, request, sdk, serve, submissions } from "./support/Serve.ts"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** SUBMIT_REQUEST messages the engines received so far. */
const submits = (cluster: TestCluster.Handle) => Effect.map(submissions(cluster), (all) => all.length)

const messages = [{ role: "user" as const, content: "the quick brown fox" }]

/** What vLLM's clients send beside the fields the server acts on (all change nothing). */
const ignorable = {
  request_id: "req-42",
  metadata: { team: "search" },
  store: false,
  service_tier: "auto",
  safety_identifier: "hashed-user",
  verbosity: "low",
  include_reasoning: true,
  echo: false,
  cache_salt: null,
  chat_template: null,
  guided_json: null,
  structured_outputs: null,
  vllm_xargs: {}
}

/** `{ key: [[[...]]] }` with `arrays` arrays: a value `arrays + 1` levels deep. */
const nested = (key: string, arrays: number) => `{"${key}":${"[".repeat(arrays)}${"]".repeat(arrays)}}`

describe("a drop-in for vLLM's clients", () => {
  it.live("fields that change nothing: 200, named in x-ignored-fields, counted in /metrics", () =>
    Effect.gen(function*() {
      const { baseURL, url } = yield* serve()
      const openai = sdk(baseURL)
      const { data, response } = yield* promise(() =>
        openai.chat.completions.create({ model: "test-model", messages, max_tokens: 3, ...ignorable } as never).withResponse()
      )
      expect((data as { choices: Array<unknown> }).choices).toHaveLength(1)
      expect(response.headers.get("x-ignored-fields")).toBe(Object.keys(ignorable).join(", "))
      // Streamed too, and completions (their own list: `echo` is theirs).
      const stream = yield* promise(() =>
        openai.chat.completions.create({ model: "test-model", messages, max_tokens: 3, stream: true, metadata: {}, store: null } as never)
          .withResponse()
      )
      expect(stream.response.headers.get("x-ignored-fields")).toBe("metadata, store")
      yield* promise(async () => {
        for await (const _ of stream.data as unknown as AsyncIterable<unknown>) {
          // drained
        }
      })
      const completion = yield* promise(() =>
        openai.completions.create({ model: "test-model", prompt: "the fox", max_tokens: 2, echo: true, metadata: {}, cache_salt: null } as never)
          .withResponse()
      )
      expect(completion.response.headers.get("x-ignored-fields")).toBe("metadata, cache_salt")
      // A body with no such field has no header.
      const plain = yield* promise(() => openai.chat.completions.create({ model: "test-model", messages, max_tokens: 2 }).withResponse())
      expect(plain.response.headers.get("x-ignored-fields")).toBeNull()

      const metrics = (yield* request(`${url}/metrics`)).text
      const count = (field: string) =>
        Number(new RegExp(`mcore_server_ignored_fields_total\\{field="${field}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0)
      expect(count("metadata")).toBe(3)
      expect(count("store")).toBe(2)
      expect(count("cache_salt")).toBe(2)
      expect(count("request_id")).toBe(1)
      expect(count("other")).toBe(0)
    }).pipe(isolated))

  it.live("fields that would change the output or isolation: a 400 naming each, nothing sent; unknown names too", () =>
    Effect.gen(function*() {
      const { baseURL, cluster } = yield* serve()
      const openai = sdk(baseURL)
      const cases: ReadonlyArray<readonly [Record<string, unknown>, string, string]> = [
        [{ guided_json: { type: "object" } }, "guided_json", "guided decoding"],
        [{ structured_outputs: { regex: "a+" } }, "structured_outputs", "structured outputs"],
        [{ response_format: { type: "json_object" } }, "response_format", "json_object"],
        [{ cache_salt: "tenant-a" }, "cache_salt", "prefix cache"],
        [{ chat_template: "{{ messages }}" }, "chat_template", "chat template"],
        [{ echo: true }, "echo", "not supported for chats"],
        [{ include_reasoning: false }, "include_reasoning", "only true"],
        [{ presence_penalty: 0.5 }, "presence_penalty", "only 0"],
        [{ repetition_penalty: 1.2 }, "repetition_penalty", "only 1"],
        [{ store: true }, "store", "nothing is stored"],
        [{ kv_transfer_params: { remote: 1 } }, "kv_transfer_params", "KV transfer"],
        [{ max_tokenz: 5 }, "max_tokenz", "unknown parameter"]
      ]
      for (const [fields, param, says] of cases) {
        const error = yield* refusal(() => openai.chat.completions.create({ model: "test-model", messages, ...fields } as never))
        expect({ param, status: error.status }).toEqual({ param, status: 400 })
        expect({ param, got: error.param }).toEqual({ param, got: param })
        expect(error.message).toContain(says)
      }
      const completion = yield* refusal(() =>
        openai.completions.create({ model: "test-model", prompt: "the fox", response_format: { type: "json_object" } } as never)
      )
      expect(completion.param).toBe("response_format")
      expect(yield* submits(cluster)).toBe(0)
    }).pipe(isolated))

  it.live("a header-breaking field name: refused in the body (JSON-escaped), no header made of it", () =>
    Effect.gen(function*() {
      const { url } = yield* serve()
      const name = "x\r\nSet-Cookie: stolen=1"
      const response = yield* post(`${url}/v1/chat/completions`, `{"messages":[{"role":"user","content":"hi"}],${JSON.stringify(name)}:1}`)
      expect(response.status).toBe(400)
      expect(response.headers.get("set-cookie")).toBeNull()
      expect(response.json().error.param).toBe(name)
      // The header of ignored names keeps to a safe charset, a bounded count and length.
      const value = IgnoredFields.headerValue([name, "é".repeat(100), ...Array.from({ length: 20 }, (_, i) => `f${i}`)])
      expect(value).toMatch(/^[A-Za-z0-9_.\-, ]+$/)
      const names = value.split(", ")
      expect(names).toHaveLength(17)
      expect(names[0]).toBe("x__Set-Cookie__stolen_1")
      expect(names[1]).toBe("_".repeat(64))
      expect(names.at(-1)).toBe("...")
      expect(IgnoredFields.label("metadata")).toBe("metadata")
      expect(IgnoredFields.label(name)).toBe("other")
      expect(IgnoredFields.label("text_format", IgnoredFields.policy([], [["text_format", (v) => v === null, "why"]]))).toBe("text_format")
      // Still serving.
      const after = yield* post(`${url}/v1/chat/completions`, { messages: [{ role: "user", content: "hi" }], max_tokens: 1 })
      expect(after.status).toBe(200)
    }).pipe(isolated))

  it.live("the nesting limit: 128 levels answered, 129 and 100,000 refused naming the field, on every JSON route", () =>
    Effect.gen(function*() {
      const { cluster, url } = yield* serve({ server: { toolCallParser: "hermes" } })
      const limit = JsonDepth.MAX_DEPTH
      const chat = (arrays: number) =>
        post(
          `${url}/v1/chat/completions`,
          `{"messages":[{"role":"user","content":"hi"}],"max_tokens":1,"chat_template_kwargs":${nested("x", arrays)}}`
        )
      // The body is level 1, chat_template_kwargs 2, its x's arrays 3 on.
      for (const depth of [limit - 1, limit]) {
        const answered = yield* chat(depth - 2)
        expect({ depth, status: answered.status }).toEqual({ depth, status: 200 })
      }
      const over = yield* chat(limit - 1)
      expect(over.status).toBe(400)
      // x's first array is level 3: the first past the limit is 126 arrays inside it.
      const param = `chat_template_kwargs.x${"[0]".repeat(limit + 1 - 3)}`
      expect(over.json().error.param).toBe(param)
      expect(over.json().error.message).toContain(`nested deeper than ${limit} levels`)
      const sent = yield* submits(cluster)

      const deep = yield* chat(100_000)
      expect(deep.status).toBe(400)
      expect(deep.json().error.param).toBe(param)
      // A tool's parameters nested 10,000 deep (read by the tool parser's schema code).
      const tool = yield* post(
        `${url}/v1/chat/completions`,
        `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${
          nested("p", 10_000)
        }}}]}`
      )
      expect(tool.status).toBe(400)
      expect(tool.json().error.param).toBe(`tools[0].function.parameters.p${"[0]".repeat(limit + 1 - 6)}`)
      for (const route of ["/v1/completions", "/tokenize", "/detokenize"]) {
        const refused = yield* post(`${url}${route}`, `{"prompt":"hi","x":${"[".repeat(100_000)}${"]".repeat(100_000)}}`)
        expect({ route, status: refused.status }).toEqual({ route, status: 400 })
        expect(refused.json().error.param).toBe(`x${"[0]".repeat(limit + 1 - 2)}`)
      }
      expect(yield* submits(cluster)).toBe(sent)
    }).pipe(isolated))

  it.live("completions' top_logprobs: one entry per token, the token itself in each; echo's first null", () =>
    Effect.gen(function*() {
      const { baseURL } = yield* serve()
      const openai = sdk(baseURL)
      const plain = yield* promise(() =>
        openai.completions.create({ model: "test-model", prompt: "the quick fox", max_tokens: 2, logprobs: 1 })
      )
      const lp = plain.choices[0]!.logprobs!
      expect(lp.tokens).toHaveLength(2)
      expect(lp.top_logprobs).toHaveLength(2)
      lp.top_logprobs!.forEach((entry, i) => expect(entry).toEqual({ [lp.tokens![i]!]: lp.token_logprobs![i] }))

      const echoed = yield* promise(() =>
        openai.completions.create({ model: "test-model", prompt: "the quick brown fox jumps", max_tokens: 2, logprobs: 1, echo: true })
      )
      const e = echoed.choices[0]!.logprobs!
      expect(e.tokens).toHaveLength(7)
      expect(e.token_logprobs).toHaveLength(7)
      expect(e.top_logprobs).toHaveLength(7)
      expect(e.token_logprobs![0]).toBeNull()
      expect(e.top_logprobs![0]).toBeNull()
      e.top_logprobs!.slice(1).forEach((entry, i) => expect(entry).toEqual({ [e.tokens![i + 1]!]: e.token_logprobs![i + 1] }))

      // Chat: `top_logprobs` entries per token, the token first.
      const chat = yield* promise(() =>
        openai.chat.completions.create({ model: "test-model", messages, max_tokens: 2, logprobs: true, top_logprobs: 2 })
      )
      const content = chat.choices[0]!.logprobs!.content!
      expect(content).toHaveLength(2)
      for (const token of content) expect(token.top_logprobs[0]).toEqual({ token: token.token, logprob: token.logprob, bytes: token.bytes })
    }).pipe(isolated))

  it.live("errors name the real problem: a negative token id, an audio part, max_tokens past the exact integers", () =>
    Effect.gen(function*() {
      const { baseURL, cluster } = yield* serve()
      const openai = sdk(baseURL)
      const negative = yield* refusal(() => openai.completions.create({ model: "test-model", prompt: [5, -1] }))
      expect(negative.param).toBe("prompt[1]")
      expect(negative.message).toContain("token id -1 is negative")
      const nestedNegative = yield* refusal(() => openai.completions.create({ model: "test-model", prompt: [[5], [3, -2]] }))
      expect(nestedNegative.param).toBe("prompt[1][1]")
      const fraction = yield* refusal(() => openai.completions.create({ model: "test-model", prompt: [1.5] }))
      expect(fraction.message).toContain("not an integer")
      const audio = yield* refusal(() =>
        openai.chat.completions.create({
          model: "test-model",
          messages: [{ role: "user", content: [{ type: "input_audio", input_audio: { data: "AAAA", format: "wav" } }] }]
        })
      )
      expect(audio.param).toBe("messages[0].content[0].type")
      expect(audio.message).toContain("audio input is not supported")
      const huge = yield* refusal(() => openai.chat.completions.create({ model: "test-model", messages, max_tokens: 2 ** 53 }))
      expect(huge.param).toBe("max_tokens")
      expect(huge.message).toContain("from 0 to 9007199254740991")
      const detokenized = yield* post(`${baseURL.replace(/\/v1$/, "")}/detokenize`, { tokens: [-3] })
      expect(detokenized.json().error.message).toContain("token id -3 is negative")
      expect(yield* submits(cluster)).toBe(0)
    }).pipe(isolated))

  it.live("Expect: 100-continue (curl, for large bodies): continued, answered with x-request-id", () =>
    Effect.gen(function*() {
      const { url } = yield* serve()
      const body = JSON.stringify({ prompt: "the fox", max_tokens: 2 })
      // The body is written only once the server says continue: without it this never ends.
      const answer = yield* Effect.promise(() =>
        new Promise<{ status: number; requestId: string | undefined; text: string }>((resolve, reject) => {
          const req = Http.request(`${url}/v1/completions`, {
            method: "POST",
            headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body), expect: "100-continue" }
          })
          req.on("continue", () => req.end(body))
          req.on("error", reject)
          req.on("response", (response) => {
            let text = ""
            response.on("data", (chunk) => (text += chunk))
            response.on("end", () => resolve({ status: response.statusCode!, requestId: response.headers["x-request-id"] as string | undefined, text }))
          })
        })
      )
      expect(answer.status).toBe(200)
      expect(answer.requestId).toBeDefined()
      expect(JSON.parse(answer.text).id).toBe(`cmpl-${answer.requestId}`)
    }).pipe(isolated))

  it.live("/version, /v1/health, and max_model_len in /v1/models", () =>
    Effect.gen(function*() {
      const { baseURL, url } = yield* serve({ server: { maxModelLen: 1234 } })
      const version = yield* request(`${url}/version`)
      expect(version.status).toBe(200)
      expect(version.json()).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/) })
      const health = yield* request(`${url}/v1/health`)
      expect(health.status).toBe(200)
      expect(health.json()).toMatchObject({ status: "ok", ready: true, model: "test-model" })
      const models = yield* promise(() => sdk(baseURL).models.list())
      expect(models.data[0]).toMatchObject({ id: "test-model", max_model_len: 1234 })
      const one = yield* promise(() => sdk(baseURL).models.retrieve("test-model"))
      expect(one).toMatchObject({ max_model_len: 1234 })
    }).pipe(isolated))

  it.live("Qwen3's template: a developer message rendered as a system one; an assistant message sent back as it came", () =>
    Effect.gen(function*() {
      const { tokenizer, url } = yield* serve({ tokenizer: "qwen3" })
      const tokens = (role: string) =>
        Effect.map(
          post(`${url}/tokenize`, { messages: [{ role, content: "Answer in French." }, { role: "user", content: "hi" }] }),
          (answer) => answer.json().tokens as Array<number>
        )
      const developer = yield* tokens("developer")
      const text = tokenizer.decode(developer)
      expect(text).toContain("<|im_start|>system\nAnswer in French.<|im_end|>")
      expect(developer).toEqual(yield* tokens("system"))
      // And the chat endpoint sends that prompt.
      const chat = yield* post(`${url}/v1/chat/completions`, {
        messages: [{ role: "developer", content: "Answer in French." }, { role: "user", content: "hi" }],
        max_tokens: 1
      })
      expect(chat.status).toBe(200)
      expect(chat.json().usage.prompt_tokens).toBe(developer.length)

      // An assistant message sent back as a response wrote it (vLLM's or this server's fields):
      // taken, its reasoning given to the template (Qwen3's renders it after the last query).
      const call = { id: "call_1", type: "function", function: { name: "get_weather", arguments: "{\"city\": \"Paris\"}" } }
      const history = (reasoning: Record<string, unknown>) => [
        { role: "user", content: "Weather in Paris?" },
        { role: "assistant", content: null, tool_calls: [call], refusal: null, annotations: [], audio: null, function_call: null, ...reasoning },
        { role: "tool", tool_call_id: "call_1", content: "18 degrees" }
      ]
      for (const reasoning of [{ reasoning: "I will look it up." }, { reasoning_content: "I will look it up.", reasoning: "I will look it up." }]) {
        const sentBack = yield* post(`${url}/tokenize`, { messages: history(reasoning) })
        expect(sentBack.status).toBe(200)
        expect(tokenizer.decode(sentBack.json().tokens)).toContain("<think>\nI will look it up.\n</think>")
      }
      const audio = yield* post(`${url}/tokenize`, { messages: [{ role: "assistant", content: "hi", audio: { id: "a1" } }] })
      expect(audio.json().error.param).toBe("messages[0].audio")
    }).pipe(isolated))
})
