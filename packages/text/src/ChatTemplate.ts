/**
 * Chat templates: a tokenizer's Jinja `chat_template` rendered with `@huggingface/jinja`, as
 * Hugging Face transformers' `apply_chat_template` renders it: the same variables (`messages`,
 * `tools`, `documents`, `add_generation_prompt`, the special tokens `bos_token`, `eos_token`...,
 * and any extra ones such as Qwen3's `enable_thinking`), the same environment (`trim_blocks`,
 * `lstrip_blocks`, a `raise_exception` global, `tojson` as Python's `json.dumps` with
 * `ensure_ascii=False`), the same choice among named templates (`tool_use` when tools are given),
 * and the same `continue_final_message` cut. Checked byte for byte against Python's `jinja2`
 * configured as transformers configures it (test/fixtures).
 *
 * @since 0.1.0
 */
import { Template } from "@huggingface/jinja"
import * as Effect from "effect/Effect"
import * as Fs from "node:fs/promises"
import * as RenderCache from "./internal/renderCache.ts"
import { FileNotFound, InvalidArgument, NoChatTemplate, type TextError, textError, TemplateError } from "./TextError.ts"
import type * as Tokenizer from "./Tokenizer.ts"

/**
 * One message of a chat: a role (`system`, `user`, `assistant`, `tool`...) and its content (text,
 * or a list of parts for templates that take them; `null` for an assistant turn that only calls
 * tools), plus whatever else the template reads (`tool_calls`, `reasoning_content`, `name`...).
 *
 * @category models
 * @since 0.1.0
 */
export interface Message {
  readonly role: string
  readonly content?: string | ReadonlyArray<unknown> | null | undefined
  readonly [key: string]: unknown
}

/**
 * Options of {@link ChatTemplate.render}.
 *
 * @category models
 * @since 0.1.0
 */
export interface RenderOptions {
  /** End with the start of an assistant turn, for the model to complete. Default false (as transformers). */
  readonly addGenerationPrompt?: boolean | undefined
  /**
   * Leave the last message open (for the model to continue it): the text is cut right after its
   * content. Not with `addGenerationPrompt`.
   */
  readonly continueFinalMessage?: boolean | undefined
  /** Tool definitions (JSON schemas, as OpenAI's `tools`); `null` when none. */
  readonly tools?: ReadonlyArray<unknown> | null | undefined
  /** Documents for retrieval-augmented templates; `null` when none. */
  readonly documents?: ReadonlyArray<unknown> | null | undefined
  /** Any other template variables (`enable_thinking: false` for Qwen3...). */
  readonly variables?: Readonly<Record<string, unknown>> | undefined
}

/**
 * A parsed chat template (or a set of named ones) with the special tokens it sees.
 *
 * @category models
 * @since 0.1.0
 */
export interface ChatTemplate {
  /** Where it came from (the tokenizer directory, or a template file). */
  readonly source: string
  /** The names of its templates (`default`, or those of a list such as `tool_use`). */
  readonly names: ReadonlyArray<string>
  /** Renders a chat as a prompt. A template error, or a `raise_exception` call, is a `TemplateError`. */
  readonly render: (
    messages: ReadonlyArray<Message>,
    options?: RenderOptions | undefined
  ) => Effect.Effect<string, TextError>
}

const describe = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

const invalid = (name: string, why: string): TextError => textError(new InvalidArgument({ name, why }))

const checkMessages = (messages: ReadonlyArray<Message>): TextError | undefined => {
  if (!Array.isArray(messages) || messages.length === 0) return invalid("messages", "a chat needs at least one message")
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as unknown
    if (typeof message !== "object" || message === null || Array.isArray(message)) {
      return invalid(`messages[${i}]`, "expected an object with a role")
    }
    if (typeof (message as Message).role !== "string") return invalid(`messages[${i}].role`, "expected a string")
  }
  return undefined
}

/**
 * Options of making a chat template ({@link make}, {@link fromTokenizer}, {@link fromFile}).
 *
 * @category models
 * @since 0.1.0
 */
export interface MakeOptions {
  /**
   * How many rendered chats `render` keeps, by their messages and options written out in full
   * (least recently used forgotten first; default 256, 0 turns it off). A template that reads
   * the clock (`strftime_now`) is never cached; a chat holding anything but plain data (class
   * instances, functions, `NaN`), or longer than 8,192 characters written out, is rendered every
   * time.
   */
  readonly renderCache?: number | undefined
}

/**
 * A chat template from Jinja sources by name (`default` for a single one), seeing
 * `specialTokens` (a tokenizer's `specialTokensMap`). Fails with a `TemplateError` when a
 * template does not parse.
 *
 * @example
 * ```ts
 * import { ChatTemplate } from "@mcore-effect/text"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const template = yield* ChatTemplate.make(
 *     new Map([["default", "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"]]),
 *     {},
 *     "inline"
 *   )
 *   return yield* template.render([{ role: "user", content: "Hi" }])
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const make = (
  sources: ReadonlyMap<string, string>,
  specialTokens: Readonly<Record<string, unknown>>,
  source: string,
  makeOptions?: MakeOptions | undefined
): Effect.Effect<ChatTemplate, TextError> =>
  Effect.suspend(() => {
    const parsed = new Map<string, Template>()
    for (const [name, text] of sources) {
      try {
        parsed.set(name, new Template(text))
      } catch (cause) {
        const why = sources.size === 1 ? describe(cause) : `${name}: ${describe(cause)}`
        return Effect.fail(textError(new TemplateError({ stage: "parse", why })))
      }
    }
    if (parsed.size === 0) return Effect.fail(textError(new NoChatTemplate({ source })))
    const names = [...parsed.keys()]

    /** transformers' choice: `tool_use` when tools are given and there is one, else `default`. */
    const pick = (options: RenderOptions | undefined): Template | TextError => {
      if (parsed.size === 1) return parsed.values().next().value!
      const hasTools = options?.tools !== undefined && options.tools !== null
      const chosen = (hasTools ? parsed.get("tool_use") : undefined) ?? parsed.get("default")
      return chosen ?? textError(new TemplateError({
        stage: "render",
        why: `several named templates (${names.join(", ")}) and none is "default"`
      }))
    }

    const cache = [...sources.values()].every(RenderCache.cacheable)
      ? RenderCache.make({ ...RenderCache.defaults, entries: makeOptions?.renderCache ?? RenderCache.defaults.entries })
      : undefined

    const render = (messages: ReadonlyArray<Message>, options?: RenderOptions | undefined) =>
      Effect.suspend((): Effect.Effect<string, TextError> => {
        const refused = checkMessages(messages)
        if (refused !== undefined) return Effect.fail(refused)
        if (options?.continueFinalMessage === true && options.addGenerationPrompt === true) {
          return Effect.fail(invalid("continueFinalMessage", "cannot be used with addGenerationPrompt"))
        }
        // The options choose the template (`tool_use`), so they are part of the key.
        const key = cache === undefined ? undefined : RenderCache.keyOf([messages, options])
        if (key !== undefined) {
          const held = cache!.get(key)
          if (held !== undefined) return Effect.succeed(held)
        }
        const template = pick(options)
        if (!(template instanceof Template)) return Effect.fail(template)
        let text: string
        try {
          text = template.render({
            ...specialTokens,
            ...options?.variables,
            messages,
            tools: options?.tools ?? null,
            documents: options?.documents ?? null,
            add_generation_prompt: options?.addGenerationPrompt === true
          })
        } catch (cause) {
          return Effect.fail(textError(new TemplateError({ stage: "render", why: describe(cause) })))
        }
        if (options?.continueFinalMessage === true) {
          const cut = continueFinal(text, messages[messages.length - 1]!)
          if (typeof cut !== "string") return Effect.fail(cut)
          text = cut
        }
        if (key !== undefined) cache!.set(key, text)
        return Effect.succeed(text)
      })

    return Effect.succeed({ source, names, render })
  })

/** transformers: cut the text right after the last message's (stripped) content. */
const continueFinal = (text: string, last: Message): string | TextError => {
  let content: unknown = last.content
  if (Array.isArray(content)) {
    const lastPart = content[content.length - 1] as { text?: unknown } | undefined
    content = lastPart?.text
  }
  if (typeof content !== "string") return invalid("continueFinalMessage", "the last message has no text content")
  const final = content.trim()
  const at = text.lastIndexOf(final)
  if (at < 0) return invalid("continueFinalMessage", "the template does not write the last message's content verbatim")
  return text.slice(0, at + final.length)
}

/**
 * The tokenizer's own chat template(s) (from `chat_template.jinja` or the config's
 * `chat_template`), seeing its special tokens. Fails with `NoChatTemplate` when it has none.
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromTokenizer = (
  tokenizer: Tokenizer.Service,
  options?: MakeOptions | undefined
): Effect.Effect<ChatTemplate, TextError> =>
  make(tokenizer.chatTemplates, tokenizer.specialTokensMap, tokenizer.source, options)

/**
 * A template from a file (an override of the tokenizer's), seeing the tokenizer's special
 * tokens when one is given.
 *
 * @example
 * ```ts
 * import { ChatTemplate, Tokenizer } from "@mcore-effect/text"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const tokenizer = yield* Tokenizer.Tokenizer
 *   const template = yield* ChatTemplate.fromFile("./chatml.jinja", tokenizer)
 *   return yield* template.render([{ role: "user", content: "Hi" }], { addGenerationPrompt: true })
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const fromFile = (
  path: string,
  tokenizer?: Tokenizer.Service | undefined,
  options?: MakeOptions | undefined
): Effect.Effect<ChatTemplate, TextError> =>
  Effect.tryPromise({
    try: () => Fs.readFile(path, "utf8"),
    catch: (cause) => textError(new FileNotFound({ path, why: describe(cause) }))
  }).pipe(Effect.flatMap((text) => make(new Map([["default", text]]), tokenizer?.specialTokensMap ?? {}, path, options)))
