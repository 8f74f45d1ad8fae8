/**
 * `x-request-id` (echoed, or made here; the response's `id` carries it) and CORS
 * (`allowedOrigins`): the official `openai` SDK reads the id back as `_request_id`; preflights
 * and the headers of plain and streamed answers are read with fetch, as a browser would send them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import OpenAI from "openai"
import { isolated, post, request, serve } from "./support/Serve.ts"

const body = { model: "test-model", messages: [{ role: "user", content: "the quick fox" }], max_tokens: 3 }

describe("x-request-id and CORS", () => {
  it.live("x-request-id: the client's echoed and in the id, or one made here; on errors and streams too", () =>
    Effect.gen(function*() {
      const { baseURL, url } = yield* serve()
      const openai = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, defaultHeaders: { "x-request-id": "trace-42" } })
      const chat = yield* Effect.promise(() => openai.chat.completions.create(body as never)) as Effect.Effect<OpenAI.ChatCompletion & { _request_id?: string }>
      expect(chat._request_id).toBe("trace-42")
      expect(chat.id).toBe("chatcmpl-trace-42")

      const made = yield* post(`${url}/v1/completions`, { prompt: "the quick fox", max_tokens: 2 })
      const id = made.headers.get("x-request-id")!
      expect(id).toMatch(/^[0-9a-f]{20}$/)
      expect(made.json().id).toBe(`cmpl-${id}`)
      const other = (yield* post(`${url}/v1/completions`, { prompt: "the quick fox", max_tokens: 2 })).headers.get("x-request-id")
      expect(other).not.toBe(id)

      const streamed = yield* post(`${url}/v1/chat/completions`, { ...body, stream: true }, { "x-request-id": "s-1" })
      expect(streamed.headers.get("x-request-id")).toBe("s-1")
      const first = JSON.parse(streamed.text.split("\n\n")[0]!.slice("data: ".length))
      expect(first.id).toBe("chatcmpl-s-1")
      // Not usable (too long): replaced.
      const refused = yield* post(`${url}/v1/completions`, { prompt: "" }, { "x-request-id": "x".repeat(200) })
      expect(refused.status).toBe(400)
      expect(refused.headers.get("x-request-id")).toMatch(/^[0-9a-f]{20}$/)
    }).pipe(isolated))

  it.live("CORS: preflight for allowed origins only (no API key asked), headers on plain and streamed answers; off by default", () =>
    Effect.gen(function*() {
      const { url } = yield* serve({ server: { allowedOrigins: ["https://app.example"], apiKey: "k" } })
      const preflight = (origin: string) =>
        request(`${url}/v1/chat/completions`, {
          method: "OPTIONS",
          headers: {
            origin,
            "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type, x-stainless-os"
          }
        })
      const ok = yield* preflight("https://app.example")
      expect(ok.status).toBe(204)
      expect(ok.headers.get("access-control-allow-origin")).toBe("https://app.example")
      expect(ok.headers.get("access-control-allow-methods")).toContain("POST")
      expect(ok.headers.get("access-control-allow-headers")).toBe("authorization, content-type, x-stainless-os")
      expect((yield* preflight("https://evil.example")).status).toBe(403)

      const auth = { authorization: "Bearer k", origin: "https://app.example" }
      const plain = yield* post(`${url}/v1/chat/completions`, body, auth)
      expect(plain.status).toBe(200)
      expect(plain.headers.get("access-control-allow-origin")).toBe("https://app.example")
      expect(plain.headers.get("access-control-expose-headers")).toContain("x-request-id")
      expect(plain.headers.get("access-control-expose-headers")).toContain("x-ignored-fields")
      const streamed = yield* post(`${url}/v1/chat/completions`, { ...body, stream: true }, auth)
      expect(streamed.headers.get("access-control-allow-origin")).toBe("https://app.example")
      const denied = yield* post(`${url}/v1/chat/completions`, body, { origin: "https://app.example" })
      expect(denied.status).toBe(401)
      expect(denied.headers.get("access-control-allow-origin")).toBe("https://app.example")
      const foreign = yield* post(`${url}/v1/chat/completions`, body, { ...auth, origin: "https://evil.example" })
      expect(foreign.headers.get("access-control-allow-origin")).toBeNull()

      const off = yield* serve()
      const none = yield* request(`${off.url}/v1/chat/completions`, { method: "OPTIONS", headers: { origin: "https://app.example" } })
      expect(none.status).toBe(404)
      expect(none.headers.get("access-control-allow-origin")).toBeNull()
    }).pipe(isolated))
})
