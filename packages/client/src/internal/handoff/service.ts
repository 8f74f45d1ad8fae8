/**
 * The disaggregated client's `InferenceClient` service (what `Disaggregated.make` returns as
 * `client`): each operation over the hand-off of `request.ts`; control signals to every member.
 *
 * @since 0.2.0
 * @internal
 */
import type { Dialect } from "@mcore-effect/protocol"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import type { ClientError } from "../../ClientError.ts"
import type { BatchReply, BatchRequest, BatchSettled, Service, Submitted } from "../../ClientService.ts"
import type { Reply, StreamEvent } from "../../Reply.ts"
import { begin, type HandoffContext, type Flight, finish, type PoolMember } from "./request.ts"
import { refusal } from "./params.ts"
import { Queued } from "../started.ts"
import { invalidArgument, millisOf } from "../arguments.ts"


/** Ids of this client's requests (what `abort` takes), and the fibers `abort` interrupts. */
class Flights {
  next = 0
  readonly fibers = new Map<number, Fiber.Fiber<unknown, unknown>>()
}

/** The checks and the prefill's start, in the caller's fiber: nothing is sent when they refuse. */
const beginChecked = (
  context: HandoffContext,
  id: number,
  prompt: BatchRequest["prompt"],
  params: BatchRequest["samplingParams"],
  options: Omit<BatchRequest, "prompt" | "samplingParams"> | undefined,
  streaming: boolean
): Effect.Effect<Flight, ClientError> => {
  const refused = refusal(prompt, params, options)
  if (refused !== undefined) return Effect.fail(refused)
  const timeout = millisOf("timeout", options?.timeout, context.requestTimeoutMillis)
  if (Result.isFailure(timeout)) return Effect.fail(timeout.failure)
  return begin(context, id, prompt, params, options, streaming, timeout.success)
}

export const makeHandoffService = (context: HandoffContext, dialect: Dialect.Dialect): Service => {
  const flights = new Flights()
  const everyMember = [...context.prefill, ...context.decode]
  const toAll = (op: (client: Service) => Effect.Effect<void, ClientError>): Effect.Effect<void, ClientError> =>
    Effect.forEach(everyMember, (member) => op(member.client), { discard: true })

  const submit = (prompt: BatchRequest["prompt"], params: BatchRequest["samplingParams"], options: Omit<BatchRequest, "prompt" | "samplingParams"> | undefined) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(beginChecked(context, flights.next++, prompt, params, options, false), (flight) =>
        finish(context, flight, restore, undefined))
    )

  /** The rest of a request in a fiber of its own, in the client's scope (what `abort` interrupts). */
  const detached = (flight: Flight, emit: ((event: StreamEvent) => void) | undefined) =>
    Effect.map(
      Effect.forkIn(Effect.uninterruptibleMask((restore) => finish(context, flight, restore, emit)), context.scope, {
        startImmediately: true
      }),
      (fiber) => {
        flights.fibers.set(flight.id, fiber)
        fiber.addObserver(() => flights.fibers.delete(flight.id))
        return fiber
      }
    )

  const submitWithId = (
    prompt: BatchRequest["prompt"],
    params: BatchRequest["samplingParams"],
    options: Omit<BatchRequest, "prompt" | "samplingParams"> | undefined
  ): Effect.Effect<Submitted, ClientError> =>
    Effect.uninterruptible(
      Effect.flatMap(beginChecked(context, flights.next++, prompt, params, options, false), (flight) =>
        Effect.map(detached(flight, undefined), (fiber): Submitted => ({
          requestId: flight.id,
          reply: Effect.onInterrupt(Fiber.join(fiber), () => Fiber.interrupt(fiber)) as Effect.Effect<Reply, ClientError>
        })))
    )

  const stream = (
    prompt: BatchRequest["prompt"],
    params: BatchRequest["samplingParams"],
    options: Omit<BatchRequest, "prompt" | "samplingParams"> | undefined
  ): Stream.Stream<StreamEvent, ClientError> =>
    Stream.callback<StreamEvent, ClientError>((queue) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(beginChecked(context, flights.next++, prompt, params, options, true), (flight) =>
          Effect.andThen(
            finish(context, flight, restore, (event) => {
              Queue.offerUnsafe(queue, event)
            }),
            Queue.end(queue)
          ))
      )
    )

  /** A batch's requests, each settled (in completion order) with its id. */
  const batch = (
    requests: Iterable<BatchRequest>,
    concurrency: number | "unbounded" | undefined
  ): Stream.Stream<{ readonly index: number; readonly requestId: number | undefined; readonly exit: Exit.Exit<Reply, ClientError> }> =>
    Stream.mapEffect(
      Stream.fromIterable(Array.from(requests, (request, index) => ({ request, index }))),
      ({ index, request }) => {
        let requestId: number | undefined = undefined
        const run = Effect.flatMap(submitWithId(request.prompt, request.samplingParams, request), (submitted) => {
          requestId = submitted.requestId
          return submitted.reply
        })
        return Effect.map(Effect.exit(run), (exit) => ({ index, requestId, exit }))
      },
      { concurrency: concurrency ?? "unbounded", unordered: true }
    )

  const notHere = (operation: string) =>
    Effect.fail(
      invalidArgument(
        operation,
        "a disaggregated client makes and releases its own hand-offs: call this on a member's client"
      )
    )

  return {
    submit,
    submitWithId,
    stream,
    submitAll: (requests, options) =>
      Stream.mapEffect(batch(requests, options?.concurrency), ({ exit, index, requestId }) =>
        Exit.isSuccess(exit)
          ? Effect.succeed<BatchReply>({ index, requestId: requestId!, reply: exit.value })
          : Effect.failCause(exit.cause)),
    submitAllSettled: (requests, options) =>
      Stream.map(batch(requests, options?.concurrency), ({ exit, index, requestId }): BatchSettled => ({ index, requestId, exit })),
    submitWithKvHandoff: () => notHere("submitWithKvHandoff"),
    streamWithKvHandoff: () => Stream.fromEffect(notHere("streamWithKvHandoff")),
    releaseKvHandoff: () => notHere("releaseKvHandoff"),
    start: (request) =>
      Effect.flatMap(Queue.make<StreamEvent, ClientError | Cause.Done>(), (queue) =>
        Effect.uninterruptible(
          Effect.flatMap(
            beginChecked(context, flights.next++, request.prompt, request.samplingParams, request, request.streaming === true),
            (flight) =>
              Effect.map(
                detached(flight, (event) => {
                  Queue.offerUnsafe(queue, event)
                  if (event._tag === "Final") Queue.endUnsafe(queue)
                }),
                (fiber) => {
                  fiber.addObserver((exit) => {
                    if (exit._tag === "Failure") Queue.failCauseUnsafe(queue, exit.cause)
                  })
                  return new Queued(flight.id, flight.started.connection, queue)
                }
              )
          )
        )),
    abort: (requestId) =>
      Effect.suspend(() => {
        const fiber = flights.fibers.get(requestId)
        return fiber === undefined ? Effect.void : Fiber.interrupt(fiber)
      }),
    sendAbort: (requestId) =>
      Effect.suspend(() => {
        const fiber = flights.fibers.get(requestId)
        return fiber === undefined ? Effect.void : Fiber.interrupt(fiber)
      }),
    pauseEngines: () => toAll((c) => c.pauseEngines()),
    unpauseEngines: () => toAll((c) => c.unpauseEngines()),
    suspendEngines: () => toAll((c) => c.suspendEngines()),
    resumeEngines: () => toAll((c) => c.resumeEngines()),
    stopEngines: () => toAll((c) => c.stopEngines()),
    setGenerationEpoch: (epoch) => toAll((c) => c.setGenerationEpoch(epoch)),
    startCudaProfiler: () => toAll((c) => c.startCudaProfiler()),
    stopCudaProfiler: () => toAll((c) => c.stopCudaProfiler()),
    shutdownCoordinator: () => toAll((c) => c.shutdownCoordinator()),
    blockHashes: (prompt, mediaCacheKey) => context.prefill[0]!.client.blockHashes(prompt, mediaCacheKey),
    dialect,
    pendingCount: Effect.sync(() => context.ledger.inFlight),
    connected: Effect.map(
      Effect.all([anyConnected(context.prefill), anyConnected(context.decode)]),
      ([prefill, decode]) => prefill && decode
    )
  }
}

const anyConnected = (members: ReadonlyArray<PoolMember>): Effect.Effect<boolean> =>
  Effect.map(Effect.forEach(members, (member) => member.client.connected), (up) => up.some(Boolean))

