/**
 * One disaggregated request, as Megatron-LM main's engines take it (d98e8a64dd; the order is
 * PR 6675's Dynamo integration's): the prefill on a prefill coordinator P with `do_kv_handoff`
 * and no token to generate, which leaves the prompt's KV blocks pinned on P's engine; the
 * decode on a decode coordinator D with SUBMIT_REQUEST_WITH_KV, which pulls those blocks; and
 * the one RELEASE_KV to P, the pin's finalizer, sent only when D can no longer read the blocks.
 *
 * When that is, on every path (the pin is {@link Hold}; its release runs once, or the pin is
 * counted as died with its prefill connection):
 *
 * - D's first output (a partial or its final) or a failure reply: at once. D has the blocks.
 * - The decode never submitted (D's client refused it, P's reply unusable): at once.
 * - Interrupted (or the deadline passed) before D's first output: ABORT to D, which Megatron's
 *   decode ignores while its KV import is pending (`inference_state_handoff.py:973`: the request
 *   enters `requests` only when admitted), then, in the background, D's next output is awaited
 *   (a partial: ABORT again, for good), then the release. The caller is not kept waiting. D
 *   silent for `decodeGrace` after the ABORT (its coordinator dropped the hand-off, as Megatron's
 *   does without a word when no engine is reachable, `handlers.py:198`): released then.
 * - D lost before its first output: after `decodeGrace`, in the background (its engine may
 *   still be importing: the risk the option sizes).
 * - Interrupted while P is still prefilling: ABORT to P, P's reply awaited in the background,
 *   and its pin, if it made one, released (the decode was never submitted).
 * - P's connection gone (P lost, or back as a new process that numbers its requests from 0
 *   again): nothing is sent; the pin died with that connection (counted).
 * - The disaggregated client's scope closing: what waits in the background releases at once.
 *
 * @since 0.2.0
 * @internal
 */
import type { Prompt, SamplingParams } from "@mcore-effect/protocol"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Effectable from "effect/Effectable"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import { type ClientError, clientError, DecodeRefused, RequestTimeout } from "../../ClientError.ts"
import type { Service, Started, SubmitOptions } from "../../ClientService.ts"
import { isDeserialized, type Reply, type StreamEvent } from "../../Reply.ts"
import { type Pin, prefillParams, readPin } from "./params.ts"
import type { Ledger } from "./ledger.ts"

/**
 * A coordinator of a pool (prefill or decode): its name (its address, or a fleet id) and its
 * client, any `Service`. A pin is released through the member that made it, on the connection
 * that made it.
 *
 * @since 0.2.0
 * @category models
 */
export interface PoolMember {
  readonly name: string
  readonly client: Service
}

/** No deadline on a member's request: the deadline is the disaggregated request's own. */
const NO_DEADLINE = Duration.infinity

/** What every request of one disaggregated client shares. */
export interface HandoffContext {
  readonly prefill: ReadonlyArray<PoolMember>
  readonly decode: ReadonlyArray<PoolMember>
  readonly requestTimeoutMillis: number | undefined
  readonly decodeGrace: Duration.Duration
  readonly ledger: Ledger
  /** The disaggregated client's scope: the background waits run in it. */
  readonly scope: Scope.Scope
  /** Round-robin cursors. */
  readonly cursor: { prefill: number; decode: number }
}

/** The next connected member (round robin), or the next one when none is (its call then fails). */
const choose = (members: ReadonlyArray<PoolMember>, context: HandoffContext, pool: "prefill" | "decode"): Effect.Effect<PoolMember> =>
  Effect.suspend(() => {
    const start = context.cursor[pool]++
    if (members.length === 1) return Effect.succeed(members[0]!)
    const at = (i: number): Effect.Effect<PoolMember> => {
      const member = members[(start + i) % members.length]!
      if (i === members.length - 1) return Effect.succeed(member)
      return Effect.flatMap(member.client.connected, (up) => (up ? Effect.succeed(member) : at(i + 1)))
    }
    return at(0)
  })

/**
 * A request started on P: everything its rest needs. `id` is the disaggregated client's own id
 * for it (what its `abort` takes, and `Tokens.requestId`).
 */
export interface Flight {
  readonly id: number
  readonly prompt: Prompt.Prompt
  readonly params: SamplingParams.SamplingParamsInput | undefined
  readonly streaming: boolean
  readonly prefill: PoolMember
  readonly started: Started
  /** `Clock` millis past which the request fails with `RequestTimeout`; `undefined`: none. */
  readonly deadline: number | undefined
  readonly timeoutMillis: number | undefined
  readonly startedAt: number
}

/**
 * The pin P's reply named, held until its one release: the member and connection that made it.
 */
export class Hold {
  /** Released, or died with its connection: nothing more is ever sent for it. */
  done = false
  constructor(
    /** The disaggregated request's id. */
    readonly id: number,
    readonly member: PoolMember,
    readonly pin: Pin,
    readonly connection: number,
    readonly ledger: Ledger
  ) {}

  /**
   * RELEASE_KV, once, on the connection that made the pin; else counted as died with it. The
   * effect is the hold itself (see the prototype below): no closure per release.
   */
  release(): Effect.Effect<void> {
    return this
  }
}

export interface Hold extends Effect.Effect<void> {}

Object.setPrototypeOf(
  Hold.prototype,
  Effectable.Prototype<Hold>({
    label: "Disaggregated.release",
    evaluate() {
      if (this.done) return Effect.void
      this.done = true
      return Effect.matchEffect(this.member.client.releaseKvHandoff(this.pin.requestId, { connection: this.connection }), {
        onFailure: () => Effect.sync(() => this.ledger.died(this.id, this.pin)),
        onSuccess: () => Effect.sync(() => this.ledger.released(this.id, this.pin))
      })
    }
  })
)

/** Why a wait ended early: the deadline, or the caller's interruption. */
const timeoutOf = (flight: Flight): ClientError =>
  clientError(new RequestTimeout({ requestId: flight.id, timeoutMillis: flight.timeoutMillis ?? 0 }))

/** A take from a member's events, bounded by the request's deadline (failing with `TIMED_OUT`). */
const timed = <A>(flight: Flight, take: Effect.Effect<A, ClientError | Cause.Done>): Effect.Effect<A, ClientError | Cause.Done | typeof TIMED_OUT> => {
  const deadline = flight.deadline
  if (deadline === undefined) return take
  return Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.timeoutOrElse(take, { duration: Duration.millis(Math.max(0, deadline - now)), orElse: () => Effect.fail(TIMED_OUT) }))
}

const TIMED_OUT = { _tag: "TimedOut" } as const

/** Runs `effect` in the background, in the client's scope, counted until it ends. */
const background = (context: HandoffContext, effect: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.asVoid(Effect.forkIn(context.ledger.track(effect), context.scope, { startImmediately: true }))

/**
 * The start of a disaggregated request (the caller has checked it; see `params.refusal`):
 * P chosen, the prefill sent. Fails, nothing sent, when P's client refuses it.
 */
export const begin = (
  context: HandoffContext,
  id: number,
  prompt: Prompt.Prompt,
  params: SamplingParams.SamplingParamsInput | undefined,
  options: SubmitOptions | undefined,
  streaming: boolean,
  timeoutMillis: number | undefined
): Effect.Effect<Flight, ClientError> =>
  Effect.flatMap(choose(context.prefill, context, "prefill"), (prefill) =>
    Effect.flatMap(
      prefill.client.start({ prompt, samplingParams: prefillParams(params), offloadParams: options?.offloadParams, timeout: NO_DEADLINE }),
      (started) => {
        context.ledger.started()
        const flight = (now: number | undefined): Flight => ({
          id,
          prompt,
          params,
          streaming,
          prefill,
          started,
          deadline: now === undefined || timeoutMillis === undefined ? undefined : now + timeoutMillis,
          timeoutMillis,
          startedAt: performance.now()
        })
        return timeoutMillis === undefined ? Effect.succeed(flight(undefined)) : Effect.map(Clock.currentTimeMillis, flight)
      }
    ))

/** The failure an early end gives the caller: its interruption, or `RequestTimeout`. */
const ended = <A>(flight: Flight, exit: Exit.Exit<unknown, unknown>): Effect.Effect<A, ClientError> =>
  Exit.isFailure(exit) && Cause.hasInterrupts(exit.cause) ? Effect.failCause(Cause.interrupt()) : Effect.fail(timeoutOf(flight))

const isEarlyEnd = (exit: Exit.Exit<unknown, unknown>): boolean =>
  Exit.isFailure(exit) && (Cause.hasInterrupts(exit.cause) || exit.cause.reasons.some((r) => Cause.isFailReason(r) && r.error === TIMED_OUT))

const errorOf = (exit: Exit.Failure<unknown, unknown>, address: string): ClientError => {
  const error = Cause.findErrorOption(exit.cause)
  if (error._tag === "Some" && (error.value as { _tag?: unknown })._tag === "ClientError") return error.value as ClientError
  return clientError(new DecodeRefused({ address, why: `its events ended without a final reply: ${Cause.pretty(exit.cause)}` }))
}

/**
 * The rest of a disaggregated request, in the caller's fiber, its waits interruptible through
 * `restore` (the caller runs this uninterruptibly): P's reply, the decode, D's events (each handed
 * to `emit`), the release. Returns D's final reply (its `latency` the whole request's, on a raw
 * reply).
 */
export const finish = (
  context: HandoffContext,
  flight: Flight,
  restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
  emit: ((event: StreamEvent) => void) | undefined
): Effect.Effect<Reply, ClientError> =>
  Effect.flatMap(Effect.exit(restore(timed(flight, flight.started.final))), (exit) => {
    const ledger = context.ledger
    const prefill = flight.prefill
    if (Exit.isFailure(exit)) {
      ledger.ended(Cause.hasInterrupts(exit.cause) ? "interrupted" : "failed")
      if (isEarlyEnd(exit)) {
        return Effect.andThen(background(context, prefillAfterCancel(context, flight)), ended<Reply>(flight, exit))
      }
      // P lost, its client closed, its reply unreadable: no pin this client can name.
      return Effect.fail(errorOf(exit, prefill.name))
    }
    const reading = readPin(exit.value, prefill.name, flight.started.requestId)
    if (reading._tag === "Refused") {
      ledger.ended("failed")
      if (reading.pinned === undefined) return Effect.fail(reading.error)
      const hold = new Hold(flight.id, prefill, { requestId: reading.pinned, blockIds: [], kvMeta: {} }, flight.started.connection, ledger)
      ledger.pinned(flight.id, hold.pin)
      return Effect.andThen(hold.release(), Effect.fail(reading.error))
    }
    const hold = new Hold(flight.id, prefill, reading.pin, flight.started.connection, ledger)
    ledger.pinned(flight.id, reading.pin)
    return decode(context, flight, hold, restore, emit)
  })

const decode = (
  context: HandoffContext,
  flight: Flight,
  hold: Hold,
  restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
  emit: ((event: StreamEvent) => void) | undefined
): Effect.Effect<Reply, ClientError> =>
  Effect.flatMap(choose(context.decode, context, "decode"), (member) =>
    Effect.matchEffect(
      member.client.start({
        prompt: flight.prompt,
        samplingParams: flight.params,
        kvHandoff: { kvMeta: hold.pin.kvMeta, srcBlockIds: hold.pin.blockIds },
        streaming: flight.streaming,
        timeout: NO_DEADLINE
      }),
      {
        // The decode was never submitted: nothing will read the blocks.
        onFailure: (error) => {
          context.ledger.ended("failed")
          return Effect.andThen(
            hold.release(),
            Effect.fail(clientError(new DecodeRefused({ address: member.name, why: error.message })))
          )
        },
        onSuccess: (started) => {
          context.ledger.decodeStarted(flight.id)
          return events(context, flight, hold, member, started, restore, emit)
        }
      }
    ))

const events = (
  context: HandoffContext,
  flight: Flight,
  hold: Hold,
  member: PoolMember,
  started: Started,
  restore: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>,
  emit: ((event: StreamEvent) => void) | undefined
): Effect.Effect<Reply, ClientError> => {
  const ledger = context.ledger
  const loop: Effect.Effect<Reply, ClientError> = Effect.flatMap(
    Effect.exit(restore(timed(flight, started.next))),
    (exit): Effect.Effect<Reply, ClientError> => {
      if (Exit.isSuccess(exit)) {
        const event = exit.value
        // D's first output: it holds the blocks now.
        if (!hold.done) ledger.note(flight.id, "DecodeOutput")
        const released = hold.done ? Effect.void : hold.release()
        if (event._tag === "Tokens") {
          emit?.({ _tag: "Tokens", requestId: flight.id, newTokens: event.newTokens, newLogProbs: event.newLogProbs })
          return Effect.andThen(released, loop)
        }
        const reply = withLatency(event.reply, flight)
        ledger.ended("decoded")
        emit?.({ _tag: "Final", reply })
        return Effect.as(released, reply)
      }
      if (isEarlyEnd(exit)) {
        ledger.ended(Cause.hasInterrupts(exit.cause) ? "interrupted" : "failed")
        if (hold.done) return Effect.andThen(Effect.ignore(member.client.abort(started.requestId)), ended<Reply>(flight, exit))
        return Effect.andThen(
          Effect.andThen(Effect.ignore(member.client.sendAbort(started.requestId)), background(context, decodeAfterCancel(context, hold, member, started))),
          ended<Reply>(flight, exit)
        )
      }
      ledger.ended("failed")
      const error = errorOf(exit, member.name)
      if (hold.done) return Effect.fail(error)
      ledger.note(flight.id, isLost(error) ? "DecodeLost" : "DecodeFailed")
      return Effect.andThen(afterDecodeFailure(context, hold, error), Effect.fail(error))
    }
  )
  return loop
}

/** D's coordinator lost (or its client closed): D's engine may still be importing. */
const isLost = (error: ClientError): boolean => error.reason._tag === "CoordinatorLost" || error.reason._tag === "ClientClosed"

/** D's request failed before any output: lost with D (release after the grace period), or answered. */
const afterDecodeFailure = (context: HandoffContext, hold: Hold, error: ClientError): Effect.Effect<void> => {
  if (isLost(error)) {
    return background(context, Effect.andThen(Effect.sleep(context.decodeGrace), Effect.suspend(() => hold.release())))
  }
  // A reply arrived (malformed, too large) or the request never went out (SendFailed): D is not reading.
  return hold.release()
}

/**
 * After an early end before D's first output: D's next output (ABORT was sent; Megatron's
 * decode ignores it until the import is admitted), then ABORT for good if it was a partial, then
 * the release. Interrupted only when the client's scope closes: the release then runs at once.
 */
const decodeAfterCancel = (context: HandoffContext, hold: Hold, member: PoolMember, started: Started): Effect.Effect<void> =>
  Effect.onInterrupt(
    Effect.flatMap(Effect.exit(Effect.timeoutOrElse(started.next, { duration: context.decodeGrace, orElse: () => Effect.fail(TIMED_OUT) })), (exit) => {
      const ledger = context.ledger
      if (isEarlyEnd(exit)) {
        // Silent past the grace period (a coordinator with no engine drops a hand-off without a
        // word, `handlers.py:198`): given up here, and the blocks released (the documented risk).
        ledger.note(hold.id, "DecodeSilent")
        return Effect.andThen(Effect.ignore(member.client.abort(started.requestId)), Effect.suspend(() => hold.release()))
      }
      if (Exit.isSuccess(exit)) {
        ledger.note(hold.id, "DecodeOutput")
        const again = exit.value._tag === "Tokens" ? Effect.ignore(member.client.abort(started.requestId)) : Effect.void
        return Effect.andThen(again, Effect.suspend(() => hold.release()))
      }
      const error = Cause.findErrorOption(exit.cause)
      const lost = error._tag === "Some" && isLost(error.value as ClientError)
      ledger.note(hold.id, lost ? "DecodeLost" : "DecodeFailed")
      return lost
        ? Effect.andThen(Effect.sleep(context.decodeGrace), Effect.suspend(() => hold.release()))
        : Effect.suspend(() => hold.release())
    }),
    () => Effect.suspend(() => hold.release())
  )

/**
 * After an early end while P was prefilling: ABORT to P, P's reply awaited, and its pin, if it
 * made one, released (no decode was sent). P lost meanwhile: the pin, if any, died with it.
 */
const prefillAfterCancel = (context: HandoffContext, flight: Flight): Effect.Effect<void> => {
  const prefill = flight.prefill
  const started = flight.started
  const ledger = context.ledger
  let hold: Hold | undefined = undefined
  return Effect.onInterrupt(
    Effect.andThen(
      Effect.ignore(prefill.client.sendAbort(started.requestId)),
      Effect.flatMap(Effect.exit(started.final), (exit) => {
        if (Exit.isFailure(exit)) return Effect.void
        const reading = readPin(exit.value, prefill.name, started.requestId)
        const pinned = reading._tag === "Pin" ? reading.pin : reading.pinned === undefined
          ? undefined
          : { requestId: reading.pinned, blockIds: [], kvMeta: {} }
        if (pinned === undefined) return Effect.void
        hold = new Hold(flight.id, prefill, pinned, started.connection, ledger)
        ledger.pinned(flight.id, pinned)
        return hold.release()
      })
    ),
    // The client closing: P's reply will not be awaited; a pin it makes is P's until it restarts.
    () => Effect.void
  )
}

/**
 * D's final reply, its `latency` the whole request's (a raw reply, set in place: the map is this
 * request's own, just decoded, and a copy of its ~40 keys cost more than the rest of the step; a
 * typed one as D gave it).
 */
const withLatency = (reply: Reply, flight: Flight): Reply => {
  if (!isDeserialized(reply)) (reply as { latency: number }).latency = (performance.now() - flight.startedAt) / 1000
  return reply
}
