/**
 * The images of a chat request, ready to send as its `multi_modal_data` (`{ image: [bytes, ...] }`,
 * in the order the parts come: what Megatron-LM's server sends, and what its engine matches to
 * the prompt's image tokens in order). Everything is checked before anything goes to the
 * coordinator, each refusal a 400 naming the part:
 *
 * - the dialect the client speaks must carry media (`UnsupportedByDialect`, naming it);
 * - at most `maxImagesPerRequest` images;
 * - each URL a `data:` URL (`DataUrl`) or, where the server allows remote media, an `http(s)` one
 *   (`RemoteImage`, through the address guard), its bytes an image (`ImageFormat`);
 * - without an image placeholder, the chat template must render the image parts: a template that
 *   takes text content only renders the same with them as without, and the model would answer as
 *   if it had seen no image (Megatron-LM's server refuses an image it cannot load for the same
 *   reason: a confident answer about an image the model never saw).
 *
 * `data:` URLs are all decoded, and every URL checked, before the first fetch; fetches run four at
 * a time, the first failure ending the others.
 *
 * @since 0.1.0
 */
import { Dialect } from "@mcore-effect/protocol"
import type { ChatTemplate } from "@mcore-effect/text"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import type { ImageRef } from "../ChatMessages.ts"
import type { MediaConfig } from "../../ServerConfig.ts"
import { badRequest, type ServerError } from "../../ServerError.ts"
import * as DataUrl from "./DataUrl.ts"
import * as ImageFormat from "./ImageFormat.ts"
import * as RemoteImage from "./RemoteImage.ts"

const FETCHES_AT_ONCE = 4

const urlParam = (image: ImageRef): string => `${image.param}.image_url.url`

/**
 * Refuses images where `dialect` cannot carry media: the client's own refusal
 * (`UnsupportedByDialect`, which names the dialect), as a 400 naming the first image part.
 *
 * @since 0.1.0
 */
export const dialectRefusal = (
  images: ReadonlyArray<ImageRef>,
  dialect: Dialect.Dialect | undefined
): ServerError | undefined => {
  if (images.length === 0 || dialect === undefined) return undefined
  const carried = Dialect.requireFeature(dialect, "media", "its SUBMIT_REQUEST has no multi_modal_data; nothing was sent")
  return Result.isFailure(carried) ? badRequest(images[0]!.param, carried.failure.message) : undefined
}

/** A URL checked without fetching: decoded bytes, a remote URL to fetch, or a refusal. */
const classify = (image: ImageRef, config: MediaConfig): Uint8Array | URL | ServerError => {
  const param = urlParam(image)
  if (DataUrl.isDataUrl(image.url)) {
    const decoded = DataUrl.decode(image.url, config.maxImageBytes)
    return Result.isSuccess(decoded) ? decoded.success : badRequest(param, `not a usable data: URL: ${decoded.failure}`)
  }
  let url: URL
  try {
    url = new URL(image.url)
  } catch {
    return badRequest(param, "not a URL (expected a data: URL, or an http(s) URL where the server allows remote images)")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return badRequest(param, `${url.protocol} URLs are not taken (a data: URL, or http(s) where the server allows it)`)
  }
  if (!config.anyMediaDomain && config.allowedMediaDomains.length === 0) {
    return badRequest(param, "this server does not fetch remote images (it was started without --allowed-media-domains); send the image as a data: URL")
  }
  const refused = RemoteImage.refusal(url, config)
  return refused === undefined ? url : badRequest(param, refused)
}

const fetched = (image: ImageRef, url: URL, config: MediaConfig): Effect.Effect<Uint8Array, ServerError> =>
  Effect.flatMap(
    Effect.tryPromise({
      try: (signal) => RemoteImage.fetchImage(url.href, config, signal),
      catch: (error) => badRequest(urlParam(image), `could not be fetched: ${error instanceof Error ? error.message : String(error)}`)
    }),
    (bytes) =>
      ImageFormat.sniff(bytes) === undefined
        ? Effect.fail(badRequest(urlParam(image), `what it answered is not an image (${ImageFormat.known})`))
        : Effect.succeed(bytes)
  )

/**
 * The images' bytes, in order, or the first refusal.
 *
 * @since 0.1.0
 */
export const load = (
  images: ReadonlyArray<ImageRef>,
  config: MediaConfig
): Effect.Effect<Array<Uint8Array>, ServerError> =>
  Effect.suspend(() => {
    if (images.length > config.maxImagesPerRequest) {
      return Effect.fail(badRequest(images[config.maxImagesPerRequest]!.param, `more than ${config.maxImagesPerRequest} images in one request (this server's limit)`))
    }
    const out: Array<Uint8Array> = new Array(images.length)
    const remote: Array<readonly [number, URL]> = []
    for (let i = 0; i < images.length; i++) {
      const read = classify(images[i]!, config)
      if (read instanceof URL) remote.push([i, read])
      else if (read instanceof Uint8Array) out[i] = read
      else return Effect.fail(read)
    }
    if (remote.length === 0) return Effect.succeed(out)
    return Effect.as(
      Effect.forEach(remote, ([i, url]) => Effect.map(fetched(images[i]!, url, config), (bytes) => {
        out[i] = bytes
      }), { concurrency: FETCHES_AT_ONCE, discard: true }),
      out
    )
  })

/**
 * Refuses a template that cannot take the chat's image parts, as a 400 naming the first image
 * part: one that fails on a message whose content is a list of parts (it reads content as text:
 * Qwen3's, for one), or renders the chat the same with the image parts as without them (it skips
 * what is not text). The template's own message is kept in the refusal.
 *
 * @since 0.1.0
 */
export const rendersImages = (
  template: ChatTemplate.ChatTemplate,
  withImages: ReadonlyArray<ChatTemplate.Message>,
  withoutImages: ReadonlyArray<ChatTemplate.Message>,
  options: ChatTemplate.RenderOptions,
  first: ImageRef
): Effect.Effect<void, ServerError> => {
  const hint = "start the server with --image-placeholder TEXT, the model's image token (Megatron-LM's VLMs: <image>)"
  return Effect.matchEffect(Effect.all([template.render(withImages, options), template.render(withoutImages, options)]), {
    onFailure: (error) =>
      Effect.fail(badRequest(first.param, `the chat template fails on content parts (${error.reason.message}); ${hint}`)),
    onSuccess: ([rendered, without]) =>
      rendered === without
        ? Effect.fail(badRequest(first.param, `the chat template renders nothing for image parts (it takes text content only); ${hint}`))
        : Effect.void
  })
}
