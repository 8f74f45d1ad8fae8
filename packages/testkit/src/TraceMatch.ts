/**
 * How a replay decides that an observed message is the recorded one: both are decoded with the
 * protocol codec of their direction and compared as values (so a float written as float32 on one
 * side and float64 on the other, or a map written in another key order, still matches), after
 * dropping the reply fields that differ from run to run (timings, a random uid).
 *
 * Ids the coordinator assigns (the `request_id` inside a reply or a partial, a global counter of
 * the coordinator) are compared as ids, not as literals: the first time a recorded coordinator id
 * meets an observed one, the replay renames it, and from then on the pair must hold both ways in
 * every message (see {@link Renaming}). So a replay passes against a coordinator that has served
 * other requests before, and twice in a row against the same one. The client's own ids (frame 0)
 * are the client's choice and stay literal.
 *
 * Messages are decoded in a dialect (`Options.protocol`, default the reference protocol's): a
 * replay passes the one its trace was recorded in.
 *
 * @since 0.1.0
 */
import { type Dialect, Dialects, type Frames, type MessageSpec } from "@mcore-effect/protocol"
import * as Equal from "effect/Equal"
import * as Result from "effect/Result"
import type { Direction } from "./Trace.ts"

/**
 * Reply-map keys that legitimately differ from run to run, ignored by default when replies are
 * compared: what a test engine (or Megatron) fills from the clock or at random (`arrival_time`,
 * `ttft`, `tpot`, `events`, `uid`, the client's `latency`), and the prefix-cache hits
 * (`num_cached_tokens`, `num_matched_prefix_blocks`), which depend on what the engines served
 * before, not on the request.
 *
 * @category constants
 * @since 0.1.0
 */
export const volatileReplyKeys: ReadonlyArray<string> = [
  "arrival_time",
  "ttft",
  "tpot",
  "events",
  "uid",
  "latency",
  "num_cached_tokens",
  "num_matched_prefix_blocks"
]

/**
 * Where a decoded coordinator message holds an id the coordinator assigned (its own numbering of
 * requests across all clients), not the client's: compared as ids, by default.
 *
 * @category constants
 * @since 0.1.0
 */
export const coordinatorIdPaths: ReadonlyArray<string> = [
  "reply.request_id",
  "reply.disaggregated_params.request_id",
  "partial.request_id"
]

/**
 * How messages are compared.
 *
 * @category models
 * @since 0.1.0
 */
export interface Options {
  /** Keys removed from `EngineReply` reply maps on both sides. Default {@link volatileReplyKeys}. */
  readonly ignoreReplyKeys?: ReadonlyArray<string> | undefined
  /**
   * Paths (as in {@link Difference}) compared as coordinator-assigned ids, through a
   * {@link Renaming}. Default {@link coordinatorIdPaths}; `[]` compares every value literally.
   */
  readonly coordinatorIds?: ReadonlyArray<string> | undefined
  /** The dialect messages are decoded in (a trace's `Trace.protocolOf`). Default `reference`. */
  readonly protocol?: Dialect.Name | undefined
}

/**
 * The coordinator ids a replay has paired so far, recorded to observed: one-to-one, for the
 * whole replay (the coordinator numbers requests across all its clients). Make one per replay.
 *
 * @category models
 * @since 0.1.0
 */
export interface Renaming {
  readonly observedOf: Map<unknown, unknown>
  readonly recordedOf: Map<unknown, unknown>
}

/**
 * An empty {@link Renaming}.
 *
 * @category utils
 * @since 0.1.0
 */
export const renaming = (): Renaming => ({ observedOf: new Map(), recordedOf: new Map() })

/**
 * A message as the replay compares it: decoded (and normalized), or, when the codec refuses it,
 * its frames as hex with the codec's reason.
 *
 * @category models
 * @since 0.1.0
 */
export type Decoded =
  | { readonly _tag: "Message"; readonly message: { readonly _tag: string } & Record<string, unknown> }
  | { readonly _tag: "Undecodable"; readonly frames: ReadonlyArray<string>; readonly why: string }

/**
 * Where two messages first differ.
 *
 * @category models
 * @since 0.1.0
 */
export interface Difference {
  /** A path into the decoded message (`reply.generated_tokens[2]`), empty for the whole. */
  readonly path: string
  readonly why: string
}

const codecOf = (dir: Direction, dialect: Dialect.Dialect): Frames.Codec<ReadonlyArray<MessageSpec.Any>> => {
  switch (dir) {
    case "client->coordinator":
    case "coordinator->engine":
      return dialect.client
    case "coordinator->client":
      return dialect.coordinator
    case "engine->coordinator":
      return dialect.engine
  }
}

const hex = (frame: Uint8Array) => Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength).toString("hex")

/**
 * Decodes a message of a direction for comparison.
 *
 * @example
 * ```ts
 * import { TraceMatch } from "@mcore-effect/testkit"
 *
 * TraceMatch.decode("client->coordinator", [Uint8Array.of(0x91, 0x00)])
 * // { _tag: "Message", message: { _tag: "Connect" } }
 * ```
 *
 * @category codecs
 * @since 0.1.0
 */
export const decode = (dir: Direction, frames: ReadonlyArray<Uint8Array>, options?: Options): Decoded => {
  const decoded = codecOf(dir, Dialects.get(options?.protocol ?? "reference")).decode(frames)
  if (Result.isFailure(decoded)) return { _tag: "Undecodable", frames: frames.map(hex), why: decoded.failure.message }
  const message = decoded.success as { readonly _tag: string } & Record<string, unknown>
  if (message._tag !== "EngineReply") return { _tag: "Message", message }
  const reply = { ...(message.reply as Record<string, unknown>) }
  for (const key of options?.ignoreReplyKeys ?? volatileReplyKeys) delete reply[key]
  return { _tag: "Message", message: { ...message, reply } }
}

/**
 * Which recorded messages an observed one may stand for, when replies interleave: a client's
 * messages keep their order per request id, so replies are grouped by id (`request 3`), the
 * handshake by itself (`ConnectAck`), and anything that does not decode together (`undecodable`).
 *
 * @category utils
 * @since 0.1.0
 */
export const groupOf = (decoded: Decoded): string => {
  if (decoded._tag === "Undecodable") return "undecodable"
  const id = decoded.message.requestId
  return typeof id === "number" ? `request ${id}` : decoded.message._tag
}

/**
 * Where an observed message differs from the recorded one, or `undefined` when they match.
 * Coordinator-assigned ids are matched through `ids` (a fresh {@link Renaming} when none is
 * given, so then only within this one message); the pairs a matching message makes are added to
 * it, a message that differs adds none.
 *
 * @example
 * ```ts
 * import { Msgpack } from "@mcore-effect/protocol"
 * import { TraceMatch } from "@mcore-effect/testkit"
 *
 * const abort = (id: number) => TraceMatch.decode("client->coordinator", [Uint8Array.of(0x92, 0x17, id)])
 * TraceMatch.difference(abort(1), abort(2)) // { path: "requestId", why: "expected 1, got 2" }
 *
 * // The coordinator's own id in a reply is an id: 0 recorded, 7 observed, renamed for the replay.
 * const reply = (coordinatorId: number) =>
 *   TraceMatch.decode("coordinator->client", [Msgpack.encode([21, 0]), Msgpack.encode({ request_id: coordinatorId })])
 * const ids = TraceMatch.renaming()
 * TraceMatch.difference(reply(0), reply(7), ids) // undefined; from now on 0 stands for 7
 * TraceMatch.difference(reply(0), reply(8), ids) // { path: "reply.request_id", why: "expected ... 7 ..., got 8" }
 * ```
 *
 * @category utils
 * @since 0.1.0
 */
export const difference = (
  expected: Decoded,
  actual: Decoded,
  ids: Renaming = renaming(),
  options?: Options
): Difference | undefined => {
  if (expected._tag === "Message" && actual._tag === "Message") {
    if (expected.message._tag !== actual.message._tag) {
      return { path: "", why: `expected ${expected.message._tag}, got ${actual.message._tag}` }
    }
    const context: Context = { ids, idPaths: new Set(options?.coordinatorIds ?? coordinatorIdPaths), pairs: [] }
    const found = valueDifference(expected.message, actual.message, "", context)
    if (found === undefined) {
      for (const [recorded, observed] of context.pairs) {
        ids.observedOf.set(recorded, observed)
        ids.recordedOf.set(observed, recorded)
      }
    }
    return found
  }
  if (expected._tag === "Undecodable" && actual._tag === "Undecodable") {
    return valueDifference(expected.frames, actual.frames, "frames", noIds)
  }
  return expected._tag === "Message"
    ? { path: "", why: `expected ${expected.message._tag}, got a message that does not decode (${(actual as { why: string }).why})` }
    : { path: "", why: `expected a message that does not decode, got ${(actual as { message: { _tag: string } }).message._tag}` }
}

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) && !ArrayBuffer.isView(u)

const join = (path: string, key: string) => (path === "" ? key : `${path}.${key}`)

/** What one comparison needs for ids: the replay's renaming, and the pairs this message adds. */
interface Context {
  readonly ids: Renaming
  readonly idPaths: ReadonlySet<string>
  readonly pairs: Array<readonly [unknown, unknown]>
}

const noIds: Context = { ids: renaming(), idPaths: new Set(), pairs: [] }

const isId = (u: unknown): u is number | bigint => typeof u === "number" || typeof u === "bigint"

/** Compares a coordinator-assigned id: the pair must agree with every pair made before, both ways. */
const idDifference = (expected: unknown, actual: unknown, path: string, context: Context): Difference | undefined => {
  if (!isId(expected) || !isId(actual)) return literalDifference(expected, actual, path, context)
  const { ids, pairs } = context
  const observedOf = (recorded: unknown) => ids.observedOf.get(recorded) ?? pairs.find(([r]) => r === recorded)?.[1]
  const recordedOf = (observed: unknown) => ids.recordedOf.get(observed) ?? pairs.find(([, o]) => o === observed)?.[0]
  const observed = observedOf(expected)
  if (observed !== undefined) {
    return observed === actual ? undefined : {
      path,
      why: `expected coordinator id ${show(expected)} (seen as ${show(observed)} earlier in this replay), got ${show(actual)}`
    }
  }
  const recorded = recordedOf(actual)
  if (recorded !== undefined) {
    return {
      path,
      why: `expected coordinator id ${show(expected)}, got ${show(actual)}, which already stands for recorded id ${show(recorded)}`
    }
  }
  pairs.push([expected, actual])
  return undefined
}

const valueDifference = (expected: unknown, actual: unknown, path: string, context: Context): Difference | undefined =>
  context.idPaths.has(path)
    ? idDifference(expected, actual, path, context)
    : literalDifference(expected, actual, path, context)

const literalDifference = (
  expected: unknown,
  actual: unknown,
  path: string,
  context: Context
): Difference | undefined => {
  // Containers are walked (an id may sit anywhere below); leaves compare by value.
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (expected.length !== actual.length) {
      return { path, why: `expected ${expected.length} element(s), got ${actual.length}: ${show(expected)} vs ${show(actual)}` }
    }
    for (let i = 0; i < expected.length; i++) {
      const d = valueDifference(expected[i], actual[i], `${path}[${i}]`, context)
      if (d !== undefined) return d
    }
    return undefined
  } else if (isRecord(expected) && isRecord(actual)) {
    for (const key of Object.keys(expected)) {
      if (!(key in actual)) return { path: join(path, key), why: "missing" }
    }
    for (const key of Object.keys(actual)) {
      if (!(key in expected)) return { path: join(path, key), why: `not expected, got ${show(actual[key])}` }
    }
    for (const key of Object.keys(expected)) {
      const d = valueDifference(expected[key], actual[key], join(path, key), context)
      if (d !== undefined) return d
    }
    return undefined
  } else if (Equal.equals(expected, actual)) {
    return undefined
  }
  return { path, why: `expected ${show(expected)}, got ${show(actual)}` }
}

const show = (value: unknown): string => {
  let text: string
  try {
    text = JSON.stringify(value, (_, v: unknown) =>
      typeof v === "bigint"
        ? `${v}n`
        : ArrayBuffer.isView(v) && !(v instanceof DataView)
        ? Array.from(v as unknown as ArrayLike<number | bigint>, String)
        : v) ?? String(value)
  } catch {
    text = String(value)
  }
  return text.length > 120 ? `${text.slice(0, 117)}...` : text
}
