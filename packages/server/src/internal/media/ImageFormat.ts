/**
 * What an image's bytes say it is: the signature at its start, for the formats an engine's image
 * preprocessing (Pillow, in Megatron's) reads from an OpenAI request. Checked before the bytes
 * are sent, so that a payload that decodes from base64 but is not an image (a text, an HTML error
 * page a URL answered with) is a 400 naming the part, not a failure on an engine.
 *
 * @since 0.1.0
 */

const startsWith = (bytes: Uint8Array, signature: ReadonlyArray<number>, at = 0): boolean => {
  if (bytes.length < at + signature.length) return false
  for (let i = 0; i < signature.length; i++) if (bytes[at + i] !== signature[i]) return false
  return true
}

const ascii = (text: string): ReadonlyArray<number> => Array.from(text, (c) => c.charCodeAt(0))

/** ISO base media brands of still images (`ftyp` box): AVIF and HEIF/HEIC. */
const stillBrands: ReadonlySet<string> = new Set(["avif", "avis", "heic", "heix", "heim", "heis", "mif1", "msf1"])

/**
 * The format of an image's bytes (`png`, `jpeg`, `gif`, `webp`, `bmp`, `tiff`, `avif`/`heif`),
 * or `undefined` when they start with no known image signature.
 *
 * @example
 * ```ts
 * import * as ImageFormat from "./ImageFormat.ts"
 *
 * ImageFormat.sniff(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) // "png"
 * ImageFormat.sniff(new TextEncoder().encode("<html>")) // undefined
 * ```
 *
 * @since 0.1.0
 */
export const sniff = (bytes: Uint8Array): string | undefined => {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "png"
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "jpeg"
  if (startsWith(bytes, ascii("GIF87a")) || startsWith(bytes, ascii("GIF89a"))) return "gif"
  if (startsWith(bytes, ascii("RIFF")) && startsWith(bytes, ascii("WEBP"), 8)) return "webp"
  if (startsWith(bytes, ascii("BM")) && bytes.length >= 26) return "bmp"
  if (startsWith(bytes, [0x49, 0x49, 0x2a, 0x00]) || startsWith(bytes, [0x4d, 0x4d, 0x00, 0x2a])) return "tiff"
  if (startsWith(bytes, ascii("ftyp"), 4) && bytes.length >= 12) {
    const brand = String.fromCharCode(bytes[8]!, bytes[9]!, bytes[10]!, bytes[11]!)
    if (stillBrands.has(brand)) return brand.startsWith("av") ? "avif" : "heif"
  }
  return undefined
}

/**
 * The formats {@link sniff} knows, for messages.
 *
 * @since 0.1.0
 */
export const known = "PNG, JPEG, GIF, WebP, BMP, TIFF, AVIF or HEIF"
