/**
 * The server over plain `fetch` on loopback, against the testkit's coordinator and engines with
 * their word-level tokenizer: its own routes, every refusal with its status and OpenAI's error
 * shape (and the server still serving after each), limits, deadlines, a hand-read event stream,
 * and a coordinator lost mid-stream.
 */
import { describe, expect, it } from "@effect/vitest"
import { Generation, TestCluster, Vocabulary } from "@mcore-effect/testkit"
import { Effect, Exit, Fiber, Scope } from "effect"
import { eventually, isolated, post, request, serve, serveOn } from "./support/Serve.ts"

const prompt = "the quick fox runs over the dog"
/** What the test engines generate for `prompt`, as the word tokenizer writes it. */
const expected = (count: number) => Generation.tokens(Vocabulary.tokenize(prompt), count).map((id) => Vocabulary.words[id]).join(" ")

/** The `data:` records of an event stream, in order. */
const records = (text: string): Array<string> =>
  text.split("\n\n").filter((block) => block.startsWith("data: ")).map((block) => block.slice("data: ".length))

const errorOf = (response: { readonly json: () => any }) => response.json().error as {
  readonly message: string
  readonly type: string
  readonly param: string | null
  readonly code: string | null
}

describe("Server over fetch", () => {
  it.live("health, models, metrics, and 404 for anything else", () =>
    Effect.gen(function*() {
      const { url } = yield* serve()
      const health = yield* request(`${url}/health`)
      expect(health.status).toBe(200)
      expect(health.json()).toMatchObject({ status: "ok", model: "test-model" })
      const models = yield* request(`${url}/v1/models`)
      expect(models.json()).toMatchObject({ object: "list", data: [{ id: "test-model", object: "model" }] })
      expect((yield* request(`${url}/v1/models/test-model`)).json()).toMatchObject({ id: "test-model" })
      const none = yield* request(`${url}/v1/models/other`)
      expect(none.status).toBe(404)
      expect(errorOf(none).code).toBe("model_not_found")
      const missing = yield* request(`${url}/v2/nothing`)
      expect(missing.status).toBe(404)
      expect(errorOf(missing).type).toBe("invalid_request_error")
      const wrongMethod = yield* request(`${url}/v1/completions`)
      expect(wrongMethod.status).toBe(404)
      yield* post(`${url}/v1/completions`, { prompt, max_tokens: 3 })
      const metrics = yield* request(`${url}/metrics`)
      expect(metrics.status).toBe(200)
      expect(metrics.headers.get("content-type")).toContain("text/plain")
      expect(metrics.text).toMatch(/mcore_server_requests_total\{[^}]*route="\/v1\/completions"[^}]*status="200"[^}]*\} 1/)
      expect(metrics.text).toMatch(/mcore_server_completion_tokens_total 3/)
      expect(metrics.text).toContain("mcore_server_request_duration_seconds_bucket")
      expect(metrics.text).toContain("mcore_client_requests_submitted")
    }).pipe(isolated))

  it.live("completions: text, token ids and lists of both; n; echo; usage; finish reasons", () =>
    Effect.gen(function*() {
      const { url } = yield* serve()
      const one = yield* post(`${url}/v1/completions`, { model: "test-model", prompt, max_tokens: 4 })
      expect(one.status).toBe(200)
      const body = one.json()
      expect(body).toMatchObject({
        object: "text_completion",
        model: "test-model",
        choices: [{ index: 0, text: expected(4), logprobs: null, finish_reason: "length" }],
        usage: { prompt_tokens: 7, completion_tokens: 4, total_tokens: 11, prompt_tokens_details: { cached_tokens: 0 } }
      })
      expect(body.id).toMatch(/^cmpl-/)
      const ids = Vocabulary.tokenize(prompt)
      const many = (yield* post(`${url}/v1/completions`, {
        prompt: [ids, Vocabulary.tokenize("a red bird")],
        max_tokens: 2,
        n: 2,
        echo: true
      })).json()
      expect(many.choices.map((c: any) => c.index)).toEqual([0, 1, 2, 3])
      // Echo is the prompt's text then the completion's, as they are (no separator added).
      expect(many.choices[0].text).toBe(prompt + expected(2))
      expect(many.choices[1].text).toBe(many.choices[0].text)
      expect(many.choices[2].text.startsWith("a red bird")).toBe(true)
      expect(many.usage).toMatchObject({ prompt_tokens: 7 + 3, completion_tokens: 8 })
      const texts = (yield* post(`${url}/v1/completions`, { prompt: [prompt, "a red bird"], max_tokens: 2 })).json()
      expect(texts.choices.map((c: any) => c.text)).toEqual([expected(2), many.choices[2].text.slice("a red bird".length)])
      const logprobs = (yield* post(`${url}/v1/completions`, { prompt, max_tokens: 3, logprobs: 0 })).json()
      const lp = logprobs.choices[0].logprobs
      expect(lp.tokens).toEqual(expected(3).split(" "))
      expect(lp.token_logprobs).toEqual(Generation.tokens(ids, 3).map(Generation.logProbOf))
      expect(lp.text_offset[0]).toBe(0)
      // echo with logprobs (how evaluation harnesses score a text): the prompt's tokens first, the
      // first with no log prob.
      const scored = (yield* post(`${url}/v1/completions`, { prompt, max_tokens: 2, logprobs: 0, echo: true })).json()
      const slp = scored.choices[0].logprobs
      expect(scored.choices[0].text).toBe(prompt + expected(2))
      expect(slp.tokens).toEqual([...prompt.split(" "), ...expected(2).split(" ")])
      expect(slp.token_logprobs).toEqual([
        null,
        ...ids.slice(1).map(Generation.logProbOf),
        ...Generation.tokens(ids, 2).map(Generation.logProbOf)
      ])
      // Scoring alone, as lm-evaluation-harness asks for a log likelihood: nothing generated.
      const only = (yield* post(`${url}/v1/completions`, { prompt, max_tokens: 0, logprobs: 0, echo: true })).json()
      expect(only.choices[0].text).toBe(prompt)
      expect(only.choices[0].logprobs.token_logprobs).toEqual([null, ...ids.slice(1).map(Generation.logProbOf)])
      expect(only.usage.completion_tokens).toBe(0)
      // The same streamed: the prompt opens the choice, the log probs close it.
      const streamedScore = records((yield* post(`${url}/v1/completions`, {
        prompt,
        max_tokens: 2,
        logprobs: 0,
        echo: true,
        stream: true
      })).text)
      expect(streamedScore.at(-1)).toBe("[DONE]")
      const scoreChunks = streamedScore.slice(0, -1).map((d) => JSON.parse(d).choices[0])
      expect(scoreChunks.map((c: any) => c.text).join("")).toBe(prompt + expected(2))
      expect(scoreChunks.at(-1).logprobs.token_logprobs).toEqual(slp.token_logprobs)
      // Chat log probs: one entry per generated token.
      const chat = (yield* post(`${url}/v1/chat/completions`, {
        messages: [{ role: "user", content: prompt }],
        max_tokens: 3,
        logprobs: true
      })).json()
      const content = chat.choices[0].logprobs.content
      expect(content.map((c: any) => c.token).join(" ")).toBe(chat.choices[0].message.content)
      expect(content.every((c: any) => c.logprob < 0 && Array.isArray(c.bytes))).toBe(true)
    }).pipe(isolated))

  it.live("chat: the template renders the messages; stop strings cut the text; the stream is read by hand", () =>
    Effect.gen(function*() {
      const { url } = yield* serve()
      const chat = yield* post(`${url}/v1/chat/completions`, {
        model: "test-model",
        messages: [{ role: "system", content: "be brief" }, { role: "user", content: [{ type: "text", text: prompt }] }],
        max_completion_tokens: 5
      })
      expect(chat.status).toBe(200)
      const body = chat.json()
      expect(body).toMatchObject({
        object: "chat.completion",
        choices: [{ index: 0, message: { role: "assistant" }, finish_reason: "length" }],
        usage: { completion_tokens: 5 }
      })
      const text: string = body.choices[0].message.content
      expect(text.split(" ")).toHaveLength(5)
      // A stop string taken from the text the same request gives: cut where it begins.
      const words = text.split(" ")
      const stopped = (yield* post(`${url}/v1/chat/completions`, {
        messages: [{ role: "system", content: "be brief" }, { role: "user", content: prompt }],
        max_tokens: 5,
        stop: [` ${words[2]}`]
      })).json()
      expect(stopped.choices[0].message.content).toBe(words.slice(0, 2).join(" "))
      expect(stopped.choices[0].finish_reason).toBe("stop")

      const streamed = yield* post(`${url}/v1/chat/completions`, {
        messages: [{ role: "system", content: "be brief" }, { role: "user", content: prompt }],
        max_tokens: 5,
        stream: true,
        stream_options: { include_usage: true }
      })
      expect(streamed.status).toBe(200)
      expect(streamed.headers.get("content-type")).toContain("text/event-stream")
      const data = records(streamed.text)
      expect(data.at(-1)).toBe("[DONE]")
      const chunks = data.slice(0, -1).map((d) => JSON.parse(d))
      expect(chunks[0].choices[0].delta).toEqual({ role: "assistant", content: "" })
      expect(chunks.every((c) => c.object === "chat.completion.chunk" && c.id === chunks[0].id)).toBe(true)
      const content = chunks.flatMap((c) => c.choices).map((c: any) => c.delta.content ?? "").join("")
      expect(content).toBe(text)
      const usage = chunks.at(-1)
      expect(usage.choices).toEqual([])
      expect(usage.usage).toMatchObject({ completion_tokens: 5, total_tokens: usage.usage.prompt_tokens + 5 })
      expect(chunks.at(-2).choices[0].finish_reason).toBe("length")
    }).pipe(isolated))

  it.live("refusals: status and OpenAI's error shape, naming the field; the server keeps serving", () =>
    Effect.gen(function*() {
      const { aborts, url } = yield* serve({ server: { maxBodyBytes: 2048 } })
      const completions = `${url}/v1/completions`
      const chat = `${url}/v1/chat/completions`
      const cases: ReadonlyArray<readonly [string, string, unknown, number, string | null]> = [
        ["malformed JSON", completions, "{\"prompt\": ", 400, null],
        ["not an object", completions, "[1, 2]", 400, null],
        ["empty body", completions, "", 400, null],
        ["missing prompt", completions, { max_tokens: 2 }, 400, "prompt"],
        ["wrong type", completions, { prompt, max_tokens: "many" }, 400, "max_tokens"],
        ["out of range", completions, { prompt, temperature: 7 }, 400, "temperature"],
        ["unknown parameter", completions, { prompt, frobnicate: true }, 400, "frobnicate"],
        ["empty prompt", completions, { prompt: "" }, 400, "prompt"],
        ["token outside the vocabulary", completions, { prompt: [1, 2, 9_999_999] }, 400, "prompt[2]"],
        ["penalty", completions, { prompt, presence_penalty: 0.5 }, 400, "presence_penalty"],
        ["seed with sampling", completions, { prompt, seed: 3 }, 400, "seed"],
        ["top_k with top_p", completions, { prompt, top_k: 5, top_p: 0.5 }, 400, "top_p"],
        ["stream_options without stream", completions, { prompt, stream_options: { include_usage: true } }, 400, "stream_options"],
        ["best_of", completions, { prompt, best_of: 3 }, 400, "best_of"],
        ["no messages", chat, { messages: [] }, 400, "messages"],
        ["bad role", chat, { messages: [{ role: "wizard", content: "hi" }] }, 400, "messages[0].role"],
        ["image part without image_url", chat, { messages: [{ role: "user", content: [{ type: "image_url" }] }] }, 400, "messages[0].content[0].image_url"],
        ["audio part", chat, { messages: [{ role: "user", content: [{ type: "input_audio" }] }] }, 400, "messages[0].content[0].type"],
        ["tools", chat, { messages: [{ role: "user", content: "hi" }], tools: [{ type: "function", function: { name: "f" } }] }, 400, "tools"],
        ["a malformed tool", chat, { messages: [{ role: "user", content: "hi" }], tools: [{ type: "function" }] }, 400, "tools[0].function"],
        ["json schema", chat, { messages: [{ role: "user", content: "hi" }], response_format: { type: "json_schema" } }, 400, "response_format"],
        ["top_logprobs alone", chat, { messages: [{ role: "user", content: "hi" }], top_logprobs: 2 }, 400, "top_logprobs"]
      ]
      for (const [what, route, body, status, param] of cases) {
        const response = yield* post(route, body)
        expect({ what, status: response.status }).toEqual({ what, status })
        const error = errorOf(response)
        expect({ what, param: error.param }).toEqual({ what, param })
        expect(error.type).toBe("invalid_request_error")
        expect(error.message.length).toBeGreaterThan(0)
      }
      const unknownModel = yield* post(completions, { model: "gpt-4", prompt })
      expect(unknownModel.status).toBe(404)
      expect(errorOf(unknownModel).code).toBe("model_not_found")
      // Too large: refused from Content-Length, and while reading a chunked body.
      const huge = yield* post(completions, { prompt: "the ".repeat(1_000) })
      expect(huge.status).toBe(413)
      expect(errorOf(huge).code).toBe("request_too_large")
      const chunked = yield* request(completions, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(`{"prompt": "${"the ".repeat(1_000)}"}`))
            controller.close()
          }
        }),
        duplex: "half"
      } as RequestInit)
      expect(chunked.status).toBe(413)
      // Nothing reached the coordinator, and the server still serves.
      expect(yield* aborts).toBe(0)
      const fine = yield* post(completions, { prompt, max_tokens: 2 })
      expect(fine.status).toBe(200)
      expect(fine.json().choices[0].text).toBe(expected(2))
    }).pipe(isolated))

  it.live("API key: missing and wrong are 401; right is served; /health stays open", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ server: { apiKey: "sesame" } })
      const missing = yield* post(`${url}/v1/completions`, { prompt })
      expect(missing.status).toBe(401)
      expect(errorOf(missing).code).toBe("invalid_api_key")
      expect(missing.headers.get("www-authenticate")).toBe("Bearer")
      const wrong = yield* post(`${url}/v1/completions`, { prompt }, { authorization: "Bearer sesam" })
      expect(wrong.status).toBe(401)
      expect((yield* request(`${url}/v1/models`, { headers: { authorization: "Bearer nope" } })).status).toBe(401)
      const right = yield* post(`${url}/v1/completions`, { prompt, max_tokens: 1 }, { authorization: "Bearer sesame" })
      expect(right.status).toBe(200)
      expect((yield* request(`${url}/health`)).status).toBe(200)
    }).pipe(isolated))

  it.live("limits: 429 over the concurrency limit; 504 past the deadline, with one ABORT", () =>
    Effect.gen(function*() {
      const { aborts, inFlight, url } = yield* serve({
        server: { maxConcurrentRequests: 1, requestTimeout: "300 millis" },
        cluster: { engines: 1, engine: { stepMs: 20 } }
      })
      const slow = yield* Effect.forkChild(post(`${url}/v1/completions`, { prompt, max_tokens: 1_000 }))
      yield* eventually("the first request in flight", inFlight, (n) => n === 1)
      const refused = yield* post(`${url}/v1/completions`, { prompt, max_tokens: 1 })
      expect(refused.status).toBe(429)
      expect(refused.headers.get("retry-after")).toBe("1")
      const timedOut = yield* Fiber.join(slow)
      expect(timedOut.status).toBe(504)
      expect(errorOf(timedOut).type).toBe("timeout")
      yield* eventually("one ABORT", aborts, (n) => n === 1)
      yield* eventually("nothing in flight", inFlight, (n) => n === 0)
      expect((yield* post(`${url}/v1/completions`, { prompt, max_tokens: 1 })).status).toBe(200)
    }).pipe(isolated))

  it.live("the coordinator lost mid-stream: the stream ends with an error record; /health says so", () =>
    Effect.gen(function*() {
      const { cluster, url } = yield* serve({
        cluster: { engines: 1, engine: { stepMs: 20 } },
        client: { heartbeatTimeout: "1 second", heartbeatInterval: "200 millis" }
      })
      const response = yield* Effect.promise(() =>
        fetch(`${url}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ prompt, max_tokens: 1_000, stream: true })
        })
      )
      const reader = response.body!.getReader()
      const first = yield* Effect.promise(() => reader.read())
      expect(new TextDecoder().decode(first.value)).toContain("data: ")
      yield* cluster.coordinator.crash
      let text = ""
      for (;;) {
        const { done, value } = yield* Effect.promise(() => reader.read())
        if (done) break
        text += new TextDecoder().decode(value)
      }
      const last = JSON.parse(records(text).at(-1)!)
      expect(last.error.type).toBe("service_unavailable")
      expect(records(text)).not.toContain("[DONE]")
      const health = yield* request(`${url}/health`)
      expect(health.status).toBe(503)
      expect(health.json().status).toBe("coordinator_lost")
      const refused = yield* post(`${url}/v1/completions`, { prompt, max_tokens: 1 })
      expect(refused.status).toBe(503)
    }).pipe(isolated))
})

describe("graceful shutdown", () => {
  /** Reads a streamed response to its end, as text. */
  const readAll = (response: Response) => Effect.promise(() => response.text().catch((e: unknown) => `broken: ${String(e)}`))

  const startStream = (url: string, maxTokens: number) =>
    Effect.promise(() =>
      fetch(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ prompt, max_tokens: maxTokens, stream: true })
      })
    )

  it.live("a stream in flight finishes within the grace period; new requests are refused meanwhile", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1, engine: { stepMs: 20 } })
      const scope = yield* Scope.make()
      const { aborts, url } = yield* serveOn(cluster, { server: { shutdownGracePeriod: "5 seconds" } }).pipe(
        Scope.provide(scope)
      )
      const response = yield* startStream(url, 15)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      yield* Effect.sleep("50 millis")
      const refused = yield* Effect.promise(() =>
        fetch(`${url}/v1/completions`, { method: "POST", body: JSON.stringify({ prompt }) }).then(
          (r) => r.status,
          () => "connection refused"
        )
      )
      expect([503, "connection refused"]).toContain(refused)
      const text = yield* readAll(response)
      expect(records(text).at(-1)).toBe("[DONE]")
      const content = records(text).slice(0, -1).map((d) => JSON.parse(d).choices[0].text).join("")
      expect(content).toBe(expected(15))
      yield* Fiber.join(closing)
      expect(yield* aborts).toBe(0)
    }).pipe(isolated))

  it.live("the drain: /ready and /health answer 503 with Retry-After while every request is still served; then the shutdown", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1, engine: { stepMs: 5 } })
      const scope = yield* Scope.make()
      const { url } = yield* serveOn(cluster, { server: { drainDelay: "600 millis" } }).pipe(Scope.provide(scope))
      const before = yield* request(`${url}/ready`)
      expect(before.status).toBe(200)
      expect(before.json()).toEqual({ status: "ok", ready: true })
      const stream = yield* startStream(url, 30)
      const closing = yield* Effect.forkChild(Scope.close(scope, Exit.void))
      yield* Effect.sleep("100 millis")
      const ready = yield* Effect.promise(() => fetch(`${url}/ready`))
      expect(ready.status).toBe(503)
      expect(ready.headers.get("retry-after")).toBe("1")
      expect(yield* Effect.promise(() => ready.json())).toEqual({ status: "draining", ready: false })
      const health = yield* Effect.promise(() => fetch(`${url}/health`))
      expect(health.status).toBe(503)
      expect(health.headers.get("retry-after")).toBe("1")
      expect(((yield* Effect.promise(() => health.json())) as { status: string }).status).toBe("draining")
      // Still serving: a new request is answered in full, and so is the stream begun before.
      const served = yield* post(`${url}/v1/completions`, { prompt, max_tokens: 3 })
      expect(served.status).toBe(200)
      expect(served.json().choices[0].text).toBe(expected(3))
      const text = yield* readAll(stream)
      expect(records(text).slice(0, -1).map((d) => JSON.parse(d).choices[0].text).join("")).toBe(expected(30))
      // After the drain: refused (503 while the listener closes, then no connection).
      yield* Effect.sleep("600 millis")
      const after = yield* Effect.promise(() =>
        fetch(`${url}/v1/completions`, { method: "POST", body: JSON.stringify({ prompt }) }).then(
          (r) => r.status,
          () => "connection refused"
        )
      )
      expect([503, "connection refused"]).toContain(after)
      yield* Fiber.join(closing)
    }).pipe(isolated))

  it.live("a stream still running after the grace period is aborted: one ABORT", () =>
    Effect.gen(function*() {
      const cluster = yield* TestCluster.make({ engines: 1, engine: { stepMs: 20 } })
      const scope = yield* Scope.make()
      const { aborts, url } = yield* serveOn(cluster, { server: { shutdownGracePeriod: "200 millis" } }).pipe(
        Scope.provide(scope)
      )
      // 2,000 tokens at 20 ms a step: 40 s, far past the grace period (and within the context length).
      const response = yield* startStream(url, 2_000)
      const reading = yield* Effect.forkChild(readAll(response))
      yield* Effect.sleep("100 millis")
      yield* Scope.close(scope, Exit.void)
      const text = yield* Fiber.join(reading)
      expect(records(text)).not.toContain("[DONE]")
      // The cluster outlives the server: the ABORT reached its engine.
      yield* eventually("one ABORT", aborts, (n) => n === 1)
    }).pipe(isolated))
})
