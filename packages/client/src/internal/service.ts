/**
 * The client's implementation behind `InferenceClient.make`: the options checked before anything
 * is opened, the connection, and each operation of the `Service` wired to it.
 *
 * @internal
 */
import { type Dialect, PrefixHashing, Prompt } from "@mcore-effect/protocol"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as ClientConfig from "../ClientConfig.ts"
import { type ClientError, clientError, InvalidAddress, InvalidArgument, InvalidRequest } from "../ClientError.ts"
import { Recorder } from "../ClientMetrics.ts"
import type { Service } from "../ClientService.ts"
import { named, Transport } from "../Transport.ts"
import { checkRequestId, invalidArgument } from "./arguments.ts"
import * as Connection from "./connection.ts"
import * as ControlSignals from "./controlSignals.ts"
import { requestsOf, started, streamed } from "./requestEffects.ts"
import { REQUEST_ID, tracing } from "./spans.ts"
import { submitAll } from "./submitAll.ts"

/**
 * `Service.blockHashes` for one hashing setting: a client's and a fleet's (whose coordinators
 * share one dialect, so one setting) are this one function.
 */
export const blockHashesOf = (hashing: PrefixHashing.HashingConfig): Service["blockHashes"] => (prompt, mediaCacheKey) =>
  Effect.suspend(() => {
    const valid = Prompt.validate(prompt)
    if (Result.isFailure(valid)) return Effect.fail(clientError(new InvalidRequest({ error: valid.failure })))
    return Effect.succeed<BigUint64Array | null>(PrefixHashing.hashesFor(valid.success, hashing, mediaCacheKey))
  })

/** The client of `InferenceClient.make`: nothing is opened for an address or options it refuses. */
export const makeClientService = Effect.fnUntraced(function*(options: ClientConfig.ClientOptions) {
  const badAddress = (named(options.transport) ?? (yield* Transport)).addressProblem(options.address)
  if (badAddress !== undefined) {
    return yield* Effect.fail(clientError(new InvalidAddress({ address: options.address, why: badAddress })))
  }
  const resolved = ClientConfig.resolve(options)
  if (Result.isFailure(resolved)) return yield* Effect.fail(clientError(new InvalidArgument(resolved.failure)))
  const { service } = yield* connect(resolved.success)
  return service
})

/**
 * The client over a connection to `config.address` (options resolved and the address checked by
 * the caller), and the connection, for a fleet that watches its members' links (`watcher`) and
 * reads their load.
 */
export const connect = Effect.fnUntraced(function*(config: ClientConfig.ResolvedOptions, watcher?: Connection.Watcher) {
  const context = yield* Effect.context<never>()
  const runFork = Effect.runForkWith(context)
  const warn = (message: string): void => {
    runFork(Effect.logWarning(message).pipe(Effect.annotateLogs({ coordinator: config.address })))
  }
  const connection = yield* Connection.make(config, new Recorder(context), warn, watcher)

  // Encoded once; a signal the dialect lacks fails every call, before anything is sent.
  const signal = (name: string, message: Dialect.Message) => {
    const frames = connection.encode(message)
    return Effect.fn(name)(function*() {
      if (Result.isFailure(frames)) return yield* Effect.fail(frames.failure)
      const error = connection.available()
      if (error !== undefined) return yield* Effect.fail(error)
      connection.send(frames.success)
    })
  }

  const withRequestId = (name: string, send: (requestId: number) => ClientError | undefined) =>
    Effect.fn(name)(function*(requestId: number) {
      yield* Effect.annotateCurrentSpan(REQUEST_ID, requestId)
      const invalid = checkRequestId(requestId)
      if (invalid !== undefined) return yield* Effect.fail(invalid)
      const error = connection.available()
      if (error !== undefined) return yield* Effect.fail(error)
      const refused = send(requestId)
      if (refused !== undefined) return yield* Effect.fail(refused)
    })

  // RELEASE_KV: in a span when a tracer is installed; else at once from the caller's fiber, with
  // nothing but its checks. The disaggregated client releases a pin per request through it, and
  // going around the `Effect.fn` (and a `matchEffect`) took its CPU per request from 296 to
  // 210 µs (PERFORMANCE.md, "Disaggregation").
  const releaseNow = (requestId: number, epoch: number | undefined): ClientError | undefined =>
    checkRequestId(requestId) ?? connection.available() ?? connection.releaseKv(requestId, epoch)
  const releaseTraced = Effect.fn("InferenceClient.releaseKvHandoff")(function*(requestId: number, epoch: number | undefined) {
    yield* Effect.annotateCurrentSpan(REQUEST_ID, requestId)
    const refused = releaseNow(requestId, epoch)
    if (refused !== undefined) return yield* Effect.fail(refused)
  })
  const releaseKv = (requestId: number, epoch: number | undefined): Effect.Effect<void, ClientError> =>
    Effect.withFiber((fiber) => {
      if (tracing(fiber)) return releaseTraced(requestId, epoch)
      const refused = releaseNow(requestId, epoch)
      return refused === undefined ? Effect.void : Effect.fail(refused)
    })

  const { KvHandoff, Submit, SubmitWithId } = requestsOf(connection)
  const service: Service = {
    submit: (prompt, samplingParams, options) => new Submit(prompt, samplingParams, options),
    submitWithId: (prompt, samplingParams, options) => new SubmitWithId(prompt, samplingParams, options),
    submitAll: (requests, options) => submitAll(connection, requests, options, "failFast"),
    submitAllSettled: (requests, options) => submitAll(connection, requests, options, "settle"),
    stream: (prompt, samplingParams, options) =>
      streamed(connection, "InferenceClient.stream", { ...options, prompt, samplingParams }),
    submitWithKvHandoff: (prompt, samplingParams, kvMeta, srcBlockIds, options) =>
      new KvHandoff(prompt, samplingParams, options, kvMeta, srcBlockIds),
    streamWithKvHandoff: (prompt, samplingParams, kvMeta, srcBlockIds, options) =>
      streamed(connection, "InferenceClient.streamWithKvHandoff", {
        prompt,
        samplingParams,
        kvMeta,
        srcBlockIds,
        timeout: options?.timeout
      }),
    releaseKvHandoff: (requestId, options) => releaseKv(requestId, options?.connection),
    start: (request) => started(connection, request),
    abort: withRequestId("InferenceClient.abort", (requestId) => connection.abort(requestId)),
    sendAbort: withRequestId("InferenceClient.sendAbort", (requestId) => connection.sendAbort(requestId)),
    ...ControlSignals.make(connection),
    startCudaProfiler: signal("InferenceClient.startCudaProfiler", { _tag: "StartCudaProfiler" }),
    stopCudaProfiler: signal("InferenceClient.stopCudaProfiler", { _tag: "StopCudaProfiler" }),
    shutdownCoordinator: signal("InferenceClient.shutdownCoordinator", { _tag: "Shutdown" }),
    setGenerationEpoch: Effect.fn("InferenceClient.setGenerationEpoch")(function*(generationEpoch: number) {
      // Epochs count up from 0 (the CLI refuses a negative one too): -1 is a mistake, not an epoch.
      if (!Number.isSafeInteger(generationEpoch) || generationEpoch < 0) {
        return yield* Effect.fail(
          invalidArgument("generationEpoch", `expected a non-negative integer, got ${String(generationEpoch)}`)
        )
      }
      const frames = connection.encode({ _tag: "SetGenerationEpoch", generationEpoch })
      if (Result.isFailure(frames)) return yield* Effect.fail(frames.failure)
      const error = connection.available()
      if (error !== undefined) return yield* Effect.fail(error)
      connection.send(frames.success)
    }),
    blockHashes: blockHashesOf(config.hashing),
    dialect: config.dialect,
    pendingCount: Effect.sync(() => connection.pending.size),
    connected: Effect.sync(() => connection.state.phase === "ready")
  }
  return { service, connection }
})
