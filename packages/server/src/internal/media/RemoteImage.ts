/**
 * Remote images of chat `image_url` parts, fetched only where the server allows it: the host must
 * be one of `--allowed-media-domains` (`*`: any), every address it resolves to must pass the
 * address guard (`AddressGuard`), and the answer must come within the fetch timeout, with a 200,
 * at most the image size limit long. Redirects are followed (at most {@link MAX_REDIRECTS}), each
 * target checked as the first URL was: a public URL that redirects to 127.0.0.1 or to the
 * metadata service is refused. Megatron-LM's own server fetches with a 5 s timeout and a 20 MiB
 * limit and refuses every redirect; vLLM follows them. Nothing is cached.
 *
 * @since 0.1.0
 */
import * as Http from "node:http"
import * as Https from "node:https"
import * as Net from "node:net"
import type { MediaConfig } from "../../ServerConfig.ts"
import * as AddressGuard from "./AddressGuard.ts"

/**
 * Redirects followed, at most.
 *
 * @since 0.1.0
 */
export const MAX_REDIRECTS = 3

const USER_AGENT = "mcore-effect-server"

/** A URL's host as the allow list and the guard see it: lower case, no brackets, no final dot. */
const hostOf = (url: URL): string => {
  let host = url.hostname.toLowerCase()
  if (host.startsWith("[") && host.endsWith("]")) host = host.slice(1, -1)
  if (host.endsWith(".")) host = host.slice(0, -1)
  return host
}

/**
 * Why the server does not fetch `url` at all (scheme, credentials, a host not allowed), or
 * `undefined`: checked for every URL of a request before the first fetch, and for every redirect.
 *
 * @since 0.1.0
 */
export const refusal = (url: URL, config: MediaConfig): string | undefined => {
  if (url.protocol !== "http:" && url.protocol !== "https:") return `${url.protocol} URLs are not fetched (only http and https)`
  if (url.username !== "" || url.password !== "") return "URLs with credentials are not fetched"
  const host = hostOf(url)
  if (!config.anyMediaDomain && !config.allowedMediaDomains.includes(host)) {
    return `${host} is not one of this server's allowed media domains`
  }
  return undefined
}

const failure = (why: string) => new Error(why)

/** One GET, following redirects with `left` more allowed. */
const get = (
  href: string,
  config: MediaConfig,
  guard: AddressGuard.Guard,
  signal: AbortSignal,
  left: number
): Promise<Uint8Array> =>
  new Promise<Uint8Array>((resolve, reject) => {
    let url: URL
    try {
      url = new URL(href)
    } catch {
      return reject(failure("not a URL"))
    }
    const refused = refusal(url, config)
    if (refused !== undefined) return reject(failure(refused))
    const host = hostOf(url)
    if (Net.isIP(host) !== 0) {
      const literal = guard.literal(host)
      if (literal !== undefined) return reject(literal)
    }
    const limit = config.maxImageBytes
    const tooLarge = (bytes: number) => failure(`the image is ${bytes} bytes or more, more than this server's limit of ${limit}`)
    // No agent: a connection per fetch, so every one goes through the guard's lookup.
    const request = (url.protocol === "https:" ? Https : Http).request(url, {
      method: "GET",
      headers: { "user-agent": USER_AGENT, accept: "image/*" },
      lookup: guard.lookup,
      agent: false,
      signal
    }, (response) => {
      const status = response.statusCode ?? 0
      const location = response.headers.location
      if (status >= 300 && status < 400 && location !== undefined) {
        response.resume()
        if (left === 0) return reject(failure(`more than ${MAX_REDIRECTS} redirects`))
        let next: string
        try {
          next = new URL(location, url).href
        } catch {
          return reject(failure("redirected to something that is not a URL"))
        }
        return get(next, config, guard, signal, left - 1).then(resolve, (error: Error) =>
          reject(failure(`redirected to ${next}: ${error.message}`))
        )
      }
      if (status !== 200) {
        response.resume()
        return reject(failure(`the server answered ${status}`))
      }
      const declared = Number(response.headers["content-length"])
      if (Number.isFinite(declared) && declared > limit) {
        response.destroy()
        return reject(tooLarge(declared))
      }
      const chunks: Array<Buffer> = []
      let total = 0
      response.on("data", (chunk: Buffer) => {
        total += chunk.length
        if (total > limit) {
          response.destroy()
          reject(tooLarge(total))
        } else chunks.push(chunk)
      })
      response.on("end", () => resolve(Buffer.concat(chunks, total)))
      response.on("error", reject)
    })
    request.on("error", reject)
    request.end()
  })

/**
 * The bytes at `url`, or a failure whose message says why (the 400's words). `signal` ends the
 * fetch early (the request was interrupted); the server's fetch timeout ends it too.
 *
 * @example
 * ```ts
 * import { Result } from "effect"
 * import * as RemoteImage from "./RemoteImage.ts"
 * import * as ServerConfig from "../../ServerConfig.ts"
 *
 * const config = Result.getOrThrow(ServerConfig.resolve({ model: "m", allowedMediaDomains: ["images.example.com"] }))
 * RemoteImage.fetchImage("https://images.example.com/cat.png", config.media, AbortSignal.timeout(10_000))
 * ```
 *
 * @since 0.1.0
 */
export const fetchImage = (url: string, config: MediaConfig, signal: AbortSignal): Promise<Uint8Array> => {
  const deadline = AbortSignal.timeout(config.mediaFetchTimeoutMillis)
  return get(url, config, AddressGuard.make(config.exemptMediaAddresses), AbortSignal.any([signal, deadline]), MAX_REDIRECTS)
    .catch((error: Error) => {
      throw deadline.aborted ? failure(`no whole answer within ${config.mediaFetchTimeoutMillis} ms`) : error
    })
}
