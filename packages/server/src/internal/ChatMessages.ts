/**
 * A chat request's messages as the chat template takes them: text parts joined (with newlines,
 * as vLLM joins them), image parts in their place, and anything else refused by name. An image
 * part becomes, in a message that has one:
 *
 * - with the server's `imagePlaceholder`: that text, joined with the message's text parts in
 *   order (Megatron-LM's server writes `<image>` for its VLMs' text-only templates);
 * - without: a `{ type: "image" }` part, the message's content staying a list of parts
 *   (`{ type: "text", text }` and those), which is what transformers gives a template, and what
 *   Qwen2-VL-style templates render as `<|vision_start|><|image_pad|><|vision_end|>`.
 *
 * The images themselves (their URLs, in order) are returned beside the messages, for the media
 * the request carries (`media/ChatImages`); messages without images are text, as before.
 *
 * @since 0.1.0
 */
import type { ChatTemplate } from "@mcore-effect/text"
import * as Result from "effect/Result"
import type * as OpenAiSchema from "../OpenAiSchema.ts"
import { badRequest, type ServerError } from "../ServerError.ts"

/**
 * An image part of a request: where it is (`messages[1].content[0]`) and its URL.
 *
 * @since 0.1.0
 */
export interface ImageRef {
  /** The part's path, e.g. `messages[1].content[0]`; its URL's is `${param}.image_url.url`. */
  readonly param: string
  readonly url: string
}

/**
 * The messages for the template and the images they hold.
 *
 * @since 0.1.0
 */
export interface TemplateMessages {
  readonly messages: Array<ChatTemplate.Message>
  readonly images: ReadonlyArray<ImageRef>
  /**
   * The messages with their image parts left out, the rest as in `messages` (lists of parts
   * stay lists): what the template renders when it ignores image parts. Only with images and no
   * placeholder (see `ChatImages.rendersImages`).
   */
  readonly withoutImages: Array<ChatTemplate.Message> | undefined
}

/** Why a part of another type than `text` and `image_url` is refused, by what it carries. */
const unsupportedPart = (type: string): string => {
  const what = type === "input_audio" || type === "audio_url"
    ? "audio input is not supported"
    : type === "video_url"
    ? "video input is not supported"
    : type === "file" || type === "input_file"
    ? "file input is not supported"
    : `${JSON.stringify(type)} parts are not supported`
  return `${what} (only text and image_url parts)`
}

/** The part the template sees for an image (transformers' shape; vLLM gives the same). */
const IMAGE_PART = Object.freeze({ type: "image" })

/**
 * `message` without its `content` and `refusal` (its other keys in their order), then `content`.
 * Plain code, not `{ content, refusal, ...rest }`: object rest is a call into V8's runtime, and
 * this took ~1.9% of the server's CPU per request (profiled).
 */
const withContent = (message: OpenAiSchema.ChatMessage, content: ChatTemplate.Message["content"]): ChatTemplate.Message => {
  const reasoning = message.reasoning_content ?? message.reasoning
  if (
    message.name === undefined && message.tool_call_id === undefined && message.tool_calls === undefined &&
    reasoning == null
  ) {
    return { role: message.role, content }
  }
  const out: Record<string, unknown> = {}
  for (const key in message) {
    if (!notForTemplate.has(key)) out[key] = message[key as keyof OpenAiSchema.ChatMessage]
  }
  // Under both names, as vLLM gives them (Qwen3's template reads `reasoning_content`).
  if (reasoning != null) {
    out["reasoning_content"] = reasoning
    out["reasoning"] = reasoning
  }
  out["content"] = content
  return out as unknown as ChatTemplate.Message
}

/** A message's keys the template is not given as they are (`content` is, as read). */
const notForTemplate: ReadonlySet<string> = new Set([
  "content",
  "refusal",
  "reasoning",
  "reasoning_content",
  "annotations",
  "audio",
  "function_call"
])

/**
 * The messages as the template takes them, with the images they hold; `placeholder` is the
 * server's `imagePlaceholder`.
 *
 * @example
 * ```ts
 * import * as ChatMessages from "./ChatMessages.ts"
 *
 * const read = ChatMessages.templateMessages([{
 *   role: "user",
 *   content: [{ type: "text", text: "What is this?" }, { type: "image_url", image_url: { url: "data:image/png;base64,..." } }]
 * }], "<image>")
 * // Result.succeed({ messages: [{ role: "user", content: "What is this?\n<image>" }], images: [{ param: "messages[0].content[1]", url: "data:..." }], ... })
 * ```
 *
 * @since 0.1.0
 */
export const templateMessages = (
  messages: ReadonlyArray<OpenAiSchema.ChatMessage>,
  placeholder?: string | undefined
): Result.Result<TemplateMessages, ServerError> => {
  const out: Array<ChatTemplate.Message> = []
  let images: Array<ImageRef> | undefined
  // Built alongside `out` only once an image is seen without a placeholder.
  let without: Array<ChatTemplate.Message> | undefined
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!
    if (message.audio != null) return Result.fail(badRequest(`messages[${i}].audio`, "audio is not supported (only null)"))
    if (message.function_call != null) {
      return Result.fail(badRequest(`messages[${i}].function_call`, "function calls are not supported (only null; tool_calls are)"))
    }
    const content = message.content
    if (content == null || typeof content === "string") {
      // No content (an assistant turn that only called tools) is an empty text, as vLLM gives
      // it: templates test it as a string (Qwen3's `'</think>' in message.content` fails on null).
      const read = withContent(message, content ?? "")
      out.push(read)
      without?.push(read)
      continue
    }
    // Checked first, parts in order: texts (placeholders in place of images, when set) and
    // whether the message holds an image.
    const texts: Array<string> = []
    let hasImage = false
    for (let j = 0; j < content.length; j++) {
      const part = content[j]!
      const at = `messages[${i}].content[${j}]`
      if (part.type === "text") {
        if (part.text === undefined) return Result.fail(badRequest(`${at}.text`, "missing"))
        if (part.image_url !== undefined) return Result.fail(badRequest(`${at}.image_url`, "not a field of a text part"))
        texts.push(part.text)
        continue
      }
      if (part.type !== "image_url") return Result.fail(badRequest(`${at}.type`, unsupportedPart(part.type)))
      if (part.image_url === undefined) return Result.fail(badRequest(`${at}.image_url`, "missing"))
      if (part.text !== undefined) return Result.fail(badRequest(`${at}.text`, "not a field of an image_url part"))
      ;(images ??= []).push({ param: at, url: part.image_url.url })
      hasImage = true
      if (placeholder !== undefined) texts.push(placeholder)
    }
    if (!hasImage || placeholder !== undefined) {
      const read = withContent(message, texts.join("\n"))
      out.push(read)
      without?.push(read)
      continue
    }
    // Parts, as transformers gives them; the same without the images for the render check.
    without ??= out.slice()
    const parts: Array<unknown> = []
    const textParts: Array<unknown> = []
    for (let j = 0; j < content.length; j++) {
      const part = content[j]!
      if (part.type === "text") {
        const text = { type: "text", text: part.text! }
        parts.push(text)
        textParts.push(text)
      } else parts.push(IMAGE_PART)
    }
    out.push(withContent(message, parts))
    without.push(withContent(message, textParts))
  }
  return Result.succeed({ messages: out, images: images ?? [], withoutImages: without })
}
