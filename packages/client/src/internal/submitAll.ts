/**
 * `submitAll`'s and `submitAllSettled`'s scheduler: requests are registered while fewer than
 * `concurrency` are in flight, each next one as a reply frees a place (from the listener,
 * synchronously, with no fiber per request); replies go to the stream's queue in completion
 * order. Fail-fast ends the batch at the first failure; settle hands every request's `Exit` on
 * and goes on.
 *
 * @since 0.1.0
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Queue from "effect/Queue"
import * as Result from "effect/Result"
import * as Stream from "effect/Stream"
import type { ClientError } from "../ClientError.ts"
import type { Connection, Request } from "./connection.ts"
import { Batched, type BatchSink } from "./pendingRequests.ts"
import type { BatchReply, BatchSettled, SubmitAllOptions } from "../ClientService.ts"
import { inScopeSpan } from "./spans.ts"
import { invalidArgument } from "./arguments.ts"


/**
 * The batch as a stream; see `InferenceClient.Service.submitAll`.
 *
 * @since 0.1.0
 */
export const submitAll: {
  (connection: Connection, requests: Iterable<Request>, options: SubmitAllOptions | undefined, mode: "failFast"): Stream.Stream<BatchReply, ClientError>
  (connection: Connection, requests: Iterable<Request>, options: SubmitAllOptions | undefined, mode: "settle"): Stream.Stream<BatchSettled, ClientError>
} = (
  connection: Connection,
  requests: Iterable<Request>,
  options: SubmitAllOptions | undefined,
  mode: "failFast" | "settle"
): Stream.Stream<any, ClientError> =>
  Stream.callback<BatchReply | BatchSettled, ClientError>((queue) =>
    Effect.withFiber((fiber) => {
      const concurrency = options?.concurrency === undefined || options.concurrency === "unbounded"
        ? Infinity
        : options.concurrency
      if (!(concurrency >= 1)) {
        return Effect.fail(invalidArgument("concurrency", `expected at least 1, got ${String(options?.concurrency)}`))
      }
      return inScopeSpan(fiber, "InferenceClient.submitAll", (span) => {
        let iterator: Iterator<Request>
        try {
          iterator = requests[Symbol.iterator]()
        } catch (cause) {
          return Effect.fail(invalidArgument("requests", `not iterable: ${String(cause)}`))
        }
        let next = 0
        let inFlight = 0
        let exhausted = false
        let ended = false
        const end = (error: ClientError | undefined): void => {
          if (ended) return
          ended = true
          if (error === undefined) {
            Queue.endUnsafe(queue)
          } else {
            connection.cancelBatch(sink)
            Queue.failCauseUnsafe(queue, Cause.fail(error))
          }
        }
        const settle = mode === "settle"
        const sink: BatchSink = {
          completed: (entry, reply) => {
            inFlight--
            Queue.offerUnsafe(
              queue,
              settle
                ? { index: entry.index, requestId: entry.requestId, exit: Exit.succeed(reply) }
                : { index: entry.index, requestId: entry.requestId, reply }
            )
            fill()
          },
          failed: (entry, error) => {
            inFlight--
            if (!settle) return end(error)
            Queue.offerUnsafe(queue, { index: entry.index, requestId: entry.requestId, exit: Exit.fail(error) })
            fill()
          }
        }
        const fill = (): void => {
          while (!ended && !exhausted && inFlight < concurrency) {
            let item: IteratorResult<Request>
            try {
              item = iterator.next()
            } catch (cause) {
              return end(invalidArgument("requests", `the iterator threw: ${String(cause)}`))
            }
            if (item.done === true) {
              exhausted = true
              break
            }
            const index = next++
            const registered = connection.register(
              item.value,
              false,
              (requestId) => new Batched(sink, index, requestId)
            )
            if (Result.isFailure(registered)) {
              if (!settle) return end(registered.failure)
              Queue.offerUnsafe(queue, { index, requestId: undefined, exit: Exit.fail(registered.failure) })
              continue
            }
            inFlight++
          }
          if (exhausted && inFlight === 0) end(undefined)
        }
        fill()
        span?.attribute("mcore.batch_size", next)
        return Effect.addFinalizer(() =>
          Effect.sync(() => {
            // The consumer stopped early: what is still in flight is aborted.
            if (!ended) {
              ended = true
              connection.cancelBatch(sink)
            }
          })
        )
      })
    })
  )
