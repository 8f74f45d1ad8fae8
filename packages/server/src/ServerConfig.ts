/**
 * What the server is built from: where it listens, the model name it serves, its API key and
 * its limits. Everything but the model name has a default a public deployment can live with:
 * loopback only, 4 MiB bodies, 1,024 generation requests at once, a 10-minute deadline, a
 * 10-second grace period on shutdown, images only inline (`data:` URLs, 20 MiB each, 16 a
 * request) and no remote fetch unless hosts are allowed.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Redacted from "effect/Redacted"
import * as Net from "node:net"
import * as ReasoningParser from "./internal/tools/ReasoningParser.ts"
import * as ToolCallParser from "./internal/tools/ToolCallParser.ts"

/**
 * Options of `Server.layer`.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServerOptions {
  /** The model name served (`/v1/models`, and what requests must name when they name one). */
  readonly model: string
  /** A Jinja chat template file to use instead of the tokenizer's own. */
  readonly chatTemplate?: string | undefined
  /** Interface to bind. Default `127.0.0.1`: nothing beyond this machine unless asked. */
  readonly host?: string | undefined
  /** Port; 0 picks a free one. Default 8000. */
  readonly port?: number | undefined
  /** When set, every `/v1/*` request must carry `Authorization: Bearer <key>`. */
  readonly apiKey?: Redacted.Redacted<string> | string | undefined
  /** Largest request body accepted, in bytes (413 above it). Default 4 MiB. */
  readonly maxBodyBytes?: number | undefined
  /** Generation requests served at once; more are refused with 429. Default 1,024. */
  readonly maxConcurrentRequests?: number | undefined
  /** Deadline of a generation request (504, aborted on the coordinator). Default 10 minutes. */
  readonly requestTimeout?: Duration.Input | undefined
  /** On shutdown, how long streams in flight may take to finish before they are aborted. Default 10 s. */
  readonly shutdownGracePeriod?: Duration.Input | undefined
  /** How tool calls are read from generated text (`hermes`, `qwen3_coder`); none: `tools` are refused. */
  readonly toolCallParser?: string | undefined
  /** How `<think>` reasoning is split into `reasoning_content` (`qwen3`, `deepseek-r1`); none: it stays content. */
  readonly reasoningParser?: string | undefined
  /**
   * The model's context length (prompt plus generated tokens; more is a 400). Default: what the
   * tokenizer's directory declares (`config.json`, `tokenizer_config.json`, as vLLM reads them),
   * else 2,048 (see `ContextLength`).
   */
  readonly maxModelLen?: number | undefined
  /** Origins whose browser pages may call the server (CORS; `*` for any). Default none. */
  readonly allowedOrigins?: ReadonlyArray<string> | undefined
  /**
   * Hosts whose `http(s)` image URLs the server fetches for chat `image_url` parts (exact names,
   * any case; `*` for any public host). Default none: only `data:` URLs are taken. Every fetch
   * goes through the address guard (`AddressGuard`) whatever this says.
   */
  readonly allowedMediaDomains?: ReadonlyArray<string> | undefined
  /** Largest image, decoded or fetched, in bytes. Default 20 MiB (Megatron-LM's server's limit). */
  readonly maxImageBytes?: number | undefined
  /** Most images in one request. Default 16. */
  readonly maxImagesPerRequest?: number | undefined
  /** How long fetching one remote image may take, redirects included. Default 5 s (Megatron-LM's and vLLM's). */
  readonly mediaFetchTimeout?: Duration.Input | undefined
  /**
   * For a chat template that takes text content only: the text each image part becomes in its
   * message (the model's image token: Megatron-LM's server writes `<image>`). Unset, image parts
   * reach the template as `{ type: "image" }` parts (what transformers gives Qwen2-VL-style
   * templates), and a template that renders nothing for them is refused.
   */
  readonly imagePlaceholder?: string | undefined
  /**
   * Addresses the media address guard lets through, exactly as a host name resolves to them
   * (`127.0.0.1`). For tests that serve images on loopback, and nothing else: the guard is what
   * keeps a client from reaching the server's own network. Not a CLI flag.
   */
  readonly unsafeExemptMediaAddresses?: ReadonlyArray<string> | undefined
}

/**
 * How chat `image_url` parts are taken (see `media/`), resolved.
 *
 * @since 0.1.0
 * @category models
 */
export interface MediaConfig {
  /** Lower case, without a final dot. */
  readonly allowedMediaDomains: ReadonlyArray<string>
  /** `*` was among the allowed domains. */
  readonly anyMediaDomain: boolean
  readonly maxImageBytes: number
  readonly maxImagesPerRequest: number
  readonly mediaFetchTimeoutMillis: number
  readonly imagePlaceholder: string | undefined
  readonly exemptMediaAddresses: ReadonlySet<string>
}

/**
 * The options with defaults applied, as plain numbers.
 *
 * @since 0.1.0
 * @category models
 */
export interface Resolved {
  readonly model: string
  readonly host: string
  readonly port: number
  readonly apiKey: Redacted.Redacted<string> | undefined
  readonly maxBodyBytes: number
  readonly maxConcurrentRequests: number
  readonly requestTimeoutMillis: number
  readonly shutdownGraceMillis: number
  readonly toolCallParser: ToolCallParser.ToolCallParser | undefined
  readonly reasoningParser: ReasoningParser.ReasoningParser | undefined
  /** As given; the server's state resolves the default (it needs the tokenizer). */
  readonly maxModelLen: number | undefined
  readonly allowedOrigins: ReadonlyArray<string>
  readonly media: MediaConfig
}

/**
 * @since 0.1.0
 * @category config
 */
export const defaults = {
  host: "127.0.0.1",
  port: 8000,
  maxBodyBytes: 4 * 1024 * 1024,
  maxConcurrentRequests: 1024,
  requestTimeoutMillis: 10 * 60_000,
  shutdownGraceMillis: 10_000,
  maxImageBytes: 20 * 1024 * 1024,
  maxImagesPerRequest: 16,
  mediaFetchTimeoutMillis: 5_000
} as const

/**
 * The names `toolCallParser` takes (vLLM's `--tool-call-parser`).
 *
 * @since 0.2.0
 * @category config
 */
export const toolCallParsers: ReadonlyArray<string> = [...ToolCallParser.parsers.keys()]

/**
 * The names `reasoningParser` takes (vLLM's `--reasoning-parser`).
 *
 * @since 0.2.0
 * @category config
 */
export const reasoningParsers: ReadonlyArray<string> = [...ReasoningParser.parsers.keys()]

const millis = (input: Duration.Input | undefined, fallback: number): number =>
  input === undefined ? fallback : Duration.toMillis(Duration.fromInputUnsafe(input))

/**
 * Applies the defaults; `undefined` and a description of the problem when an option is out of
 * range.
 *
 * @example
 * ```ts
 * import { ServerConfig } from "@mcore-effect/server"
 *
 * const resolved = ServerConfig.resolve({ model: "qwen3", port: 0 })
 * ```
 *
 * @since 0.1.0
 * @category config
 */
export const resolve = (options: ServerOptions): Resolved | string => {
  if (typeof options.model !== "string" || options.model.length === 0) return "model: must be a non-empty name"
  const port = options.port ?? defaults.port
  if (!Number.isSafeInteger(port) || port < 0 || port > 65535) return `port: must be an integer 0..65535, got ${port}`
  const maxBodyBytes = options.maxBodyBytes ?? defaults.maxBodyBytes
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes < 1) return "maxBodyBytes: must be an integer >= 1"
  const maxConcurrentRequests = options.maxConcurrentRequests ?? defaults.maxConcurrentRequests
  if (!Number.isSafeInteger(maxConcurrentRequests) || maxConcurrentRequests < 1) {
    return "maxConcurrentRequests: must be an integer >= 1"
  }
  let requestTimeoutMillis: number
  let shutdownGraceMillis: number
  let mediaFetchTimeoutMillis: number
  try {
    requestTimeoutMillis = millis(options.requestTimeout, defaults.requestTimeoutMillis)
    shutdownGraceMillis = millis(options.shutdownGracePeriod, defaults.shutdownGraceMillis)
    mediaFetchTimeoutMillis = millis(options.mediaFetchTimeout, defaults.mediaFetchTimeoutMillis)
  } catch (cause) {
    return `not a duration: ${String(cause)}`
  }
  if (!(requestTimeoutMillis > 0)) return "requestTimeout: must be positive"
  if (!(shutdownGraceMillis >= 0)) return "shutdownGracePeriod: must not be negative"
  const toolCallParser = options.toolCallParser === undefined ? undefined : ToolCallParser.parsers.get(options.toolCallParser)
  if (options.toolCallParser !== undefined && toolCallParser === undefined) {
    return `toolCallParser: ${JSON.stringify(options.toolCallParser)} is not one of ${[...ToolCallParser.parsers.keys()].join(", ")}`
  }
  const reasoningParser = options.reasoningParser === undefined ? undefined : ReasoningParser.parsers.get(options.reasoningParser)
  if (options.reasoningParser !== undefined && reasoningParser === undefined) {
    return `reasoningParser: ${JSON.stringify(options.reasoningParser)} is not one of ${[...ReasoningParser.parsers.keys()].join(", ")}`
  }
  const maxModelLen = options.maxModelLen
  if (maxModelLen !== undefined && (!Number.isSafeInteger(maxModelLen) || maxModelLen < 2)) {
    return "maxModelLen: must be an integer >= 2"
  }
  const media = resolveMedia(options, mediaFetchTimeoutMillis)
  if (typeof media === "string") return media
  const key = options.apiKey
  const apiKey = key === undefined || key === "" ? undefined : typeof key === "string" ? Redacted.make(key) : key
  return {
    model: options.model,
    host: options.host ?? defaults.host,
    port,
    apiKey,
    maxBodyBytes,
    maxConcurrentRequests,
    requestTimeoutMillis,
    shutdownGraceMillis,
    toolCallParser,
    reasoningParser,
    maxModelLen,
    allowedOrigins: options.allowedOrigins ?? [],
    media
  }
}

const resolveMedia = (options: ServerOptions, mediaFetchTimeoutMillis: number): MediaConfig | string => {
  if (!(mediaFetchTimeoutMillis > 0)) return "mediaFetchTimeout: must be positive"
  const maxImageBytes = options.maxImageBytes ?? defaults.maxImageBytes
  if (!Number.isSafeInteger(maxImageBytes) || maxImageBytes < 1) return "maxImageBytes: must be an integer >= 1"
  const maxImagesPerRequest = options.maxImagesPerRequest ?? defaults.maxImagesPerRequest
  if (!Number.isSafeInteger(maxImagesPerRequest) || maxImagesPerRequest < 0) return "maxImagesPerRequest: must be an integer >= 0"
  const placeholder = options.imagePlaceholder
  if (placeholder !== undefined && placeholder.length === 0) return "imagePlaceholder: must not be empty"
  const domains: Array<string> = []
  for (const domain of options.allowedMediaDomains ?? []) {
    const host = domain.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "")
    if (host === "" || /[/@\s]/.test(host) || (host.includes(":") && Net.isIP(host) !== 6)) {
      return `allowedMediaDomains: ${JSON.stringify(domain)} is not a host name (no scheme, port or path)`
    }
    domains.push(host)
  }
  return {
    allowedMediaDomains: domains.filter((d) => d !== "*"),
    anyMediaDomain: domains.includes("*"),
    maxImageBytes,
    maxImagesPerRequest,
    mediaFetchTimeoutMillis,
    imagePlaceholder: placeholder,
    exemptMediaAddresses: new Set(options.unsafeExemptMediaAddresses ?? [])
  }
}
