/**
 * How a replay decides that an observed message is the recorded one: both are decoded with the
 * protocol codec of their direction and compared as values (so a float written as float32 on one
 * side and float64 on the other, or a map written in another key order, still matches), after
 * dropping the reply fields that differ from run to run (timings, a random uid).
 *
 * @since 0.1.0
 */
import { type Frames, Messages, type MessageSpec } from "@mcore-effect/protocol"
import * as Equal from "effect/Equal"
import * as Result from "effect/Result"
import type { Direction } from "./Trace.ts"

/**
 * Reply-map keys a test engine (or Megatron) fills from the clock or at random, ignored by
 * default when replies are compared.
 *
 * @since 0.1.0
 */
export const volatileReplyKeys: ReadonlyArray<string> = ["arrival_time", "ttft", "tpot", "events", "uid", "latency"]

/**
 * How messages are compared.
 *
 * @since 0.1.0
 */
export interface Options {
  /** Keys removed from `EngineReply` reply maps on both sides. Default {@link volatileReplyKeys}. */
  readonly ignoreReplyKeys?: ReadonlyArray<string> | undefined
}

/**
 * A message as the replay compares it: decoded (and normalized), or, when the codec refuses it,
 * its frames as hex with the codec's reason.
 *
 * @since 0.1.0
 */
export type Decoded =
  | { readonly _tag: "Message"; readonly message: { readonly _tag: string } & Record<string, unknown> }
  | { readonly _tag: "Undecodable"; readonly frames: ReadonlyArray<string>; readonly why: string }

/**
 * Where two messages first differ.
 *
 * @since 0.1.0
 */
export interface Difference {
  /** A path into the decoded message (`reply.generated_tokens[2]`), empty for the whole. */
  readonly path: string
  readonly why: string
}

const codecOf = (dir: Direction): Frames.Codec<ReadonlyArray<MessageSpec.Any>> => {
  switch (dir) {
    case "client->coordinator":
    case "coordinator->engine":
      return Messages.Client
    case "coordinator->client":
      return Messages.Coordinator
    case "engine->coordinator":
      return Messages.Engine
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
 * @since 0.1.0
 */
export const decode = (dir: Direction, frames: ReadonlyArray<Uint8Array>, options?: Options): Decoded => {
  const decoded = codecOf(dir).decode(frames)
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
 * @since 0.1.0
 */
export const groupOf = (decoded: Decoded): string => {
  if (decoded._tag === "Undecodable") return "undecodable"
  const id = decoded.message.requestId
  return typeof id === "number" ? `request ${id}` : decoded.message._tag
}

/**
 * Where an observed message differs from the recorded one, or `undefined` when they match.
 *
 * @example
 * ```ts
 * import { TraceMatch } from "@mcore-effect/testkit"
 *
 * const abort = (id: number) => TraceMatch.decode("client->coordinator", [Uint8Array.of(0x92, 0x17, id)])
 * TraceMatch.difference(abort(1), abort(2)) // { path: "requestId", why: "expected 1, got 2" }
 * ```
 *
 * @since 0.1.0
 */
export const difference = (expected: Decoded, actual: Decoded): Difference | undefined => {
  if (expected._tag === "Message" && actual._tag === "Message") {
    return expected.message._tag === actual.message._tag
      ? valueDifference(expected.message, actual.message, "")
      : { path: "", why: `expected ${expected.message._tag}, got ${actual.message._tag}` }
  }
  if (expected._tag === "Undecodable" && actual._tag === "Undecodable") return valueDifference(expected.frames, actual.frames, "frames")
  return expected._tag === "Message"
    ? { path: "", why: `expected ${expected.message._tag}, got a message that does not decode (${(actual as { why: string }).why})` }
    : { path: "", why: `expected a message that does not decode, got ${(actual as { message: { _tag: string } }).message._tag}` }
}

const isRecord = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" && u !== null && !Array.isArray(u) && !ArrayBuffer.isView(u)

const join = (path: string, key: string) => (path === "" ? key : `${path}.${key}`)

const valueDifference = (expected: unknown, actual: unknown, path: string): Difference | undefined => {
  if (Equal.equals(expected, actual)) return undefined
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (expected.length !== actual.length) {
      return { path, why: `expected ${expected.length} element(s), got ${actual.length}: ${show(expected)} vs ${show(actual)}` }
    }
    for (let i = 0; i < expected.length; i++) {
      const d = valueDifference(expected[i], actual[i], `${path}[${i}]`)
      if (d !== undefined) return d
    }
  } else if (isRecord(expected) && isRecord(actual)) {
    for (const key of Object.keys(expected)) {
      if (!(key in actual)) return { path: join(path, key), why: "missing" }
    }
    for (const key of Object.keys(actual)) {
      if (!(key in expected)) return { path: join(path, key), why: `not expected, got ${show(actual[key])}` }
    }
    for (const key of Object.keys(expected)) {
      const d = valueDifference(expected[key], actual[key], join(path, key))
      if (d !== undefined) return d
    }
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
