/**
 * The effects of one request, behind `InferenceClient`'s `submit`, `submitWithId`,
 * `submitWithKvHandoff` (a {@link SingleRequest} each) and its streams ({@link streamed}): what
 * runs between an operation's call and the connection's registry.
 *
 * @since 0.1.0
 * @internal
 */
import type { Media, SamplingParams, WireTypes } from "@mcore-effect/protocol"
import type * as Duration from "effect/Duration"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Effectable from "effect/Effectable"
import type * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import type * as Tracer from "effect/Tracer"
import type { ClientError } from "../ClientError.ts"
import type * as Connection from "./connection.ts"
import type { KvHandoffOptions, PromptInput, Started, StartRequest, Submitted, SubmitOptions } from "../ClientService.ts"
import * as PendingRequests from "./pendingRequests.ts"
import type { Reply, StreamEvent } from "../Reply.ts"
import { inScopeSpan, REQUEST_ID, tracing } from "./spans.ts"
import { OneShot, Queued } from "./started.ts"

/** The operations whose effect is a {@link SingleRequest}, and their span names. */
const SPAN_NAMES = {
  submit: "InferenceClient.submit",
  submitWithId: "InferenceClient.submitWithId",
  kvHandoff: "InferenceClient.submitWithKvHandoff"
} as const

/**
 * What a {@link SingleRequest} belongs to: the client's connection and the operation, one object
 * per operation per client.
 */
interface Operation {
  readonly connection: Connection.Connection
  readonly kind: keyof typeof SPAN_NAMES
}

/**
 * The effect of `submit`, `submitWithId` and `submitWithKvHandoff`: one small object holding the
 * call's arguments, which runs `start` when evaluated. It is the request itself (a
 * {@link Connection.Request}, its options read through getters on the prototype), so nothing is
 * copied or reshaped on the way to the connection. Not a chain of closures, because
 * `Effect.forEach` and its kin keep each item's effect until the item's fiber ends: at 100,000
 * requests in flight, whatever this effect holds is paid per request (the closures it replaces
 * held about 250 bytes; this holds the three arguments, 48 bytes, its operation on the
 * prototype, the KV handoff's two more fields in {@link KvHandoffRequest}).
 */
export abstract class SingleRequest<A> implements Connection.Request {
  /** On the prototype of the client's subclass for the operation (see {@link requestsOf}). */
  abstract readonly operation: Operation
  constructor(
    readonly prompt: PromptInput,
    readonly samplingParams: SamplingParams.SamplingParamsInput | undefined,
    readonly options: SubmitOptions | KvHandoffOptions | undefined
  ) {}

  get multiModalData(): Media.MultiModalData | null | undefined {
    return (this.options as SubmitOptions | undefined)?.multiModalData
  }

  get offloadParams(): unknown {
    return (this.options as SubmitOptions | undefined)?.offloadParams
  }

  get timeout(): Duration.Input | undefined {
    return this.options?.timeout
  }

  get kvMeta(): WireTypes.KvMeta | undefined {
    return undefined
  }

  get srcBlockIds(): ReadonlyArray<number> | undefined {
    return undefined
  }
}

export interface SingleRequest<A> extends Effect.Effect<A, ClientError> {}

Object.setPrototypeOf(
  SingleRequest.prototype,
  Effectable.Prototype<SingleRequest<unknown>>({
    label: "InferenceClient.request",
    evaluate(fiber) {
      return startSingle(this, fiber)
    }
  })
)

/** `submitWithKvHandoff`'s request: {@link SingleRequest} with the KV handoff's two fields. */
abstract class KvHandoffRequest<A> extends SingleRequest<A> {
  constructor(
    prompt: PromptInput,
    samplingParams: SamplingParams.SamplingParamsInput | undefined,
    options: KvHandoffOptions | undefined,
    private readonly kv: WireTypes.KvMeta,
    private readonly blockIds: ReadonlyArray<number>
  ) {
    super(prompt, samplingParams, options)
  }

  override get kvMeta(): WireTypes.KvMeta {
    return this.kv
  }

  override get srcBlockIds(): ReadonlyArray<number> {
    return this.blockIds
  }
}

/** The request classes of one client (see {@link requestsOf}). */
export interface RequestClasses {
  readonly Submit: new(
    prompt: PromptInput,
    samplingParams: SamplingParams.SamplingParamsInput | undefined,
    options: SubmitOptions | undefined
  ) => SingleRequest<Reply>
  readonly SubmitWithId: new(
    prompt: PromptInput,
    samplingParams: SamplingParams.SamplingParamsInput | undefined,
    options: SubmitOptions | undefined
  ) => SingleRequest<Submitted>
  readonly KvHandoff: new(
    prompt: PromptInput,
    samplingParams: SamplingParams.SamplingParamsInput | undefined,
    options: KvHandoffOptions | undefined,
    kvMeta: WireTypes.KvMeta,
    srcBlockIds: ReadonlyArray<number>
  ) => SingleRequest<Reply>
}

/** The request classes of one client: each operation's, with the operation on its prototype. */
export const requestsOf = (connection: Connection.Connection): RequestClasses => {
  const operation = (kind: keyof typeof SPAN_NAMES): Operation => ({ connection, kind })
  const submit = operation("submit")
  const submitWithId = operation("submitWithId")
  const kvHandoff = operation("kvHandoff")
  return {
    Submit: class Submit extends SingleRequest<Reply> {
      get operation(): Operation {
        return submit
      }
    },
    SubmitWithId: class SubmitWithId extends SingleRequest<Submitted> {
      get operation(): Operation {
        return submitWithId
      }
    },
    KvHandoff: class KvHandoff extends KvHandoffRequest<Reply> {
      get operation(): Operation {
        return kvHandoff
      }
    }
  }
}

/** Waits for the reply; interrupting the wait aborts the request (the entry is that effect). */
const awaitReply = (entry: PendingRequests.Single): Effect.Effect<Reply, ClientError> =>
  Effect.callback<Reply, ClientError>((resume) => {
    entry.listen(resume)
    if (entry.exit === undefined) return entry
  })

const withId = (entry: PendingRequests.Single): Effect.Effect<Submitted, ClientError> =>
  Effect.succeed({ requestId: entry.requestId, reply: awaitReply(entry) })

/**
 * What a {@link SingleRequest} does when it is run by `fiber`: registers the request and waits
 * (or returns its id), in a span named for the operation and carrying the request id when a
 * tracer is installed.
 */
const startSingle = (request: SingleRequest<unknown>, fiber: Fiber.Fiber<unknown, unknown>): Effect.Effect<unknown, ClientError> => {
  const { connection, kind } = request.operation
  const then: (entry: PendingRequests.Single) => Effect.Effect<unknown, ClientError> = kind === "submitWithId"
    ? withId
    : awaitReply
  if (!tracing(fiber)) {
    const registered = connection.register(request, false, connection.newSingle)
    return Result.isFailure(registered) ? Effect.fail(registered.failure) : then(registered.success)
  }
  return Effect.useSpan(SPAN_NAMES[kind], (span) => {
    const registered = connection.register(request, false, connection.newSingle)
    if (Result.isFailure(registered)) return Effect.fail(registered.failure)
    span.attribute(REQUEST_ID, registered.success.requestId)
    return then(registered.success)
  })
}

/**
 * A streamed operation: the request is registered when the stream starts, with the stream's
 * queue as its entry; the stream's end (or its consumer stopping) aborts it if still pending.
 */
export const streamed = (
  connection: Connection.Connection,
  name: string,
  request: Connection.Request
): Stream.Stream<StreamEvent, ClientError> =>
  Stream.callback<StreamEvent, ClientError>((queue) =>
    Effect.withFiber((fiber) =>
      inScopeSpan(fiber, name, (span: Tracer.Span | undefined) => {
        const registered = connection.register(
          request,
          true,
          (requestId) => new PendingRequests.Streamed(requestId, queue)
        )
        if (Result.isFailure(registered)) return Effect.fail(registered.failure)
        const { requestId } = registered.success
        span?.attribute(REQUEST_ID, requestId)
        return Effect.addFinalizer(() => Effect.sync(() => connection.cancel(requestId)))
      })
    )
  )

/**
 * `start`: the request registered now, nothing aborts it but the caller (see `Service.start`).
 * Not streamed: a one-shot entry ({@link OneShot}); streamed: a queue of its own as its entry.
 */
export const started = (
  connection: Connection.Connection,
  request: StartRequest
): Effect.Effect<Started, ClientError> => {
  const wire = request.kvHandoff === undefined ? request : { ...request, ...request.kvHandoff }
  if (request.streaming !== true) {
    return Effect.suspend(() => {
      const registered = connection.register(wire, false, connection.newSingle)
      if (Result.isFailure(registered)) return Effect.fail(registered.failure)
      return Effect.succeed(new OneShot(registered.success.requestId, connection.state.epoch, registered.success))
    })
  }
  return Effect.flatMap(Queue.make<StreamEvent, ClientError | Cause.Done>(), (queue) => {
    const registered = connection.register(wire, true, (requestId) => new PendingRequests.Streamed(requestId, queue))
    if (Result.isFailure(registered)) return Effect.fail(registered.failure)
    return Effect.succeed(new Queued(registered.success.requestId, connection.state.epoch, queue))
  })
}
