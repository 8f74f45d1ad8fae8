/**
 * Chat `image_url` parts through the official `openai` SDK, with the real Qwen3 tokenizer, over
 * the testkit's cluster: an image's bytes reach the engine exactly as sent (frame 3, in order),
 * the template renders them (Qwen2-VL's own template, from a fixture: `<|vision_start|>
 * <|image_pad|><|vision_end|>` per image; or, with `imagePlaceholder`, Qwen3's text-only
 * template), plain and streamed. Every refusal is a 400 naming the part, with nothing sent: a bad
 * `data:` URL, a remote URL where none are allowed or of a host not allowed, loopback and private
 * addresses (the address guard, against an image server on 127.0.0.1 that must see no request),
 * redirects to them, answers that are not images, too large, too slow, a template that ignores
 * images, and a dialect without media. The remote fetch's happy path runs with 127.0.0.1 exempted
 * from the guard (`unsafeExemptMediaAddresses`, for tests only).
 */
import { describe, expect, it } from "@effect/vitest"
import type { Continuations } from "@mcore-effect/testkit"
import type { Tokenizer } from "@mcore-effect/text"
import { Effect } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import OpenAI from "openai"
import type { ServerConfig } from "../src/index.ts"
import { isolated, post, qwen3, sdk, serve, submissions } from "./support/Serve.ts"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const vlTemplate = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "fixtures", "qwen2_vl_chat_template.jinja")
const vision = "<|vision_start|><|image_pad|><|vision_end|>"

const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
const gif = "R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7"
const pngBytes = Buffer.from(png, "base64")
const gifBytes = Buffer.from(gif, "base64")

type Part = OpenAI.Chat.Completions.ChatCompletionContentPart

const image = (url: string): Part => ({ type: "image_url", image_url: { url } })
const text = (value: string): Part => ({ type: "text", text: value })
const asking = (...parts: Array<Part>): Array<OpenAI.Chat.Completions.ChatCompletionMessageParam> => [{ role: "user", content: parts }]

/** The engines answer "A single pixel." when the prompt holds an image placeholder. */
const continuations = (tokenizer: Tokenizer.Service): Continuations.Script => {
  const answer = [...tokenizer.encode("A single pixel.", { addSpecialTokens: false }), tokenizer.eosTokenIds[0]!]
  return (ids) => tokenizer.decode(ids).includes(vision) ? answer : undefined
}

const served = (server?: Partial<ServerConfig.ServerOptions>, client?: { readonly protocol?: string }) =>
  Effect.gen(function*() {
    const tokenizer = yield* qwen3
    const handle = yield* serve({
      tokenizer: "qwen3",
      server: { chatTemplate: vlTemplate, ...server },
      client: client as never,
      cluster: { engine: { continuations: continuations(tokenizer), defaultTokensToGenerate: 16 } }
    })
    return { ...handle, openai: sdk(handle.baseURL) }
  })

/** The SUBMIT_REQUESTs that came after `before` of them: their decoded prompts and images. */
const sentSince = (handle: Effect.Success<ReturnType<typeof served>>, before: number) =>
  Effect.map(submissions(handle.cluster), (all) =>
    all.slice(before).map((s) => ({
      prompt: handle.tokenizer.decode(s.prompt as ReadonlyArray<number>),
      images: (s.media?.image ?? []).map((bytes) => Buffer.from(bytes).toString("base64"))
    })))

const sentCount = (handle: Effect.Success<ReturnType<typeof served>>) => Effect.map(submissions(handle.cluster), (all) => all.length)

/** A refusal through the SDK: its status, param and message. */
const refusal = (openai: OpenAI, messages: Array<OpenAI.Chat.Completions.ChatCompletionMessageParam>, stream = false) =>
  promise(() =>
    openai.chat.completions.create({ model: "test-model", messages, stream } as never).then(
      () => ({ status: 200, param: null as string | null | undefined, message: "" }),
      (error: InstanceType<typeof OpenAI.APIError>) => ({ status: error.status, param: error.param, message: error.message })
    )
  )

/** An image server on 127.0.0.1 (a real HTTP server on loopback), counting what it is asked. */
const imageServer = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ readonly base: string; readonly port: number; readonly asked: Array<string>; readonly close: () => void }>((resolve) => {
      const asked: Array<string> = []
      const server = createServer((request, response) => {
        const path = request.url ?? "/"
        asked.push(path)
        const port = (server.address() as AddressInfo).port
        const redirect = (to: string) => response.writeHead(302, { location: to }).end()
        switch (path) {
          case "/cat.png":
            return response.writeHead(200, { "content-type": "image/png" }).end(pngBytes)
          case "/moved":
            return redirect("/cat.png")
          case "/to-metadata":
            return redirect("http://169.254.169.254/latest/meta-data/")
          case "/to-loopback":
            return redirect(`http://127.0.0.2:${port}/cat.png`)
          case "/loop":
            return redirect("/loop")
          case "/page":
            return response.writeHead(200, { "content-type": "text/html" }).end("<html>not an image</html>")
          case "/big":
            return response.writeHead(200, { "content-type": "image/png" }).end(Buffer.concat([pngBytes, Buffer.alloc(8192)]))
          case "/slow":
            return // never answers; the fetch times out
          default:
            return response.writeHead(404).end()
        }
      })
      server.listen(0, "127.0.0.1", () => {
        const port = (server.address() as AddressInfo).port
        resolve({ base: `http://127.0.0.1:${port}`, port, asked, close: () => server.close() })
      })
    })
  ),
  (s) =>
    Effect.sync(() => {
      s.close()
    })
)

describe("chat image_url parts through the openai SDK", () => {
  it.live("data: URLs: the bytes reach the engine exactly, in order; the template renders each image; plain and streamed", () =>
    Effect.gen(function*() {
      const handle = yield* served()
      const messages = asking(text("What is in the picture?"), image(`data:image/png;base64,${png}`), text("And here?"), {
        type: "image_url",
        image_url: { url: `data:image/gif;base64,${gif}`, detail: "low" }
      })
      const before = yield* sentCount(handle)
      const chat = yield* promise(() => handle.openai.chat.completions.create({ model: "test-model", messages }))
      expect(chat.choices[0]!.message.content).toBe("A single pixel.")
      const stream = yield* promise(async () => {
        let content = ""
        for await (const chunk of await handle.openai.chat.completions.create({ model: "test-model", messages, stream: true })) {
          content += chunk.choices[0]?.delta.content ?? ""
        }
        return content
      })
      expect(stream).toBe("A single pixel.")
      const sent = yield* sentSince(handle, before)
      expect(sent).toHaveLength(2)
      for (const s of sent) {
        expect(s.images).toEqual([png, gif].map((b64) => Buffer.from(b64, "base64").toString("base64")))
        expect(s.prompt).toContain(`<|im_start|>user\nWhat is in the picture?${vision}And here?${vision}<|im_end|>`)
      }
      // /tokenize renders them the same way, and loads nothing.
      const tokenized = yield* post(`${handle.url}/tokenize`, { messages })
      expect(handle.tokenizer.decode(tokenized.json().tokens)).toBe(sent[0]!.prompt)
    }).pipe(isolated), 60_000)

  it.live("imagePlaceholder: a text-only template gets the placeholder in the message's text", () =>
    Effect.gen(function*() {
      const handle = yield* served({ chatTemplate: undefined, imagePlaceholder: vision })
      const before = yield* sentCount(handle)
      const chat = yield* promise(() =>
        handle.openai.chat.completions.create({ model: "test-model", messages: asking(image(`data:image/png;base64,${png}`), text("What is it?")) })
      )
      expect(chat.choices[0]!.message.content).toContain("A single pixel.")
      const [sent] = yield* sentSince(handle, before)
      expect(sent!.images).toEqual([png])
      expect(sent!.prompt).toContain(`<|im_start|>user\n${vision}\nWhat is it?<|im_end|>`)
    }).pipe(isolated), 60_000)

  it.live("a template that fails on image parts, or renders nothing for them, is refused by name, nothing sent", () =>
    Effect.gen(function*() {
      // Qwen3's own template takes text content only; the fixture's renders text parts only.
      for (const [chatTemplate, why] of [
        [undefined, "the chat template fails on content parts"],
        [Path.join(Path.dirname(vlTemplate), "text_parts_chat_template.jinja"), "the chat template renders nothing for image parts"]
      ] as const) {
        const handle = yield* served({ chatTemplate })
        const refused = yield* refusal(handle.openai, asking(text("hi"), image(`data:image/png;base64,${png}`)))
        expect([refused.status, refused.param]).toEqual([400, "messages[0].content[1]"])
        expect(refused.message).toContain(why)
        expect(refused.message).toContain("--image-placeholder")
        expect(yield* sentCount(handle)).toBe(0)
      }
    }).pipe(isolated), 60_000)

  it.live("bad image parts: a 400 naming the URL, saying why, and nothing sent", () =>
    Effect.gen(function*() {
      const handle = yield* served({ maxImageBytes: 1024, maxImagesPerRequest: 2 })
      const url = "messages[0].content[1].image_url.url"
      const cases: ReadonlyArray<readonly [Array<OpenAI.Chat.Completions.ChatCompletionMessageParam>, string, string]> = [
        [asking(text("x"), image("data:image/png;base64,not*base64")), url, "not base64"],
        [asking(text("x"), image(`data:text/plain;base64,${png}`)), url, "is not an image's"],
        [asking(text("x"), image(`data:image/png;base64,${Buffer.from("hello").toString("base64")}`)), url, "not an image"],
        [asking(text("x"), image(`data:image/png;base64,${Buffer.concat([pngBytes, Buffer.alloc(2048)]).toString("base64")}`)), url, "more than this server's limit of 1024"],
        [asking(text("x"), image(`data:image/png,${png}`)), url, "only base64"],
        [asking(text("x"), image("file:///etc/passwd")), url, "file: URLs are not taken"],
        [asking(text("x"), image("not a url")), url, "not a URL"],
        [asking(text("x"), image("https://images.example/cat.png")), url, "does not fetch remote images"],
        [asking(text("x"), image(`data:image/png;base64,${png}`), image(`data:image/png;base64,${png}`), image(`data:image/png;base64,${png}`)), "messages[0].content[3]", "more than 2 images"],
        [[{ role: "user", content: [text("x"), { type: "image_url" } as never] }], "messages[0].content[1].image_url", "missing"]
      ]
      for (const [messages, param, why] of cases) {
        const refused = yield* refusal(handle.openai, messages)
        expect({ why, status: refused.status, param: refused.param }).toEqual({ why, status: 400, param })
        expect(refused.message).toContain(why)
      }
      // Streamed, the same refusal comes before the stream's headers: a 400, not an error record.
      const streamed = yield* refusal(handle.openai, asking(text("x"), image("data:image/png;base64,%%")), true)
      expect([streamed.status, streamed.param]).toEqual([400, url])
      expect(yield* sentCount(handle)).toBe(0)
    }).pipe(isolated), 60_000)

  it.live("the address guard: loopback by address or by name refused, a host not allowed refused; the image server asked nothing", () =>
    Effect.gen(function*() {
      const images = yield* imageServer
      const handle = yield* served({ allowedMediaDomains: ["127.0.0.1", "localhost", "images.example"] })
      const url = "messages[0].content[1].image_url.url"
      const cases: ReadonlyArray<readonly [string, string]> = [
        [`${images.base}/cat.png`, "127.0.0.1 is a loopback, private, link-local or reserved address"],
        [`http://localhost:${images.port}/cat.png`, "localhost resolves to"],
        [`http://[::ffff:127.0.0.1]:${images.port}/cat.png`, "is not one of this server's allowed media domains"],
        ["http://169.254.169.254/latest/meta-data/", "169.254.169.254 is not one of this server's allowed media domains"],
        ["http://other.example/cat.png", "other.example is not one of this server's allowed media domains"]
      ]
      for (const [target, why] of cases) {
        const refused = yield* refusal(handle.openai, asking(text("x"), image(target)))
        expect({ target, status: refused.status, param: refused.param }).toEqual({ target, status: 400, param: url })
        expect(refused.message).toContain(why)
      }
      const anyHost = yield* served({ allowedMediaDomains: ["*"] })
      for (const target of [`http://[::ffff:127.0.0.1]:${images.port}/cat.png`, "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/a.png"]) {
        const refused = yield* refusal(anyHost.openai, asking(text("x"), image(target)))
        expect({ target, status: refused.status }).toEqual({ target, status: 400 })
        expect(refused.message).toContain("a loopback, private, link-local or reserved address")
      }
      expect(images.asked).toEqual([])
      expect((yield* sentCount(handle)) + (yield* sentCount(anyHost))).toBe(0)
    }).pipe(isolated), 60_000)

  it.live("remote images with 127.0.0.1 exempted: fetched and sent exactly, redirects followed; redirects to refused addresses, bad answers refused", () =>
    Effect.gen(function*() {
      const images = yield* imageServer
      const handle = yield* served({
        allowedMediaDomains: ["*"],
        unsafeExemptMediaAddresses: ["127.0.0.1"],
        maxImageBytes: 4096,
        mediaFetchTimeout: "300 millis"
      })
      const before = yield* sentCount(handle)
      for (const path of ["/cat.png", "/moved"]) {
        const chat = yield* promise(() =>
          handle.openai.chat.completions.create({ model: "test-model", messages: asking(text("What is it?"), image(`${images.base}${path}`)) })
        )
        expect(chat.choices[0]!.message.content).toBe("A single pixel.")
      }
      const sent = yield* sentSince(handle, before)
      expect(sent.map((s) => s.images)).toEqual([[png], [png]])
      expect(images.asked).toEqual(["/cat.png", "/moved", "/cat.png"])

      const url = "messages[0].content[1].image_url.url"
      const cases: ReadonlyArray<readonly [string, string]> = [
        ["/to-metadata", "redirected to http://169.254.169.254/latest/meta-data/: 169.254.169.254 is a loopback, private, link-local or reserved address"],
        ["/to-loopback", `redirected to http://127.0.0.2:${images.port}/cat.png: 127.0.0.2 is a loopback`],
        ["/loop", "more than 3 redirects"],
        ["/page", "what it answered is not an image"],
        ["/big", "more than this server's limit of 4096"],
        ["/missing", "the server answered 404"],
        ["/slow", "no whole answer within 300 ms"]
      ]
      const sentBefore = yield* sentCount(handle)
      for (const [path, why] of cases) {
        const refused = yield* refusal(handle.openai, asking(text("x"), image(`${images.base}${path}`)))
        expect({ path, status: refused.status, param: refused.param }).toEqual({ path, status: 400, param: url })
        expect(refused.message).toContain(why)
      }
      expect(yield* sentCount(handle)).toBe(sentBefore)
    }).pipe(isolated), 60_000)

  it.live("a dialect without media: a 400 naming it, plain and streamed, nothing sent and nothing fetched", () =>
    Effect.gen(function*() {
      const images = yield* imageServer
      const handle = yield* served({ allowedMediaDomains: ["*"], unsafeExemptMediaAddresses: ["127.0.0.1"] }, { protocol: "core_v0.19" })
      for (const stream of [false, true]) {
        const refused = yield* refusal(handle.openai, asking(text("x"), image(`${images.base}/cat.png`)), stream)
        expect([refused.status, refused.param]).toEqual([400, "messages[0].content[1]"])
        expect(refused.message).toContain("the core_v0.19 protocol does not support media")
      }
      expect(images.asked).toEqual([])
      expect(yield* sentCount(handle)).toBe(0)
    }).pipe(isolated), 60_000)
})
