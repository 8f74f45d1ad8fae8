/**
 * Whether a request gets in, checked in the order that costs least first: the server is not
 * shutting down, the API key (compared in constant time), the body's size (refused from its
 * `Content-Length` before a byte is read, and again while reading for a chunked body), the
 * JSON and its nesting, and a place among the generation requests in flight.
 *
 * @since 0.1.0
 */
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { createHash, timingSafeEqual } from "node:crypto"
import * as ByteSize from "effect/ByteSize"
import * as Effect from "effect/Effect"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import type * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as Redacted from "effect/Redacted"
import * as JsonDepth from "./JsonDepth.ts"
import {
  badRequest,
  BodyTooLarge,
  Overloaded,
  serverError,
  type ServerError,
  Unauthorized,
  Unavailable
} from "../ServerError.ts"

const digest = (text: string): Buffer => createHash("sha256").update(text).digest()

/**
 * Checks `Authorization: Bearer <key>`. Both sides are hashed first so the comparison takes the
 * same time whatever the length or content of what was sent.
 *
 * @example
 * ```ts
 * import * as Admission from "./Admission.ts"
 * import { Redacted } from "effect"
 *
 * const check = Admission.apiKeyCheck(Redacted.make("secret"))
 * check("Bearer secret") // undefined: let in
 * ```
 *
 * @since 0.1.0
 */
export const apiKeyCheck = (key: Redacted.Redacted<string> | undefined) => {
  if (key === undefined) return (_authorization: string | undefined): ServerError | undefined => undefined
  const expected = digest(Redacted.value(key))
  const missing = serverError(new Unauthorized({ missing: true }))
  const wrong = serverError(new Unauthorized({ missing: false }))
  return (authorization: string | undefined): ServerError | undefined => {
    if (authorization === undefined || authorization === "") return missing
    const match = /^Bearer\s+(.+)$/i.exec(authorization.trim())
    if (match === null) return wrong
    return timingSafeEqual(digest(match[1]!), expected) ? undefined : wrong
  }
}

/** What a Node request body looks like, as far as reading it here needs. */
interface NodeBody {
  readonly readableEnded: boolean
  on(event: "data", listener: (chunk: Buffer) => void): unknown
  on(event: "end" | "error", listener: (error?: unknown) => void): unknown
  off(event: string, listener: (...args: Array<any>) => void): unknown
}

const isNodeBody = (source: object): source is NodeBody =>
  typeof (source as Partial<NodeBody>).on === "function" && (source as Partial<NodeBody>).readableEnded === false

/**
 * The body's JSON, or the 400 for a body that is empty, not JSON, or nested deeper than
 * `JsonDepth.MAX_DEPTH` (checked here, before any route reads it).
 */
const parse = (text: string): Effect.Effect<unknown, ServerError> => {
  if (text.length === 0) return Effect.fail(badRequest(null, "the request body is empty; expected a JSON object"))
  // A long body is scanned before its parse (slow on deep nesting), a short one walked after
  // (PERFORMANCE.md#json-depth).
  const long = text.length > JsonDepth.SCAN_TEXT_FROM
  const early = long ? JsonDepth.tooDeepText(text) : undefined
  if (early !== undefined) return Effect.fail(tooDeep(early))
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch (cause) {
    return Effect.fail(badRequest(null, `the request body is not valid JSON: ${(cause as Error).message}`))
  }
  const deep = long ? undefined : JsonDepth.tooDeep(body)
  return deep === undefined ? Effect.succeed(body) : Effect.fail(tooDeep(deep))
}

const tooDeep = (path: string): ServerError =>
  badRequest(path === "" ? null : path, `nested deeper than ${JsonDepth.MAX_DEPTH} levels (the request body's limit)`)

/**
 * The 413 refusal, built only when a body is refused: an error captures a stack when built, and
 * building it up front on every request cost about 5% of the server's CPU under load (profiled).
 */
const tooLarge = (maxBytes: number): ServerError => serverError(new BodyTooLarge({ limitBytes: maxBytes }))

/**
 * A Node request's body read from its events and parsed: the platform's reader builds an Effect
 * stream per request for a body that nearly always arrives in one chunk; this allocates less. The
 * fiber resumes with the parsed body, not straight into the handler: a handler run inside this
 * callback's resumption keeps the callback's canceler, listeners and chunks (the body's bytes)
 * for as long as the request runs, for one step of the runtime saved (PERFORMANCE.md#admission).
 */
const readNode = (body: NodeBody, maxBytes: number): Effect.Effect<unknown, ServerError> =>
  Effect.callback<unknown, ServerError>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      body.off("data", onData)
      body.off("end", onEnd)
      body.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > maxBytes) {
        cleanup()
        resume(Effect.fail(tooLarge(maxBytes)))
      } else {
        chunks.push(chunk)
      }
    }
    const onEnd = () => {
      cleanup()
      resume(parse(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8")))
    }
    const onError = (error?: unknown) => {
      cleanup()
      resume(Effect.fail(badRequest(null, `the request body could not be read: ${String(error)}`)))
    }
    body.on("data", onData)
    body.on("end", onEnd)
    body.on("error", onError)
    return Effect.sync(cleanup)
  })

/**
 * Reads the body as JSON, refusing more than `maxBytes` (413) and what does not parse (400).
 *
 * @since 0.1.0
 */
export const readJson = (
  request: HttpServerRequest.HttpServerRequest,
  maxBytes: number
): Effect.Effect<unknown, ServerError> => {
  const declared = request.headers["content-length"]
  if (declared !== undefined && Number(declared) > maxBytes) return Effect.fail(tooLarge(maxBytes))
  if (isNodeBody(request.source)) {
    // The client waits for `100 Continue` before it sends the body (curl, for bodies over 1 MB:
    // a second's stall when it does not come). NodeHttpServer writes it only when the body is
    // read through its own stream, and this reads the Node request itself.
    if (request.headers["expect"]?.toLowerCase() === "100-continue") {
      const response = NodeHttpServerRequest.toServerResponse(request)
      if (!response.headersSent) response.writeContinue()
    }
    return readNode(request.source, maxBytes)
  }
  return request.text.pipe(
    Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.fromInputUnsafe(maxBytes)),
    Effect.mapError((error) =>
      error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge"
        ? tooLarge(maxBytes)
        : badRequest(null, `the request body could not be read: ${error.message}`)
    ),
    Effect.flatMap(parse)
  )
}

/**
 * Places for generation requests in flight, and whether the server still takes new ones.
 *
 * @since 0.1.0
 */
export class Gate {
  private inFlight = 0
  private closing = false
  private draining = false
  private readonly overloaded: ServerError
  private readonly shuttingDown = serverError(new Unavailable({ why: "the server is shutting down" }))

  constructor(readonly limit: number) {
    this.overloaded = serverError(new Overloaded({ limit }))
  }

  /** Requests holding a place. */
  get size(): number {
    return this.inFlight
  }

  /** True once shutdown started: new requests are refused. */
  get isClosing(): boolean {
    return this.closing
  }

  /** True from the start of the drain: readiness says 503, requests are still taken. */
  get isDraining(): boolean {
    return this.draining
  }

  /** From now on, readiness says 503; requests are still taken until {@link close}. */
  drain(): void {
    this.draining = true
  }

  /** Takes a place, or says why not. Give it back with {@link leave}. */
  enter(): ServerError | undefined {
    if (this.closing) return this.shuttingDown
    if (this.inFlight >= this.limit) return this.overloaded
    this.inFlight++
    return undefined
  }

  leave(): void {
    this.inFlight--
  }

  /** From now on, new requests are refused with 503. */
  close(): void {
    this.closing = true
  }

  /** The refusal for a request arriving during shutdown. */
  closed(): ServerError | undefined {
    return this.closing ? this.shuttingDown : undefined
  }
}
