/**
 * Chat templates rendered as transformers' apply_chat_template renders them, checked byte for
 * byte against Python's jinja2 configured as transformers configures it (fixtures/generate.py).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { ChatTemplate } from "../src/index.ts"
import { qwen3Vectors, wordVectors } from "./support/Fixtures.ts"
import { qwen3, words } from "./support/Setup.ts"


describe("ChatTemplate", () => {
  it.effect("Qwen3's template: system, several turns, tools, tool calls, thinking; generation prompt on and off", () =>
    Effect.gen(function*() {
      const tokenizer = yield* qwen3
      const template = yield* ChatTemplate.fromTokenizer(tokenizer)
      // Twice: the second pass is answered by the render cache and the piece cache.
      for (let pass = 0; pass < 2; pass++) {
        for (const chat of qwen3Vectors.chats) {
          const rendered = yield* template.render(chat.messages, {
            addGenerationPrompt: chat.addGenerationPrompt,
            tools: chat.tools,
            variables: chat.variables
          })
          expect(rendered, chat.name).toBe(chat.rendered)
          expect(tokenizer.encode(rendered, { addSpecialTokens: false }), chat.name).toEqual(chat.ids)
        }
      }
    }))

  it.effect("the word tokenizer's template", () =>
    Effect.gen(function*() {
      const tokenizer = yield* words
      const template = yield* ChatTemplate.fromTokenizer(tokenizer)
      for (const chat of wordVectors.chats) {
        const rendered = yield* template.render(chat.messages, { addGenerationPrompt: chat.addGenerationPrompt })
        expect(rendered, chat.name).toBe(chat.rendered)
        expect(tokenizer.encode(rendered, { addSpecialTokens: false }), chat.name).toEqual(chat.ids)
      }
    }))

  it.effect("raise_exception, a render failure and a parse failure are typed errors", () =>
    Effect.gen(function*() {
      const template = yield* ChatTemplate.fromTokenizer(yield* words)
      const raised = yield* Effect.flip(template.render([{ role: "robot", content: "beep" }]))
      expect(raised.reason._tag).toBe("TemplateError")
      expect(raised.message).toContain("unknown role: robot")
      const parse = yield* Effect.flip(ChatTemplate.make(new Map([["default", "{% for m in messages %}"]]), {}, "inline"))
      expect(parse.reason).toMatchObject({ _tag: "TemplateError", stage: "parse" })
      const none = yield* Effect.flip(ChatTemplate.make(new Map(), {}, "somewhere"))
      expect(none.reason._tag).toBe("NoChatTemplate")
      expect((yield* Effect.flip(template.render([]))).reason._tag).toBe("InvalidArgument")
    }))

  it.effect("special tokens are variables; tool_use is chosen when tools are given; continueFinalMessage cuts", () =>
    Effect.gen(function*() {
      const template = yield* ChatTemplate.make(
        new Map([
          ["default", "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}"],
          ["tool_use", "tools: {{ tools | tojson }}"]
        ]),
        { bos_token: "<s>", eos_token: "</s>" },
        "inline"
      )
      const messages = [{ role: "user", content: "hi" }, { role: "assistant", content: "hel" }]
      expect(yield* template.render(messages)).toBe("<s>[user] hi</s>[assistant] hel</s>")
      expect(yield* template.render(messages, { continueFinalMessage: true })).toBe("<s>[user] hi</s>[assistant] hel")
      expect(yield* template.render(messages, { tools: [{ name: "f", é: [1, 2.5, null] }] })).toBe(
        "tools: [{\"name\": \"f\", \"é\": [1, 2.5, null]}]"
      )
      const both = yield* Effect.flip(template.render(messages, { continueFinalMessage: true, addGenerationPrompt: true }))
      expect(both.reason._tag).toBe("InvalidArgument")
    }))

  it.effect("an override template from a file", () =>
    Effect.gen(function*() {
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "mcore-template-"))
      const file = Path.join(dir, "chat.jinja")
      Fs.writeFileSync(file, "{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}")
      const template = yield* ChatTemplate.fromFile(file, yield* words).pipe(
        Effect.ensuring(Effect.sync(() => Fs.rmSync(dir, { recursive: true })))
      )
      expect(yield* template.render([{ role: "user", content: "one two" }])).toBe("one two<|endoftext|>")
      const missing = yield* Effect.flip(ChatTemplate.fromFile(Path.join(dir, "gone.jinja")))
      expect(missing.reason._tag).toBe("FileNotFound")
    }))
})
