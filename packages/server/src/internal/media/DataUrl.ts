/**
 * `data:` URLs of chat `image_url` parts (RFC 2397), as OpenAI's SDKs write an inline image:
 * `data:image/png;base64,<payload>`. The media type must be an image's, the payload base64 (the
 * standard alphabet, padded or not; whitespace, which some clients wrap lines with, is ignored)
 * of at most the server's image size, and the bytes an image ({@link ImageFormat.sniff}). Each
 * refusal says why, in words the 400 carries.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as ImageFormat from "./ImageFormat.ts"

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const WHITESPACE = /[\t\n\f\r ]+/g

/**
 * Whether `url` is a `data:` URL (any case), the kind {@link decode} takes.
 *
 * @since 0.1.0
 */
export const isDataUrl = (url: string): boolean => url.length >= 5 && url.slice(0, 5).toLowerCase() === "data:"

/** The bytes `payload` (clean base64) decodes to, without decoding it. */
const decodedLength = (payload: string): number => {
  const padding = payload.endsWith("==") ? 2 : payload.endsWith("=") ? 1 : 0
  return Math.floor(((payload.length - padding) * 3) / 4)
}

/**
 * The image bytes of a `data:` URL, or why there are none.
 *
 * @example
 * ```ts
 * import * as DataUrl from "./DataUrl.ts"
 *
 * DataUrl.decode("data:image/gif;base64,R0lGODlhAQABAAAAACw=", 1024) // Result.succeed(<the GIF's bytes>)
 * DataUrl.decode("data:text/plain;base64,aGk=", 1024) // Result.fail("the media type \"text/plain\" is not an image's ...")
 * ```
 *
 * @since 0.1.0
 */
export const decode = (url: string, maxBytes: number): Result.Result<Uint8Array, string> => {
  if (!isDataUrl(url)) return Result.fail("not a data: URL")
  const comma = url.indexOf(",")
  if (comma < 0) return Result.fail("a data: URL needs a comma before its payload")
  const meta = url.slice(5, comma).split(";").map((part) => part.trim().toLowerCase())
  const mediaType = meta[0]!
  if (!mediaType.startsWith("image/") || mediaType.length === "image/".length) {
    return Result.fail(`the media type ${JSON.stringify(mediaType)} is not an image's (expected image/png, image/jpeg, ...)`)
  }
  if (meta[meta.length - 1] !== "base64") return Result.fail("only base64 data: URLs are taken (data:image/...;base64,...)")
  const payload = url.slice(comma + 1).replace(WHITESPACE, "")
  if (payload.length === 0) return Result.fail("the payload is empty")
  if (!BASE64.test(payload) || payload.length % 4 === 1 || (payload.includes("=") && payload.length % 4 !== 0)) {
    return Result.fail("the payload is not base64")
  }
  const length = decodedLength(payload)
  if (length > maxBytes) return Result.fail(`the image is ${length} bytes, more than this server's limit of ${maxBytes}`)
  const bytes: Uint8Array = Buffer.from(payload, "base64")
  if (ImageFormat.sniff(bytes) === undefined) return Result.fail(`the payload is not an image (${ImageFormat.known})`)
  return Result.succeed(bytes)
}
