/**
 * The cache of rendered chats gives what rendering gives (Python's renders on hits too: see
 * ChatTemplate.test.ts, which renders them twice): the same text as an uncached template for any
 * chats and options in any order while entries are evicted, a message changed in place rendered
 * afresh; and its key tells apart what a template can tell apart, and refuses what is not plain
 * data.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "fast-check"
import { isDeepStrictEqual } from "node:util"
import * as RenderCache from "../../src/internal/renderCache.ts"
import { ChatTemplate } from "../../src/index.ts"
import { qwen3 } from "../support/Setup.ts"

const templates = Effect.gen(function*() {
  const tokenizer = yield* qwen3
  const cached = yield* ChatTemplate.fromTokenizer(tokenizer, { renderCache: 3 })
  const uncached = yield* ChatTemplate.fromTokenizer(tokenizer, { renderCache: 0 })
  return { cached, uncached }
})

/** Plain data as requests carry it (absent and undefined keys, nested arrays and objects). */
const plain: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.string({ maxLength: 4 }),
    fc.integer({ min: -3, max: 3 }),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom("a", "b", "c"), tie("value"), { maxKeys: 3, noNullPrototype: true })
  )
})).value

describe("the render cache", () => {
  it.effect("cached equals uncached for any chats and options in any order, while entries are evicted", () =>
    Effect.gen(function*() {
      const { cached, uncached } = yield* templates
      const message = fc.record({
        role: fc.constantFrom("system", "user", "assistant"),
        content: fc.constantFrom("Hi", "Hi ", "hi", "", "Write two sentences.")
      })
      const options = fc.record({
        addGenerationPrompt: fc.boolean(),
        variables: fc.constantFrom(undefined, { enable_thinking: false }, { enable_thinking: true })
      }, { requiredKeys: [] })
      const chats = fc.array(fc.tuple(fc.array(message, { minLength: 1, maxLength: 3 }), options), { minLength: 1, maxLength: 8 })
      yield* Effect.promise(() =>
        fc.assert(
          fc.asyncProperty(chats, async (list) => {
            for (const [messages, opts] of [...list, ...list.reverse()]) {
              const want = await Effect.runPromise(uncached.render(messages, opts))
              expect(await Effect.runPromise(cached.render(messages, opts))).toBe(want)
            }
          }),
          { numRuns: 100 }
        )
      )
    }))

  it.effect("a message changed in place after a render is rendered afresh; distinct options give distinct texts", () =>
    Effect.gen(function*() {
      const { cached, uncached } = yield* templates
      const messages = [{ role: "user", content: "Hello" }]
      const first = yield* cached.render(messages, { addGenerationPrompt: true })
      messages[0]!.content = "Goodbye"
      const second = yield* cached.render(messages, { addGenerationPrompt: true })
      expect(second).not.toBe(first)
      expect(second).toBe(yield* uncached.render(messages, { addGenerationPrompt: true }))
      const off = yield* cached.render(messages, { addGenerationPrompt: false })
      const thinking = yield* cached.render(messages, { addGenerationPrompt: true, variables: { enable_thinking: false } })
      expect(new Set([second, off, thinking]).size).toBe(3)
      expect(off).toBe(yield* uncached.render(messages, { addGenerationPrompt: false }))
      expect(thinking).toBe(yield* uncached.render(messages, { addGenerationPrompt: true, variables: { enable_thinking: false } }))
    }))

  it("the key: equal keys only for equal data (absent and undefined apart); plain data only", () => {
    fc.assert(
      fc.property(plain, plain, (a, b) => {
        const ka = RenderCache.keyOf(a)
        expect(ka).toBeDefined()
        expect(RenderCache.keyOf(structuredClone(a))).toBe(ka)
        if (ka === RenderCache.keyOf(b)) expect(isDeepStrictEqual(a, b)).toBe(true)
      }),
      { numRuns: 500 }
    )
    expect(RenderCache.keyOf({ a: undefined })).not.toBe(RenderCache.keyOf({}))
    expect(RenderCache.keyOf({ a: 1, b: 2 })).not.toBe(RenderCache.keyOf({ b: 2, a: 1 }))
    expect(RenderCache.keyOf(["1"])).not.toBe(RenderCache.keyOf([1]))
    for (const value of [new Date(0), new Map(), () => 1, Number.NaN, -0, 1n, Symbol.for("x"), [1, , 2], { get a() { return 1 } }]) {
      expect(RenderCache.keyOf([{ role: "user", content: value }])).toBeUndefined()
    }
  })

  it("hits, misses, eviction and the key length bound; a template reading the clock is not cacheable", () => {
    const cache = RenderCache.make({ entries: 2, maxKeyLength: 10 })!
    cache.set("a", "A")
    cache.set("b", "B")
    expect(cache.get("a")).toBe("A")
    cache.set("c", "C")
    expect(cache.get("b")).toBeUndefined()
    expect(cache.get("a")).toBe("A")
    cache.set("x".repeat(11), "long")
    expect(cache.get("x".repeat(11))).toBeUndefined()
    expect(cache.stats).toMatchObject({ hits: 2, misses: 2 })
    expect(cache.stats.size()).toBe(2)
    expect(RenderCache.make({ entries: 0, maxKeyLength: 10 })).toBeUndefined()
    expect(RenderCache.cacheable("{{ strftime_now('%d %b %Y') }}")).toBe(false)
    expect(RenderCache.cacheable("{{ bos_token }}")).toBe(true)
  })
})
