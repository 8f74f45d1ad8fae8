/**
 * Faults a test can switch on and off at run time, on the test coordinator (acting on what it
 * sends to clients) or on a test engine (acting on what it sends to the coordinator).
 *
 * | fault | coordinator (towards clients) | engine (towards the coordinator) |
 * |---|---|---|
 * | `DelayReplies` | replies and partials leave `millis` late | reply batches leave `millis` late |
 * | `DropReplies` | the next `count` final replies are not sent | the next `count` finished requests are left out of their batch |
 * | `DuplicateReplies` | the next `count` final replies are sent twice | the next `count` finished requests appear twice in their batch |
 * | `ReorderPartials` | partials leave in reverse order, `window` at a time (a request's held partials are flushed before its final reply) | partial batches leave in reverse order, `window` at a time |
 * | `SendGarbage` | the next `count` replies or partials are each preceded by a malformed message | the next `count` batches are each preceded by a malformed message |
 * | `SendWrongArity` | the next `count` replies or partials lose their body frame (one-frame dialects: gain a nil frame) | the next `count` batches lose their last body frame (one-frame dialects: gain a nil frame) |
 * | `SendMessages` | the test's own messages, up to `perReply` ahead of each reply or partial, until all are sent | the same, ahead of each batch |
 * | `Hang` | stops reading and sending until cleared (what was queued is then processed) | stops reading, stepping and sending until cleared |
 *
 * Crashing and restarting the coordinator are operations on the coordinator itself
 * (`TestCoordinator.crash` / `restart`), not switches.
 *
 * @since 0.1.0
 */
import { Headers, Msgpack } from "@mcore-effect/protocol"
import * as Schema from "effect/Schema"

const Count = Schema.Number.check(Schema.isGreaterThanOrEqualTo(1))

/**
 * @category models
 * @since 0.1.0
 */
export class DelayReplies extends Schema.TaggedClass<DelayReplies>()("DelayReplies", {
  millis: Schema.Finite.check(Schema.isGreaterThanOrEqualTo(0))
}) {}

/**
 * @category models
 * @since 0.1.0
 */
export class DropReplies extends Schema.TaggedClass<DropReplies>()("DropReplies", { count: Count }) {}

/**
 * @category models
 * @since 0.1.0
 */
export class DuplicateReplies extends Schema.TaggedClass<DuplicateReplies>()("DuplicateReplies", { count: Count }) {}

/**
 * @category models
 * @since 0.1.0
 */
export class ReorderPartials extends Schema.TaggedClass<ReorderPartials>()("ReorderPartials", {
  window: Schema.Int.check(Schema.isGreaterThanOrEqualTo(2))
}) {}

/**
 * @category models
 * @since 0.1.0
 */
export class SendGarbage extends Schema.TaggedClass<SendGarbage>()("SendGarbage", { count: Count }) {}

/**
 * @category models
 * @since 0.1.0
 */
export class SendWrongArity extends Schema.TaggedClass<SendWrongArity>()("SendWrongArity", { count: Count }) {}

/**
 * @category models
 * @since 0.1.0
 */
export class SendMessages extends Schema.TaggedClass<SendMessages>()("SendMessages", {
  /** The messages, each a list of frames (a ROUTER's identity frame is added by the sender). */
  messages: Schema.Array(Schema.Array(Schema.Uint8Array)),
  perReply: Count
}) {}

/**
 * @category models
 * @since 0.1.0
 */
export class Hang extends Schema.TaggedClass<Hang>()("Hang", {}) {}

/**
 * Any fault.
 *
 * @category schemas
 * @since 0.1.0
 */
export const Fault = Schema.Union([
  DelayReplies,
  DropReplies,
  DuplicateReplies,
  ReorderPartials,
  SendGarbage,
  SendWrongArity,
  SendMessages,
  Hang
])

/**
 * @category models
 * @since 0.1.0
 */
export type Fault = typeof Fault.Type

/**
 * @category models
 * @since 0.1.0
 */
export type FaultTag = Fault["_tag"]

/**
 * Replies and partials leave `millis` late.
 *
 * @category constructors
 * @since 0.1.0
 */
export const delayReplies = (millis: number): Fault => new DelayReplies({ millis })

/**
 * The next `count` final replies are lost (default 1; `Infinity` for all).
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Faults, TestCoordinator } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const coordinator = yield* TestCoordinator.make()
 *   yield* coordinator.injectFault(Faults.dropReplies(1))
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const dropReplies = (count = 1): Fault => new DropReplies({ count })

/**
 * The next `count` final replies are sent twice (default 1).
 *
 * @category constructors
 * @since 0.1.0
 */
export const duplicateReplies = (count = 1): Fault => new DuplicateReplies({ count })

/**
 * Partials leave in reverse order, `window` at a time (default 2).
 *
 * @category constructors
 * @since 0.1.0
 */
export const reorderPartials = (window = 2): Fault => new ReorderPartials({ window })

/**
 * The next `count` replies are each preceded by a malformed message (default 1).
 *
 * @category constructors
 * @since 0.1.0
 */
export const sendGarbage = (count = 1): Fault => new SendGarbage({ count })

/**
 * The next `count` replies are sent with a frame missing (default 1).
 *
 * @category constructors
 * @since 0.1.0
 */
export const sendWrongArity = (count = 1): Fault => new SendWrongArity({ count })

/**
 * Sends the given messages, in order, up to `perReply` (default 1) ahead of each reply or partial
 * (each batch, on an engine), and switches itself off once all are sent: how a test puts its own
 * hostile input on the wire between real replies.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Faults, TestCoordinator } from "@mcore-effect/testkit"
 *
 * const program = Effect.gen(function*() {
 *   const coordinator = yield* TestCoordinator.make()
 *   yield* coordinator.injectFault(Faults.sendMessages([[Uint8Array.of(0xc1)], [new Uint8Array(0)]], 2))
 * })
 * ```
 *
 * @category constructors
 * @since 0.1.0
 */
export const sendMessages = (messages: ReadonlyArray<ReadonlyArray<Uint8Array>>, perReply = 1): Fault =>
  new SendMessages({ messages, perReply })

/**
 * Stop answering until the fault is cleared.
 *
 * @category constants
 * @since 0.1.0
 */
export const hang: Fault = new Hang({})

/**
 * The malformed messages `SendGarbage` cycles through, each a list of frames: bytes that are not
 * msgpack, a header nobody knows, a metadata frame that is not an array, an empty frame, a reply
 * header with no request id, and a reply whose request id is a string.
 *
 * @category constants
 * @since 0.1.0
 */
export const garbageMessages: ReadonlyArray<ReadonlyArray<Uint8Array>> = [
  [Uint8Array.of(0xc1)],
  [Msgpack.encode([99])],
  [Msgpack.encode("not an array")],
  [new Uint8Array(0)],
  [Msgpack.encode([Headers.values.ENGINE_REPLY])],
  [Msgpack.encode([Headers.values.ENGINE_REPLY, "seven"]), Msgpack.encode({})]
]

/**
 * The faults active on one coordinator or engine, and how much of each is left. Components read
 * it on their send paths; tests switch it through the component's `injectFault` / `clearFaults`.
 *
 * @category models
 * @since 0.1.0
 */
export class Switchboard {
  private readonly active = new Map<FaultTag, { fault: Fault; remaining: number }>()
  private readonly resumers: Array<() => void> = []
  private garbageIndex = 0
  /** How many times each fault acted. */
  readonly applied: Record<FaultTag, number> = {
    DelayReplies: 0,
    DropReplies: 0,
    DuplicateReplies: 0,
    ReorderPartials: 0,
    SendGarbage: 0,
    SendWrongArity: 0,
    SendMessages: 0,
    Hang: 0
  }

  /** Switches a fault on (replacing one of the same kind). */
  inject(fault: Fault): void {
    const remaining = "count" in fault ? fault.count : fault._tag === "SendMessages" ? fault.messages.length : Infinity
    this.active.set(fault._tag, { fault, remaining })
    if (fault._tag === "Hang") this.applied.Hang++
  }

  /** Switches one kind of fault off, or all of them. */
  clear(tag?: FaultTag): void {
    if (tag === undefined) this.active.clear()
    else this.active.delete(tag)
    if (!this.hung) this.wake()
  }

  /** The faults currently on. */
  list(): ReadonlyArray<Fault> {
    return Array.from(this.active.values(), (a) => a.fault)
  }

  /** True while a `Hang` is on. */
  get hung(): boolean {
    return this.active.has("Hang")
  }

  /** Resolves when no `Hang` is on. */
  whenAnswering(): Promise<void> {
    return this.hung ? new Promise((resolve) => this.resumers.push(resolve)) : Promise.resolve()
  }

  /** The current reply delay in milliseconds (0 when off). */
  get delayMillis(): number {
    const a = this.active.get("DelayReplies")
    return a === undefined ? 0 : (a.fault as DelayReplies).millis
  }

  /** The reorder window, or 0 when off. */
  get reorderWindow(): number {
    const a = this.active.get("ReorderPartials")
    return a === undefined ? 0 : (a.fault as ReorderPartials).window
  }

  /** Uses up one unit of a counted fault; true when it is on and so applies to this message. */
  take(tag: "DropReplies" | "DuplicateReplies" | "SendGarbage" | "SendWrongArity"): boolean {
    const a = this.active.get(tag)
    if (a === undefined) return false
    a.remaining--
    if (a.remaining <= 0) this.active.delete(tag)
    this.applied[tag]++
    return true
  }

  /**
   * The messages of a `SendMessages` fault to send ahead of the next reply (none when it is off);
   * the fault switches itself off once all are taken. Each message counts as one application.
   */
  takeMessages(): ReadonlyArray<ReadonlyArray<Uint8Array>> {
    const a = this.active.get("SendMessages")
    if (a === undefined) return []
    const { messages, perReply } = a.fault as SendMessages
    const start = messages.length - a.remaining
    const taken = messages.slice(start, Math.min(start + perReply, messages.length))
    a.remaining -= taken.length
    if (a.remaining <= 0) this.active.delete("SendMessages")
    this.applied.SendMessages += taken.length
    return taken
  }

  /** Counts one application of an uncounted fault (delay, reorder). */
  note(tag: "DelayReplies" | "ReorderPartials"): void {
    this.applied[tag]++
  }

  /** The next malformed message, cycling through {@link garbageMessages}. */
  nextGarbage(): ReadonlyArray<Uint8Array> {
    const message = garbageMessages[this.garbageIndex % garbageMessages.length]!
    this.garbageIndex++
    return message
  }

  private wake(): void {
    for (const resume of this.resumers.splice(0)) resume()
  }
}
