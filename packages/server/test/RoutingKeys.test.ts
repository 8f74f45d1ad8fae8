/**
 * The server over a fleet of three test coordinators (ZeroMQ on loopback), called with the openai
 * SDK: `prompt_cache_key`, then `user`, then the `--session-header` header route a request, one
 * key to one coordinator; a conversation of short turns with no key stays on one coordinator;
 * the Responses API repeats the key; a key that is not a string is a 400.
 */
import { describe, expect, it } from "@effect/vitest"
import { Fleet } from "@mcore-effect/client"
import { type TestCluster, TestFleet } from "@mcore-effect/testkit"
import { Tokenizer } from "@mcore-effect/text"
import { Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { Server } from "../src/index.ts"
import { isolated, sdk, words } from "./support/Serve.ts"

const SESSION_HEADER = "x-session-id"

/** SUBMIT_REQUEST messages each coordinator has routed to its engines so far. */
const routed = (clusters: ReadonlyArray<TestCluster.Handle>) =>
  Effect.forEach(clusters, (c) =>
    Effect.map(c.coordinator.snapshot, (s) =>
      s.engines.reduce((sum, e) => sum + e.received.filter((d) => d.name === "SUBMIT_REQUEST").length, 0)))

/** A server over a fleet of three test clusters. */
const serveFleet = Effect.gen(function*() {
  const testFleet = yield* TestFleet.make({ coordinators: 3, engines: 1, protocol: "main" })
  const tokenizer = yield* words
  const context = yield* Layer.build(
    Server.layer({ model: "test-model", port: 0, drainDelay: 0, sessionHeader: SESSION_HEADER.toUpperCase() }).pipe(
      Layer.provide(Layer.merge(
        Fleet.layer({ coordinators: testFleet.addresses, protocol: "main" }),
        Layer.succeed(Tokenizer.Tokenizer, tokenizer)
      ))
    )
  )
  const address = Context.get(context, HttpServer.HttpServer).address
  const url = `http://127.0.0.1:${"port" in address ? address.port : 0}`
  const clusters = testFleet.clusters
  /** Runs `request` alone and says which coordinator took it. */
  const whichTook = <A>(request: () => Promise<A>) =>
    Effect.gen(function*() {
      const before = yield* routed(clusters)
      const result = yield* Effect.promise(request)
      const after = yield* routed(clusters)
      const took = after.flatMap((n, i) => (n > before[i]! ? [i] : []))
      expect(took).toHaveLength(1)
      return { coordinator: took[0]!, result }
    })
  return { url, openai: sdk(`${url}/v1`), whichTook }
})

const chat = (content: string, extra: Record<string, unknown> = {}) => ({
  model: "test-model",
  messages: [{ role: "user" as const, content }],
  max_tokens: 2,
  ...extra
})

describe("routing keys over a fleet", () => {
  it.live("prompt_cache_key, then user, then the session header: one key, one coordinator; keys spread", () =>
    Effect.gen(function*() {
      const { openai, whichTook } = yield* serveFleet
      const seen = new Set<number>()
      for (let k = 0; k < 12; k++) {
        const places = new Set<number>()
        // Different prompts, one key: by prompt_cache_key, by user, by the header.
        for (const [i, extra, headers] of [
          [0, { prompt_cache_key: `conversation-${k}` }, {}],
          [1, { prompt_cache_key: `conversation-${k}`, user: "someone-else" }, {}],
          [2, { user: `conversation-${k}` }, { [SESSION_HEADER]: "ignored-when-user-is-set" }],
          [3, {}, { [SESSION_HEADER]: `conversation-${k}` }]
        ] as const) {
          const { coordinator } = yield* whichTook(() =>
            openai.chat.completions.create(chat(`question ${k} variant ${i} with words`, extra) as never, { headers })
          )
          places.add(coordinator)
        }
        expect(places.size).toBe(1)
        seen.add([...places][0]!)
      }
      // Keys spread: more of them, one request each. The coordinators' ports are random, so 12
      // keys fall on two of three in about 1 run in 40 (3 x (2/3)^12; a full run drew it); 60
      // leave it below 1 in 10^10.
      for (let k = 12; k < 60 && seen.size < 3; k++) {
        const { coordinator } = yield* whichTook(() =>
          openai.chat.completions.create(chat(`question ${k}`, { prompt_cache_key: `conversation-${k}` }) as never)
        )
        seen.add(coordinator)
      }
      expect(seen.size).toBe(3)
    }).pipe(isolated))

  it.live("short chats with no key: every turn on the coordinator of the first", () =>
    Effect.gen(function*() {
      const { openai, whichTook } = yield* serveFleet
      for (let c = 0; c < 6; c++) {
        const messages: Array<{ role: "user" | "assistant"; content: string }> = []
        const places = new Set<number>()
        for (let t = 0; t < 4; t++) {
          messages.push({ role: "user", content: `chat ${c} turn ${t} says something short` })
          const { coordinator, result } = yield* whichTook(() =>
            openai.chat.completions.create({ model: "test-model", messages, max_tokens: 3 })
          )
          places.add(coordinator)
          messages.push({ role: "assistant", content: result.choices[0]!.message.content ?? "" })
        }
        expect(places.size).toBe(1)
      }
    }).pipe(isolated))

  it.live("the Responses API repeats the key; a key that is not a string is a 400 naming it, nothing sent", () =>
    Effect.gen(function*() {
      const { openai, url } = yield* serveFleet
      const response = yield* Effect.promise(() =>
        openai.responses.create({ model: "test-model", input: "hello there", max_output_tokens: 2, prompt_cache_key: "k-1", user: "u-1" })
      )
      expect(response.prompt_cache_key).toBe("k-1")
      expect((response as unknown as { user: string }).user).toBe("u-1")
      for (const field of ["prompt_cache_key", "user"]) {
        const refused = yield* Effect.promise(() =>
          fetch(`${url}/v1/chat/completions`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(chat("hello", { [field]: 42 }))
          })
        )
        expect(refused.status).toBe(400)
        expect(((yield* Effect.promise(() => refused.json())) as { error: { param: string } }).error.param).toBe(field)
      }
    }).pipe(isolated))
})
