/**
 * How a request enters a test engine: its sampling parameters and prompt read, its prompt's
 * blocks matched against the engine's prefix cache (`PrefixCache`: the leading run counts as
 * cached, as Megatron's prefix cache reports it; the rest is prefilled first), a KV hand-off's
 * blocks counted as cached, and the request made active (a KV import pending instead, its checks
 * passed: `HandoffImports`); and how it leaves early: an ABORT finishes it at the next step with
 * what it has
 * (Megatron), or drops it (`abort: "drop"`).
 *
 * @since 0.2.0
 * @internal
 */
import { BlockHashes, type Frames, type Media, Msgpack } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import { randomUUID } from "node:crypto"
import type { KvHandoff } from "./engineConfig.ts"
import { EngineRequest } from "./engineRequest.ts"
import type { EngineShared } from "./engineShared.ts"
import * as HandoffImports from "./handoffImports.ts"
import * as Vocabulary from "../Vocabulary.ts"
import { requestIdEnd } from "@mcore-effect/coordinator/internal"

/** The sampling parameters' body of a submission that carries them as one (main, the releases). */
const paramsBody = (envelope: Frames.Envelope): Uint8Array =>
  envelope.frames[1 + envelope.spec.bodyKeys.indexOf("samplingParams")]!

/** Seconds since the epoch with sub-millisecond precision, like Python's `time.time()`. */
export const wallClockSeconds = (): number => (performance.timeOrigin + performance.now()) / 1000

/** @internal */
export class EngineAdmission {
  /** Encoded sampling parameters by the bytes that carried them: a burst shares one. */
  private readonly encodedParams = new Map<string, Uint8Array>()

  constructor(private readonly e: EngineShared) {}

  /** A submission (with the hand-off's KV when it is SUBMIT_REQUEST_WITH_KV): made active. */
  submit(envelope: Frames.Envelope, kv: Omit<KvHandoff, "requestId"> | null): void {
    const e = this.e
    const wire = e.config.wire
    const requestId = envelope.metadata.requestId as number
    // The sampling parameters as they came (checked by the codec): the reply echoes them.
    const samplingParams = this.samplingParamsOf(envelope)
    if (typeof samplingParams === "string") return e.malformed(`request ${requestId}: ${samplingParams}`)
    const media = envelope.metadata.mediaDescriptor as Media.MediaDescriptor | null | undefined
    if (e.active.has(requestId) || e.imports.pending.has(requestId)) {
      e.counters.duplicateRequest++
      return
    }
    const decoded = wire.client.decodeBody(envelope, "prompt")
    if (Result.isFailure(decoded)) return e.malformed(`request ${requestId}: ${decoded.failure.message}`)
    const prompt = decoded.success as string | ReadonlyArray<number>
    if (kv !== null) {
      const refusal = HandoffImports.refusal(prompt, samplingParams, kv.kvMeta, kv.srcBlockIds, e.config)
      if (refusal !== undefined) return e.die(`SUBMIT_REQUEST_WITH_KV for request ${requestId}: ${refusal}`)
    }
    const promptTokens = typeof prompt === "string" ? Vocabulary.tokenize(prompt) : prompt
    const mediaCacheKey = kv === null ? media?.media_cache_key ?? null : null
    const blockSize = e.config.blockSizeTokens
    let hashes: ReadonlyArray<bigint> = []
    try {
      hashes = Array.from(BlockHashes.blockHashes(promptTokens, blockSize, mediaCacheKey))
    } catch {
      // A media key that is not 64 hex characters: hash unsalted rather than refuse the request.
      hashes = Array.from(BlockHashes.blockHashes(promptTokens, blockSize, null))
    }
    // Cached: the leading run of this prompt's blocks still in this engine's prefix cache; the
    // rest (a last partial block included) are prefilled before the request generates. An
    // import's blocks join the cache when it is admitted; the whole prompt counts as cached then
    // (`:1012`).
    const matched = kv === null ? e.prefixCache.admit(hashes) : e.prefixCache.peek(hashes)
    if (kv === null) e.prefixCache.prefill(requestId, Math.ceil(promptTokens.length / blockSize) - matched, performance.now())
    const numCachedTokens = kv === null ? matched * blockSize : promptTokens.length
    const request = new EngineRequest({
      requestId,
      prompt: typeof prompt === "string" ? prompt : null,
      promptTokens,
      samplingParams,
      mediaCacheKey,
      blockSizeTokens: blockSize,
      blockHashes: hashes,
      numCachedTokens,
      numMatchedPrefixBlocks: matched,
      defaultTokensToGenerate: e.config.defaultTokensToGenerate,
      continuations: e.config.continuations,
      generationEpoch: e.generationEpoch,
      // A decode's request is a new one there: no hand-off parameters of its own.
      disaggregatedParams: null,
      uid: `chatcmpl-${randomUUID().replaceAll("-", "")}`,
      now: wallClockSeconds(),
      shape: e.config.shape
    })
    request.encodedSamplingParams = this.encodeParams(envelope, request)
    if (kv === null) e.active.set(requestId, request)
    else {
      e.kvHandoffs.push({ requestId, ...kv })
      e.imports.begin(request, kv.kvMeta, kv.srcBlockIds)
    }
    e.wake()
  }

  /** Blocks this engine now holds in its prefix cache. */
  cache(hashes: ReadonlyArray<bigint>): void {
    this.e.prefixCache.insert(hashes)
  }

  /** An ABORT: the request finishes at the next step with what it has, or (`abort: "drop"`) vanishes. */
  abort(id: number | undefined): void {
    const e = this.e
    if (id !== undefined && e.imports.pending.has(id)) {
      e.counters.abortWhileImporting++
      return
    }
    const request = id === undefined ? undefined : e.active.get(id)
    if (request === undefined) {
      e.counters.unknownAbort++
      return
    }
    e.aborted.push(request.requestId)
    if (e.config.abort === "drop") {
      e.active.delete(request.requestId)
      e.prefixCache.forget(request.requestId)
      // No output will come: a decode's read of its prefill's blocks ends here.
      e.imports.produced(request.requestId)
    }
    else {
      request.aborted = true
      e.wake()
    }
  }

  /**
   * A submission's sampling parameters as msgpack decoded them (unknown keys kept, for the reply to
   * echo): in the metadata frame in the reference protocol and PR 6497, a body of their own in main
   * and the releases (checked by the codec here: a body is not read with the envelope).
   */
  private samplingParamsOf(envelope: Frames.Envelope): Record<string, unknown> | string {
    if ("samplingParams" in envelope.metadata) return envelope.raw[2] as Record<string, unknown>
    const checked = this.e.config.wire.client.decodeBody(envelope, "samplingParams")
    if (Result.isFailure(checked)) return checked.failure.message
    return Msgpack.decode(paramsBody(envelope)) as Record<string, unknown>
  }

  /**
   * The request's parameters encoded, cached by the bytes that carried them: the metadata frame
   * after the id (so a burst with the same parameters encodes them once), or their own body.
   */
  private encodeParams(envelope: Frames.Envelope, request: EngineRequest): Uint8Array {
    let key: string
    if ("samplingParams" in envelope.metadata) {
      const frame = envelope.frames[0]!
      const idEnd = requestIdEnd(frame)
      if (idEnd === 0) return Msgpack.encode(request.samplingParams)
      key = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).toString("latin1", idEnd)
    } else {
      const body = paramsBody(envelope)
      key = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("latin1")
    }
    let bytes = this.encodedParams.get(key)
    if (bytes === undefined) {
      if (this.encodedParams.size >= 1024) this.encodedParams.clear()
      bytes = Msgpack.encode(request.samplingParams)
      this.encodedParams.set(key, bytes)
    }
    return bytes
  }
}
