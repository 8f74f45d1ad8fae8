/**
 * `developer` messages (OpenAI's name for system instructions to newer models) for templates
 * that have no such role: rendered as `system` messages, never dropped. Qwen3's template, for
 * one, renders `system`, `user`, `assistant` and `tool` and skips any other role without a
 * word, so a developer message reached the model as nothing at all.
 *
 * Whether a template knows the role is found by rendering it: a probe chat whose developer
 * message holds a marker text, rendered once per template; when the marker is not in the
 * prompt (or the template refuses the role), the template does not render developer messages,
 * and a request's are given to it as `system` ones. A template that renders them keeps them.
 *
 * @since 0.1.0
 */
import type { ChatTemplate } from "@mcore-effect/text"
import * as Effect from "effect/Effect"

const MARKER = "mcore-developer-role-probe-4d1f"

const probe: ReadonlyArray<ChatTemplate.Message> = [
  { role: "developer", content: MARKER },
  { role: "user", content: "hello" }
]

/** Whether each template rendered the probe's developer message (rendered once per template). */
const known = new WeakMap<ChatTemplate.ChatTemplate, boolean>()

/**
 * Whether `template` renders a developer message's content (its verdict cached per template).
 *
 * @since 0.1.0
 */
export const rendersDeveloper = (template: ChatTemplate.ChatTemplate): Effect.Effect<boolean> => {
  const cached = known.get(template)
  if (cached !== undefined) return Effect.succeed(cached)
  return Effect.map(
    Effect.match(template.render(probe, { addGenerationPrompt: true }), {
      onFailure: () => false,
      onSuccess: (prompt) => prompt.includes(MARKER)
    }),
    (renders) => {
      known.set(template, renders)
      return renders
    }
  )
}

/**
 * Whether `messages` hold a developer message (only then is there anything to do).
 *
 * @since 0.1.0
 */
export const hasDeveloper = (messages: ReadonlyArray<ChatTemplate.Message>): boolean => {
  for (let i = 0; i < messages.length; i++) if (messages[i]!.role === "developer") return true
  return false
}

const asSystem = (messages: Array<ChatTemplate.Message>): Array<ChatTemplate.Message> =>
  messages.map((message) => message.role === "developer" ? { ...message, role: "system" } : message)

/**
 * `messages` as `template` can render them: their developer messages as system messages when it
 * has no developer role, else unchanged (the same arrays, with no render, when there is none).
 * `withoutImages` (the messages without their images, `ChatMessages`) goes the same way.
 *
 * @example
 * ```ts
 * import * as DeveloperRole from "./DeveloperRole.ts"
 * import { ChatTemplate } from "@mcore-effect/text"
 * import { Effect } from "effect"
 *
 * const program = Effect.gen(function*() {
 *   const template = yield* ChatTemplate.make(
 *     new Map([["default", "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"]]),
 *     {},
 *     "inline"
 *   )
 *   // This template renders any role: the developer message is kept as it is.
 *   return yield* DeveloperRole.forTemplate(template, [{ role: "developer", content: "Be terse." }], undefined)
 * })
 * ```
 *
 * @since 0.1.0
 */
export const forTemplate = (
  template: ChatTemplate.ChatTemplate,
  messages: Array<ChatTemplate.Message>,
  withoutImages: Array<ChatTemplate.Message> | undefined
): Effect.Effect<{ readonly messages: Array<ChatTemplate.Message>; readonly withoutImages: Array<ChatTemplate.Message> | undefined }> => {
  const unchanged = { messages, withoutImages }
  if (!hasDeveloper(messages)) return Effect.succeed(unchanged)
  return Effect.map(rendersDeveloper(template), (renders) =>
    renders ? unchanged : {
      messages: asSystem(messages),
      withoutImages: withoutImages === undefined ? undefined : asSystem(withoutImages)
    })
}
