/**
 * What the server is built from: where it listens, the model name it serves, its API key and
 * its limits. Everything but the model name has a default a public deployment can live with:
 * loopback only, 4 MiB bodies, 1,024 generation requests at once, a 10-minute deadline, a
 * 10-second grace period on shutdown, images only inline (`data:` URLs, 20 MiB each, 16 a
 * request) and no remote fetch unless hosts are allowed. Every option is declared once, in
 * {@link settings} (`Setting` of `@mcore-effect/client`): its type, default, check and `mcore
 * serve` flag with its help text come from there.
 *
 * @since 0.1.0
 */
import { Setting } from "@mcore-effect/client"
import * as Duration from "effect/Duration"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Net from "node:net"
import * as ReasoningParser from "./internal/tools/ReasoningParser.ts"
import * as ToolCallParser from "./internal/tools/ToolCallParser.ts"

/** A host name or IP address as `allowedMediaDomains` takes it: lower case, no brackets or final dot. */
const normalHost = (domain: string): string => domain.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "")

const hostProblem = (domain: string): string | undefined => {
  const host = normalHost(domain)
  return host === "" || /[/@\s]/.test(host) || (host.includes(":") && Net.isIP(host) !== 6)
    ? `${JSON.stringify(domain)} is not a host name (no scheme, port or path)`
    : undefined
}

/**
 * Every option of the server, declared once. {@link ServerOptions} is their type; each carries
 * its default, check and (all but `model` and `unsafeExemptMediaAddresses`) its `mcore serve` flag.
 *
 * @since 0.2.0
 * @category config
 */
export const settings = {
  /** The model name served (`/v1/models`, and what requests must name when they name one). */
  model: Setting.required(
    Setting.text({ description: "The model name served", nonEmpty: true }),
    "the model name served (/v1/models)"
  ),
  /** A Jinja chat template file to use instead of the tokenizer's own. */
  chatTemplate: Setting.text({
    description: "A Jinja chat template to use instead of the tokenizer's",
    flag: { name: "chat-template", metavar: "file" }
  }),
  /** Interface to bind. Default `127.0.0.1`: nothing beyond this machine unless asked. */
  host: Setting.text({
    description: "Interface to listen on",
    default: "127.0.0.1",
    defaultText: "127.0.0.1: this machine only",
    flag: { name: "host", metavar: "host" }
  }),
  /** Port; 0 picks a free one. Default 8000. */
  port: Setting.integer({ description: "Port; 0: any free port", default: 8000, min: 0, max: 65535, flag: "port" }),
  /** When set, every `/v1/*` request must carry `Authorization: Bearer <key>`. */
  apiKey: Setting.custom({
    description: "Require Authorization: Bearer KEY on /v1/*",
    env: "MCORE_API_KEY",
    flag: { name: "api-key", metavar: "key" },
    resolve: (key: Redacted.Redacted<string> | string | undefined) =>
      Result.succeed(key === undefined || key === "" ? undefined : typeof key === "string" ? Redacted.make(key) : key)
  }),
  /**
   * A request header whose value is the request's routing key when the body has neither
   * `prompt_cache_key` nor `user` (see the server README's "Routing keys"): a session or
   * conversation id a gateway adds. Over several coordinators, requests with one key go to one
   * coordinator, in every server over the same coordinators.
   */
  sessionHeader: Setting.custom({
    description: "A request header whose value routes the request when the body has no prompt_cache_key or user",
    flag: { name: "session-header", metavar: "name" },
    resolve: (name: string | undefined) =>
      name === undefined
        ? Result.succeed(undefined)
        : typeof name === "string" && /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)
        ? Result.succeed(name.toLowerCase())
        : Result.fail(`expected an HTTP header name, got ${JSON.stringify(name)}`)
  }),
  /** Largest request body accepted, in bytes (413 above it). Default 4 MiB. */
  maxBodyBytes: Setting.integer({
    description: "Largest request body, in bytes",
    default: 4 * 1024 * 1024,
    min: 1,
    unit: "bytes",
    flag: "max-body-bytes"
  }),
  /** Generation requests served at once; more are refused with 429. Default 1,024. */
  maxConcurrentRequests: Setting.integer({
    description: "Generation requests served at once per process; more get 429",
    default: 1024,
    min: 1,
    flag: "max-concurrent"
  }),
  /** Deadline of a generation request (504, aborted on the coordinator). Default 10 minutes. */
  requestTimeout: Setting.duration({
    description: "Deadline of a generation request; 504 and aborted after it",
    default: Duration.minutes(10),
    positive: true,
    flag: "request-timeout"
  }),
  /**
   * On shutdown, how long `/ready` and `/health` answer 503 while every request is still served,
   * before the shutdown proper (new requests refused): time for a load balancer to stop sending
   * here. Default 5 s; 0: the shutdown starts at once.
   */
  drainDelay: Setting.duration({
    description: "On SIGTERM or Ctrl-C, how long /ready answers 503 while requests are still served, before the shutdown",
    default: Duration.seconds(5),
    env: "MCORE_DRAIN_DELAY",
    flag: "drain-delay"
  }),
  /** On shutdown, how long streams in flight may take to finish before they are aborted. Default 10 s. */
  shutdownGracePeriod: Setting.duration({
    description: "On SIGTERM or Ctrl-C, how long streams in flight may take to finish",
    default: Duration.seconds(10),
    flag: "shutdown-grace"
  }),
  /** How tool calls are read from generated text (`hermes`, `qwen3_coder`); none: `tools` are refused. */
  toolCallParser: Setting.choice({
    description: "How tool calls are read from generated text (without one, requests with tools get 400)",
    choices: ToolCallParser.parsers,
    flag: "tool-call-parser"
  }),
  /** How `<think>` reasoning is split into `reasoning_content` (`qwen3`, `deepseek-r1`); none: it stays content. */
  reasoningParser: Setting.choice({
    description: "Split <think> reasoning into reasoning_content",
    choices: ReasoningParser.parsers,
    flag: "reasoning-parser"
  }),
  /**
   * The model's context length (prompt plus generated tokens; more is a 400). Default: what the
   * tokenizer's directory declares (`config.json`, `tokenizer_config.json`, as vLLM reads them),
   * else 2,048 (see `ContextLength`).
   */
  maxModelLen: Setting.integer({
    description: "Context length, prompt plus generated tokens; more is a 400",
    min: 2,
    defaultText: "from the tokenizer directory's config.json / tokenizer_config.json, as vLLM reads them, else 2048",
    flag: "max-model-len"
  }),
  /** Origins whose browser pages may call the server (CORS; `*` for any). Default none. */
  allowedOrigins: Setting.list({
    description: "Origins whose browser pages may call the server (CORS), comma-separated; * for any",
    defaultText: "none",
    flag: { name: "allowed-origins", metavar: "origins" }
  }),
  /**
   * Hosts whose `http(s)` image URLs the server fetches for chat `image_url` parts (exact names,
   * any case; `*` for any public host). Default none: only `data:` URLs are taken. Every fetch
   * goes through the address guard (`AddressGuard`) whatever this says.
   */
  allowedMediaDomains: Setting.list({
    description: "Hosts whose http(s) image URLs chat image_url parts may name, comma-separated; * for any public host",
    defaultText: "none: data: URLs only",
    check: hostProblem,
    flag: { name: "allowed-media-domains", metavar: "hosts" }
  }),
  /** Largest image, decoded or fetched, in bytes. Default 20 MiB (Megatron-LM's server's limit). */
  maxImageBytes: Setting.integer({
    description: "Largest image of a chat image_url part, decoded or fetched, in bytes",
    default: 20 * 1024 * 1024,
    min: 1,
    unit: "bytes",
    flag: "max-image-bytes"
  }),
  /** Most images in one request. Default 16. */
  maxImagesPerRequest: Setting.integer({
    description: "Most images in one chat request",
    default: 16,
    min: 0,
    flag: "max-images-per-request"
  }),
  /** How long fetching one remote image may take, redirects included. Default 5 s (Megatron-LM's and vLLM's). */
  mediaFetchTimeout: Setting.duration({
    description: "How long fetching one remote image may take",
    default: Duration.seconds(5),
    positive: true,
    flag: "media-fetch-timeout"
  }),
  /**
   * For a chat template that takes text content only: the text each image part becomes in its
   * message (the model's image token: Megatron-LM's server writes `<image>`). Unset, image parts
   * reach the template as `{ type: "image" }` parts (what transformers gives Qwen2-VL-style
   * templates), and a template that renders nothing for them is refused.
   */
  imagePlaceholder: Setting.text({
    description: "For a chat template that takes text only: the text each image part becomes (the model's image token, e.g. <image>)",
    nonEmpty: true,
    flag: { name: "image-placeholder", metavar: "text" }
  }),
  /**
   * Addresses the media address guard lets through, exactly as a host name resolves to them
   * (`127.0.0.1`). For tests that serve images on loopback, and nothing else: the guard is what
   * keeps a client from reaching the server's own network. Not a CLI flag.
   */
  unsafeExemptMediaAddresses: Setting.list({ description: "Addresses the media address guard lets through (tests only)" })
}

/**
 * Options of `Server.layer`: one for each of {@link settings}, `model` required.
 *
 * @since 0.1.0
 * @category models
 */
export interface ServerOptions extends Setting.Options<typeof settings> {}

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
  /** Lower-cased, as Node gives header names. */
  readonly sessionHeader: string | undefined
  readonly maxBodyBytes: number
  readonly maxConcurrentRequests: number
  readonly requestTimeoutMillis: number
  readonly drainDelayMillis: number
  readonly shutdownGraceMillis: number
  readonly toolCallParser: ToolCallParser.ToolCallParser | undefined
  readonly reasoningParser: ReasoningParser.ReasoningParser | undefined
  /** As given; the server's state resolves the default (it needs the tokenizer). */
  readonly maxModelLen: number | undefined
  readonly allowedOrigins: ReadonlyArray<string>
  readonly media: MediaConfig
}

const declared = Setting.defaults(settings)

/**
 * The declared defaults (from {@link settings}), durations as `Duration`s; and, as before, the
 * durations in milliseconds.
 *
 * @since 0.1.0
 * @category config
 */
export const defaults = {
  ...declared,
  requestTimeoutMillis: Duration.toMillis(declared.requestTimeout),
  drainDelayMillis: Duration.toMillis(declared.drainDelay),
  shutdownGraceMillis: Duration.toMillis(declared.shutdownGracePeriod),
  mediaFetchTimeoutMillis: Duration.toMillis(declared.mediaFetchTimeout)
}

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

/**
 * Applies the defaults and checks every option: the options resolved, or the first one out of
 * range with why (`Setting.Problem`, the client's `ClientConfig.resolve` fails with the same).
 *
 * @example
 * ```ts
 * import { ServerConfig } from "@mcore-effect/server"
 *
 * const resolved = ServerConfig.resolve({ model: "qwen3", port: 0 }) // Result.succeed({ ..., port: 0 })
 * ServerConfig.resolve({ model: "qwen3", port: 70000 }) // Result.fail({ name: "port", why: "must be an integer 0..65535, got 70000" })
 * ```
 *
 * @since 0.1.0
 * @category config
 */
export const resolve = (options: ServerOptions): Result.Result<Resolved, Setting.Problem> =>
  Result.map(Setting.resolve(settings, options), (o) => {
    const domains = o.allowedMediaDomains.map(normalHost)
    return {
      model: o.model,
      host: o.host,
      port: o.port,
      apiKey: o.apiKey,
      sessionHeader: o.sessionHeader,
      maxBodyBytes: o.maxBodyBytes,
      maxConcurrentRequests: o.maxConcurrentRequests,
      requestTimeoutMillis: o.requestTimeout,
      drainDelayMillis: o.drainDelay,
      shutdownGraceMillis: o.shutdownGracePeriod,
      toolCallParser: o.toolCallParser,
      reasoningParser: o.reasoningParser,
      maxModelLen: o.maxModelLen,
      allowedOrigins: o.allowedOrigins,
      media: {
        allowedMediaDomains: domains.filter((d) => d !== "*"),
        anyMediaDomain: domains.includes("*"),
        maxImageBytes: o.maxImageBytes,
        maxImagesPerRequest: o.maxImagesPerRequest,
        mediaFetchTimeoutMillis: o.mediaFetchTimeout,
        imagePlaceholder: o.imagePlaceholder,
        exemptMediaAddresses: new Set(o.unsafeExemptMediaAddresses)
      }
    }
  })
