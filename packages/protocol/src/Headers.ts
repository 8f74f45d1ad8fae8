/**
 * The integer header that opens every message's metadata frame.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import { type ProtocolError, protocolError, UnknownHeader } from "./ProtocolError.ts"

/**
 * Which part of the protocol a header belongs to.
 *
 * @category models
 * @since 0.1.0
 */
export type HeaderCategory = "connection" | "request" | "control" | "lifecycle" | "transport"

/**
 * Every header: its wire value and its category, the one table the rest is derived from.
 *
 * @category constants
 * @since 0.1.0
 */
export const table = {
  CONNECT: { value: 0, category: "connection" },
  CONNECT_ACK: { value: 1, category: "connection" },
  SUBMIT_REQUEST: { value: 20, category: "request" },
  ENGINE_REPLY: { value: 21, category: "request" },
  ENGINE_REPLY_PARTIAL: { value: 22, category: "request" },
  ABORT_REQUEST: { value: 23, category: "request" },
  SUBMIT_REQUEST_WITH_KV: { value: 24, category: "request" },
  RELEASE_KV: { value: 25, category: "request" },
  SEND_KV: { value: 26, category: "request" },
  PAUSE: { value: 40, category: "control" },
  UNPAUSE: { value: 41, category: "control" },
  SUSPEND: { value: 42, category: "control" },
  RESUME: { value: 43, category: "control" },
  SET_GENERATION_EPOCH: { value: 44, category: "control" },
  STOP: { value: 45, category: "control" },
  START_CUDA_PROFILER: { value: 46, category: "control" },
  STOP_CUDA_PROFILER: { value: 47, category: "control" },
  DISCONNECT: { value: 60, category: "lifecycle" },
  SHUTDOWN: { value: 61, category: "lifecycle" },
  TP_BROADCAST: { value: 80, category: "transport" },
  KV_HANDOFF_COMPLETE: { value: 81, category: "transport" }
} as const satisfies Record<string, { readonly value: number; readonly category: HeaderCategory }>

/**
 * Headers of Megatron-LM core_v0.16 that no later ref has: the engines' acknowledgements, which
 * that coordinator relays to every client (`[6, engine_identity]`, `[11, engine_identity]` on its
 * wire). They are not in the reference protocol: {@link reference} and {@link decode} leave them
 * out. Their values here are keys only (after the control block, where the reference table has
 * no header), so that a message declaration and the test coordinator can name them the way they
 * name every other header; core_v0.16's own table gives their wire values.
 *
 * @category constants
 * @since 0.2.0
 */
export const releaseOnly = {
  PAUSE_ACK: { value: 48, category: "control" },
  STOP_ACK: { value: 49, category: "control" }
} as const satisfies Record<string, { readonly value: number; readonly category: HeaderCategory }>

type Every = typeof table & typeof releaseOnly

const every: Every = { ...table, ...releaseOnly }

/**
 * A header's name, as in the Python `Headers` enum (of the reference protocol, or
 * {@link releaseOnly}).
 *
 * @category models
 * @since 0.1.0
 */
export type HeaderName = keyof Every

/**
 * A header's value in the reference numbering (for {@link releaseOnly}'s headers, their key).
 *
 * @category models
 * @since 0.1.0
 */
export type Header = Every[HeaderName]["value"]

/**
 * Header values by name: `Headers.values.SUBMIT_REQUEST === 20`.
 *
 * @example
 * ```ts
 * import { Headers } from "@mcore-effect/protocol"
 *
 * Headers.values.ABORT_REQUEST // 23
 * ```
 *
 * @category constants
 * @since 0.1.0
 */
export const values = Object.fromEntries(
  [...Object.entries(table), ...Object.entries(releaseOnly)].map(([name, h]) => [name, h.value])
) as {
  readonly [K in HeaderName]: Every[K]["value"]
}

const names = new Map<number, HeaderName>(
  [...Object.entries(table), ...Object.entries(releaseOnly)].map(([name, h]) => [h.value, name as HeaderName])
)

/** The reference protocol's own values ({@link releaseOnly}'s keys are not among them). */
const referenceValues: ReadonlySet<number> = new Set(Object.values(table).map((h) => h.value))

/**
 * The name of a header value.
 *
 * @category getters
 * @since 0.1.0
 */
export const nameOf = (header: Header): HeaderName => names.get(header)!

/**
 * The category of a header value.
 *
 * @category getters
 * @since 0.1.0
 */
export const categoryOf = (header: Header): HeaderCategory => every[nameOf(header)].category

/**
 * Reads a header value off the wire: a known header, or an `UnknownHeader` error.
 *
 * @example
 * ```ts
 * import { Headers } from "@mcore-effect/protocol"
 *
 * Headers.decode(40) // Result.succeed(40), PAUSE
 * Headers.decode(99) // Result.fail(ProtocolError(UnknownHeader { value: 99 }))
 * ```
 *
 * @category decoding
 * @since 0.1.0
 */
export const decode = (value: unknown): Result.Result<Header, ProtocolError> =>
  typeof value === "number" && referenceValues.has(value)
    ? Result.succeed(value as Header)
    : Result.fail(protocolError(new UnknownHeader({ value })))

/**
 * One protocol's header table: the headers it has and their wire values. Megatron-LM numbered
 * its headers with `enum.auto()` up to core_v0.18 (CONNECT = 1, ...) and with the table above
 * from core_v0.19 on, and each release has a subset; a header a coordinator's table lacks kills
 * it (`Headers(value)` raises), so a codec reads and writes headers through its dialect's table.
 *
 * @category models
 * @since 0.2.0
 */
export interface Table {
  /** Header values by name, for the headers this table has. */
  readonly values: { readonly [K in HeaderName]?: number }
  /** Names by wire value. */
  readonly names: ReadonlyMap<number, HeaderName>
}

/**
 * Builds a table from the values of the headers it has (each value used once).
 *
 * @example
 * ```ts
 * import { Headers } from "@mcore-effect/protocol"
 *
 * const t = Headers.makeTable({ CONNECT: 1, CONNECT_ACK: 2 })
 * t.names.get(2) // "CONNECT_ACK"
 * ```
 *
 * @category constructors
 * @since 0.2.0
 */
export const makeTable = (values: { readonly [K in HeaderName]?: number }): Table => {
  const byValue = new Map<number, HeaderName>()
  for (const [name, value] of Object.entries(values) as Array<[HeaderName, number]>) {
    if (byValue.has(value)) throw new globalThis.Error(`header value ${value} used twice`)
    byValue.set(value, name)
  }
  return { values, names: byValue }
}

/**
 * The reference table ({@link table}): every header at its IntEnum value.
 *
 * @category constants
 * @since 0.2.0
 */
export const reference: Table = makeTable(
  Object.fromEntries(Object.entries(table).map(([name, h]) => [name, h.value])) as Table["values"]
)

/**
 * Reads a header value off the wire with a table: its name, or an `UnknownHeader` error.
 *
 * @example
 * ```ts
 * import { Headers } from "@mcore-effect/protocol"
 *
 * Headers.decodeName(Headers.reference, 21) // Result.succeed("ENGINE_REPLY")
 * ```
 *
 * @category decoding
 * @since 0.2.0
 */
export const decodeName = (t: Table, value: unknown): Result.Result<HeaderName, ProtocolError> => {
  const name = typeof value === "number" ? t.names.get(value) : undefined
  return name !== undefined ? Result.succeed(name) : Result.fail(protocolError(new UnknownHeader({ value })))
}
