/**
 * A test engine's machinery: one DEALER (ZeroMQ's or in-memory: `EngineSocket`), its reader, a step loop that advances
 * every active request by one token per step, and one writer. `TestEngine` wraps it as a scoped
 * Effect resource.
 *
 * Behaviour follows Megatron's engine (`engines/dynamic_engine.py` and its coordinator mixin):
 * it registers by sending one empty frame (again after every reconnection, so a restarted
 * coordinator learns it), replies are batched per step as `[21, [[id, needs_detokenize], ...]]`
 * plus one body per entry, partials as `[22, [id, ...]]` plus one body per id, an ABORT finishes
 * the request at the next step with what it has, SET_GENERATION_EPOCH stamps every active
 * request, STOP ends the engine (it sends DISCONNECT and stops), PAUSE outside RUNNING is ignored.
 *
 * It speaks one dialect (`DialectWire`): what the coordinator forwards is read with the dialect's
 * client codec, replies are shaped as that ref's engine shapes them (`ReplyShapes`) and batched
 * in its layout (main and the releases: `[21, [reply, ...]]` in one frame; core_v0.16: each reply
 * in a record, PAUSE and STOP acknowledged, no control states).
 *
 * Past 400 lines: the read side and the step loop share the active requests, pins and faults
 * (the send path through the faults is `internal/faultedWriter.ts`, shared with the coordinator);
 * decoding is the protocol's (the dialect's codecs), the socket's reader and writer `FrameSocket`'s, its
 * configuration and records `EngineConfig`.
 *
 * @since 0.1.0
 * @internal
 */
import { BlockHashes, FrameSocket, type Frames, Headers, type Media, Messages, Msgpack } from "@mcore-effect/protocol"
import * as Result from "effect/Result"
import { randomUUID } from "node:crypto"
import * as DialectWire from "./dialectWire.ts"
import * as EngineSocket from "./engineSocket.ts"
import type { EngineConfig, EngineCounters, EngineState, KvHandoff, Received } from "./engineConfig.ts"
import { EngineRequest } from "./engineRequest.ts"
import * as Faults from "../Faults.ts"
import { FaultedWriter } from "./faultedWriter.ts"
import { RecentLog } from "./recentLog.ts"
import * as Vocabulary from "../Vocabulary.ts"
import { headerOf, isRequestId, packHeader, requestIdEnd, tryDecode } from "./wireFrames.ts"

const H = Headers.values

type Outgoing = FrameSocket.Message

const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

const YIELD_EVERY = 512

/** The sampling parameters' body of a submission that carries them as one (main, the releases). */
const paramsBody = (envelope: Frames.Envelope): Uint8Array =>
  envelope.frames[1 + envelope.spec.bodyKeys.indexOf("samplingParams")]!

/** Seconds since the epoch with sub-millisecond precision, like Python's `time.time()`. */
const wallClockSeconds = (): number => (performance.timeOrigin + performance.now()) / 1000

/**
 * @internal
 */
export class EngineCore {
  state: EngineState = "RUNNING"
  running = true
  generationEpoch: number | null = null
  profiling = false
  steps = 0
  completed = 0
  registrations = 0
  readonly faults = new Faults.Switchboard()
  readonly counters: EngineCounters = {
    malformed: 0,
    duplicateRequest: 0,
    unknownAbort: 0,
    unknownRelease: 0,
    invalidSignal: 0,
    unsent: 0
  }
  readonly active = new Map<number, EngineRequest>()
  readonly received: RecentLog<Received>
  readonly kvHandoffs: Array<KvHandoff> = []
  readonly aborted: Array<number> = []
  readonly released: Array<number> = []
  readonly pinned = new Map<number, Readonly<Record<string, unknown>>>()
  readonly signals: Array<Headers.HeaderName> = []

  private readonly writer: FrameSocket.Writer
  private readonly out: FaultedWriter
  private readonly replyWriter = new Msgpack.Writer({ initialSize: 4096 })
  private readonly seenBlocks = new Set<bigint>()
  /** Encoded sampling parameters by the metadata bytes that carried them: a burst shares one. */
  private readonly encodedParams = new Map<string, Uint8Array>()
  private nextBlockId = 0
  private heldPartials: Array<Outgoing> = []
  private wakeStepper: (() => void) | undefined
  private endPause: (() => void) | undefined
  private readonly changeListeners = new Set<() => void>()
  private readonly onHandshake = () => {
    this.registrations++
    this.writer.send(Messages.engineRegistration)
  }

  /** The socket (ZeroMQ or in-memory: see `EngineSocket`), and how to stop hearing of its connections. */
  private readonly dealer: EngineSocket.Connected["socket"]
  private readonly unobserve: () => void

  private constructor(readonly config: EngineConfig, connector: EngineSocket.Connector) {
    this.received = new RecentLog(config.recordLimit)
    // Register on every (re)connection: a coordinator that restarted has forgotten us.
    const { socket, unobserve } = connector(config, this.onHandshake)
    this.dealer = socket
    this.unobserve = unobserve
    this.writer = new FrameSocket.Writer(socket, (error) => {
      this.counters.unsent++
      config.log("Warn", `engine ${config.identity}: send failed: ${String(error)}`)
    })
    this.out = new FaultedWriter(this.faults, this.writer, {
      single: config.wire.single,
      addressFrames: 0,
      short: (message) => message.slice(0, -1)
    })
  }

  /**
   * Connects to the coordinator (a ZeroMQ DEALER unless `connector` says otherwise) and starts
   * the loops. Throws on a malformed address.
   */
  static start(config: EngineConfig, connector: EngineSocket.Connector = EngineSocket.zeromq): EngineCore {
    const core = new EngineCore(config, connector)
    core.startReading()
    void core.stepLoop()
    return core
  }

  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener)
    return () => this.changeListeners.delete(listener)
  }

  private notify(): void {
    for (const listener of this.changeListeners) listener()
  }

  close(): void {
    if (!this.running && this.dealer.closed) return
    this.running = false
    this.writer.close()
    this.unobserve()
    if (!this.dealer.closed) this.dealer.close()
    // Let loops parked on a hang or between steps see that the engine is gone.
    this.faults.clear("Hang")
    this.endPause?.()
    this.wake()
    this.notify()
  }

  injectFault(fault: Faults.Fault): void {
    this.out.inject(fault)
  }

  clearFaults(tag?: Faults.FaultTag): void {
    if (this.out.clear(tag)) this.wake()
    if (this.faults.reorderWindow === 0) this.flushHeldPartials()
  }

  private wake(): void {
    const wake = this.wakeStepper
    this.wakeStepper = undefined
    wake?.()
  }

  // -------------------------------------------------------------------------------------------
  // Reading
  // -------------------------------------------------------------------------------------------

  private startReading(): void {
    FrameSocket.read(this.dealer, {
      gate: () => (this.faults.hung ? this.faults.whenAnswering() : undefined),
      onMessage: (frames) => {
        if (this.running) this.handle(frames)
      },
      onHandlerError: (error) => {
        this.counters.malformed++
        this.config.log("Error", `engine ${this.config.identity}: dropped a message after an unexpected error: ${String(error)}`)
      },
      onReceiveError: (error) => {
        this.config.log("Error", `engine ${this.config.identity}: receive failed: ${String(error)}`)
      },
      afterMessage: () => this.notify(),
      yieldEvery: YIELD_EVERY
    })
  }

  private malformed(why: string): void {
    this.counters.malformed++
    this.config.log("Warn", `engine ${this.config.identity}: dropped a message: ${why}`)
  }

  private record(header: number | undefined, requestId: number | undefined, frames: ReadonlyArray<Uint8Array>): void {
    if (this.config.recordLimit <= 0) {
      this.received.total++
      return
    }
    const name = header === undefined ? undefined : Headers.nameOf(header as Headers.Header)
    this.received.add({ header, name, requestId, frames })
  }

  private handle(frames: Array<Buffer>): void {
    // Read through the codec of what the coordinator forwards (the client's messages,
    // re-numbered): arity and metadata from the declarations.
    const wire = this.config.wire
    // core_v0.16: every engine acked; the coordinator says so in the engines' own layout. The
    // engine is paused (or stopped) already: nothing changes here.
    if (wire.PAUSE_ACK !== undefined && frames.length === 1) {
      const header = headerOf(frames[0])
      if (header !== undefined && (header === wire.PAUSE_ACK || header === wire.STOP_ACK)) {
        const acked = wire.engine.decodeEnvelope(frames)
        if (Result.isFailure(acked)) return this.malformed(acked.failure.message)
        this.record(acked.success.spec.header, undefined, frames)
        this.signals.push(acked.success.spec.headerName)
        return
      }
    }
    const decoded = wire.client.decodeEnvelope(frames)
    if (Result.isFailure(decoded)) {
      const values = tryDecode(frames[0])
      const id = Array.isArray(values) && isRequestId(values[1]) ? values[1] : undefined
      const header = headerOf(frames[0])
      const name = wire.isReference ? undefined : DialectWire.nameOf(wire, header)
      this.record(wire.isReference || name === undefined ? header : Headers.values[name], id, frames)
      return this.malformed(decoded.failure.message)
    }
    const envelope = decoded.success
    const header = envelope.spec.header
    const id = envelope.metadata.requestId as number | undefined
    this.record(header, id, frames)
    switch (envelope.spec.tag as Messages.ClientMessage["_tag"]) {
      case "SubmitRequest":
        return this.submit(envelope, null)
      case "SubmitRequestWithKv": {
        const srcBlockIds = wire.client.decodeBody(envelope, "srcBlockIds")
        if (Result.isFailure(srcBlockIds)) return this.malformed(srcBlockIds.failure.message)
        // Metadata in the reference protocol and PR 6497, a body in main.
        const kvMeta = "kvMeta" in envelope.metadata ? Result.succeed(envelope.metadata.kvMeta) : wire.client.decodeBody(envelope, "kvMeta")
        if (Result.isFailure(kvMeta)) return this.malformed(kvMeta.failure.message)
        return this.submit(envelope, {
          kvMeta: kvMeta.success as Readonly<Record<string, unknown>>,
          srcBlockIds: srcBlockIds.success as ReadonlyArray<number>
        })
      }
      case "AbortRequest":
        return this.abort(id)
      case "ReleaseKv":
        if (this.pinned.delete(id!)) this.released.push(id!)
        else this.counters.unknownRelease++
        return
      case "SetGenerationEpoch": {
        const epoch = envelope.metadata.generationEpoch as number
        this.signals.push("SET_GENERATION_EPOCH")
        this.generationEpoch = epoch
        for (const request of this.active.values()) request.stampEpoch(epoch)
        return
      }
      case "StartCudaProfiler":
      case "StopCudaProfiler":
        this.signals.push(Headers.nameOf(header))
        this.profiling = header === H.START_CUDA_PROFILER
        return
      case "Pause":
      case "Unpause":
      case "Suspend":
      case "Resume":
      case "Stop":
        this.signals.push(Headers.nameOf(header))
        return this.control(header)
      default:
        return this.malformed(`unexpected ${envelope.spec.tag}`)
    }
  }

  private submit(envelope: Frames.Envelope, kv: Omit<KvHandoff, "requestId"> | null): void {
    const wire = this.config.wire
    const requestId = envelope.metadata.requestId as number
    // The sampling parameters as they came (checked by the codec): the reply echoes them.
    const samplingParams = this.samplingParamsOf(envelope)
    if (typeof samplingParams === "string") return this.malformed(`request ${requestId}: ${samplingParams}`)
    const media = envelope.metadata.mediaDescriptor as Media.MediaDescriptor | null | undefined
    if (this.active.has(requestId)) {
      this.counters.duplicateRequest++
      return
    }
    const decoded = wire.client.decodeBody(envelope, "prompt")
    if (Result.isFailure(decoded)) return this.malformed(`request ${requestId}: ${decoded.failure.message}`)
    const prompt = decoded.success as string | ReadonlyArray<number>
    const promptTokens = typeof prompt === "string" ? Vocabulary.tokenize(prompt) : prompt
    const mediaCacheKey = kv === null ? media?.media_cache_key ?? null : null
    const blockSize = this.config.blockSizeTokens
    let hashes: ReadonlyArray<bigint> = []
    try {
      hashes = Array.from(BlockHashes.blockHashes(promptTokens, blockSize, mediaCacheKey))
    } catch {
      // A media key that is not 64 hex characters: hash unsalted rather than refuse the request.
      hashes = Array.from(BlockHashes.blockHashes(promptTokens, blockSize, null))
    }
    // Cached: the leading run of this prompt's blocks this engine has seen before.
    let matched = 0
    while (matched < hashes.length && this.seenBlocks.has(hashes[matched]!)) matched++
    for (const h of hashes) this.seenBlocks.add(h)
    let numCachedTokens = matched * blockSize
    let disaggregatedParams: Record<string, unknown> | null = null
    if (kv !== null) {
      this.kvHandoffs.push({ requestId, ...kv })
      // The peer computed the prompt's KV: its blocks count as cached.
      numCachedTokens = Math.min(promptTokens.length, kv.srcBlockIds.length * blockSize)
      disaggregatedParams = { request_id: requestId, block_ids: kv.srcBlockIds, kv_meta: kv.kvMeta }
    }
    const now = wallClockSeconds()
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
        defaultTokensToGenerate: this.config.defaultTokensToGenerate,
        continuations: this.config.continuations,
        generationEpoch: this.generationEpoch,
        disaggregatedParams,
        uid: `chatcmpl-${randomUUID().replaceAll("-", "")}`,
        now,
        shape: this.config.shape
      })
    request.encodedSamplingParams = this.encodeParams(envelope, request)
    this.active.set(requestId, request)
    this.wake()
  }

  /**
   * A submission's sampling parameters as msgpack decoded them (unknown keys kept, for the reply to
   * echo): in the metadata frame in the reference protocol and PR 6497, a body of their own in main
   * and the releases (checked by the codec here: a body is not read with the envelope).
   */
  private samplingParamsOf(envelope: Frames.Envelope): Record<string, unknown> | string {
    if ("samplingParams" in envelope.metadata) return envelope.raw[2] as Record<string, unknown>
    const checked = this.config.wire.client.decodeBody(envelope, "samplingParams")
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

  private abort(id: number | undefined): void {
    const request = id === undefined ? undefined : this.active.get(id)
    if (request === undefined) {
      this.counters.unknownAbort++
      return
    }
    this.aborted.push(request.requestId)
    if (this.config.abort === "drop") this.active.delete(request.requestId)
    else {
      request.aborted = true
      this.wake()
    }
  }

  private control(header: number): void {
    if (!this.config.wire.controlStates) return this.obey(header)
    const s = this.state
    const next = header === H.PAUSE
      ? (s === "RUNNING" ? "PAUSED" : s) // any other state ignores PAUSE
      : header === H.UNPAUSE
      ? (s === "PAUSED" ? "RUNNING" : undefined)
      : header === H.SUSPEND
      ? (s === "PAUSED" ? "SUSPENDED" : undefined)
      : header === H.RESUME
      ? (s === "SUSPENDED" ? "PAUSED" : undefined)
      : (s === "PAUSED" || s === "SUSPENDED" ? "STOPPED" : undefined)
    if (next === undefined) {
      this.counters.invalidSignal++
      this.config.log("Warn", `engine ${this.config.identity}: ${Headers.nameOf(header as Headers.Header)} in state ${s}; ignored`)
      return
    }
    this.state = next
    if (next === "STOPPED") {
      // Megatron's engine leaves its loop and tells the coordinator it is gone.
      this.writer.send([packHeader(this.config.wire.DISCONNECT!)])
    }
    this.wake()
  }

  /**
   * core_v0.16's engine: no states to check, flags (`running`, `suspend_signal`) set by each
   * signal; PAUSE and STOP acknowledged to the coordinator every time (`[6]`, `[11]`), as its
   * `schedule_requests` does, even a second PAUSE (which kills that coordinator).
   */
  private obey(header: number): void {
    const wire = this.config.wire
    const s = this.state
    if (header === H.PAUSE) {
      if (s === "RUNNING") this.state = "PAUSED"
      this.writer.send([packHeader(wire.PAUSE_ACK!)])
    } else if (header === H.UNPAUSE) {
      if (s === "PAUSED" || s === "SUSPENDED") this.state = "RUNNING"
    } else if (header === H.SUSPEND) {
      if (s === "PAUSED") this.state = "SUSPENDED"
    } else if (header === H.RESUME) {
      if (s === "SUSPENDED") this.state = "PAUSED"
    } else {
      this.state = "STOPPED"
      this.writer.send([packHeader(wire.STOP_ACK!)])
    }
    this.wake()
  }

  // -------------------------------------------------------------------------------------------
  // Stepping
  // -------------------------------------------------------------------------------------------

  private async stepLoop(): Promise<void> {
    while (this.running) {
      if (this.faults.hung) {
        await this.faults.whenAnswering()
        continue
      }
      if (this.state !== "RUNNING" || this.active.size === 0) {
        await new Promise<void>((resolve) => (this.wakeStepper = resolve))
        continue
      }
      try {
        this.step()
      } catch (error) {
        this.config.log("Error", `engine ${this.config.identity}: step failed: ${String(error)}`)
      }
      this.notify()
      await (this.config.stepMs > 0 ? this.pause(this.config.stepMs) : yieldToEventLoop())
    }
  }

  /** Waits between steps; `close` cuts it short, so a long `stepMs` never delays process exit. */
  private pause(millis: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.endPause = undefined
        resolve()
      }, millis)
      this.endPause = () => {
        clearTimeout(timer)
        this.endPause = undefined
        resolve()
      }
    })
  }

  /** Advances every active request by one token; sends this step's partials, then its replies. */
  private step(): void {
    this.steps++
    const now = wallClockSeconds()
    const finished: Array<EngineRequest> = []
    const partials: Array<Record<string, unknown>> = []
    let admitted = 0
    // The releases have no partials: a `streaming` key there is an attribute nobody reads.
    const streams = this.config.wire.ENGINE_REPLY_PARTIAL !== undefined
    // A Map iterates in insertion order: the oldest requests step, the rest wait their turn.
    for (const request of this.active.values()) {
      if (admitted++ >= this.config.maxActiveRequests) break
      if (request.step(now)) finished.push(request)
      else {
        const partial = streams ? request.partial() : null
        if (partial !== null) partials.push(partial)
      }
    }
    if (partials.length > 0) {
      this.sendPartials(DialectWire.partialBatch(this.config.wire, partials))
    }
    if (finished.length === 0) return
    const entries: Array<[number, boolean]> = []
    const bodies: Array<Uint8Array> = []
    for (const request of finished) {
      this.active.delete(request.requestId)
      this.completed++
      if (request.samplingParams.do_kv_handoff === true && !request.aborted) this.pin(request)
      if (this.faults.take("DropReplies")) continue
      let body: Uint8Array
      try {
        body = request.encode(now, this.replyWriter)
      } catch (error) {
        // kv_meta holding a value msgpackr decoded into something with no msgpack form.
        this.malformed(`request ${request.requestId}: cannot encode its reply: ${String(error)}`)
        continue
      }
      // core_v0.16: the request in a record of its own.
      if (this.config.wire.records) body = DialectWire.asRecord(body)
      const copies = this.faults.take("DuplicateReplies") ? 2 : 1
      for (let c = 0; c < copies; c++) {
        entries.push([request.requestId, request.needsDetokenize])
        bodies.push(body)
      }
    }
    if (entries.length > 0) this.sendBatch(DialectWire.replyBatch(this.config.wire, entries, bodies))
  }

  /** Pins a prefill request's KV for a peer to pull, and says where it is (`disaggregated_params`). */
  private pin(request: EngineRequest): void {
    const tokens = request.init.promptTokens.length + request.generated.length
    const blocks = Math.max(1, Math.ceil(tokens / this.config.blockSizeTokens))
    const blockIds = Array.from({ length: blocks }, () => this.nextBlockId++)
    const params = { request_id: request.requestId, block_ids: blockIds, kv_meta: { engine: this.config.identity } }
    this.pinned.set(request.requestId, params)
    request.disaggregatedParams = params
  }

  private sendBatch(message: Outgoing): void {
    this.out.emit(this.out.prepare(message))
  }

  private sendPartials(message: Array<Uint8Array>): void {
    const window = this.faults.reorderWindow
    if (window === 0) return this.sendBatch(message)
    this.heldPartials.push(message)
    if (this.heldPartials.length >= window) {
      this.faults.note("ReorderPartials")
      this.flushHeldPartials()
    }
  }

  private flushHeldPartials(): void {
    const held = this.heldPartials
    this.heldPartials = []
    for (let i = held.length - 1; i >= 0; i--) this.sendBatch(held[i]!)
  }

}
