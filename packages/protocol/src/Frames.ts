/**
 * Encode and decode, derived from the message declarations. A `Codec` covers one direction of
 * traffic (what a client sends, what a coordinator sends back, what engines send): the same
 * header can mean different layouts in different directions (a client's two-frame reply versus
 * an engine's batched one).
 *
 * Decoding never throws, whatever the bytes: it returns a message or a typed `ProtocolError`.
 *
 * @since 0.1.0
 */
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Headers from "./Headers.ts"
import * as MessageSpec from "./MessageSpec.ts"
import * as Msgpack from "./Msgpack.ts"
import {
  ArityMismatch,
  MalformedFrame,
  NotEncodable,
  type ProtocolError,
  protocolError
} from "./ProtocolError.ts"

/**
 * A message's frames, in wire order (identity frames excluded).
 *
 * @since 0.1.0
 */
export type Frames = ReadonlyArray<Uint8Array>

type FieldDecoder = (input: unknown) => Result.Result<unknown, string>

const fieldDecoder = (schema: Schema.Top): FieldDecoder => {
  const decode = Schema.decodeUnknownResult(schema as Schema.Codec<unknown, unknown>)
  return (input) => {
    const result = decode(input)
    return Result.isSuccess(result) ? Result.succeed(result.success) : Result.fail(result.failure.message)
  }
}

interface Compiled {
  readonly spec: MessageSpec.Any
  readonly metadata: ReadonlyArray<readonly [string, FieldDecoder]>
  readonly bodies: ReadonlyArray<readonly [string, FieldDecoder]>
  /** Decoder of one element of the variadic body. */
  readonly variadicElement: FieldDecoder | undefined
}

const compile = (spec: MessageSpec.Any): Compiled => {
  const variadic = spec.variadic
  return {
    spec,
    metadata: spec.metadataKeys.map((key) => [key, fieldDecoder(spec.metadata[key])] as const),
    bodies: spec.bodyKeys
      .filter((key) => key !== variadic?.body)
      .map((key) => [key, fieldDecoder(spec.bodies[key])] as const),
    variadicElement: variadic === undefined
      ? undefined
      : fieldDecoder((spec.bodies[variadic.body] as unknown as Schema.$Array<Schema.Top>).value)
  }
}

/**
 * A message's metadata frame, read without touching its bodies: what a coordinator needs to
 * route a message whose bodies it forwards verbatim.
 *
 * @since 0.1.0
 */
export interface Envelope<S extends MessageSpec.Any = MessageSpec.Any> {
  readonly spec: S
  /** The metadata values, by field name. */
  readonly metadata: Record<string, unknown>
  /** Frame 0 as msgpack decoded it (header first), before the declarations' decoding. */
  readonly raw: ReadonlyArray<unknown>
  readonly frames: Frames
}

/**
 * Encoding and decoding for one direction of traffic.
 *
 * @since 0.1.0
 */
export interface Codec<Specs extends ReadonlyArray<MessageSpec.Any>> {
  readonly specs: Specs
  /** Builds the frames of a message. Fails only for values with no msgpack form. */
  // Method syntax on purpose: a codec of specific messages is usable where any codec is expected.
  encode(message: MessageSpec.Type<Specs[number]>): Result.Result<Array<Uint8Array>, ProtocolError>
  /** Reads a whole message: arity, header, metadata and every body, each checked. */
  decode(frames: Frames): Result.Result<MessageSpec.Type<Specs[number]>, ProtocolError>
  /** Reads the header and metadata frame only (arity checked when it is fixed). */
  decodeEnvelope(frames: Frames): Result.Result<Envelope<Specs[number]>, ProtocolError>
  /** Reads one body of a message whose envelope was read. */
  decodeBody(envelope: Envelope, body: string): Result.Result<unknown, ProtocolError>
}

const malformed = (messageTag: string | null, frame: number, why: string) =>
  Result.fail(protocolError(new MalformedFrame({ messageTag, frame, why })))

const unpack = (frame: Uint8Array | undefined): Result.Result<unknown, string> => {
  if (!(frame instanceof Uint8Array)) return Result.fail("not a byte frame")
  try {
    return Result.succeed(Msgpack.decode(frame))
  } catch (cause) {
    return Result.fail(cause instanceof globalThis.Error ? cause.message : String(cause))
  }
}

/**
 * Derives the codec of one direction from its message declarations.
 *
 * @example
 * ```ts
 * import { Frames, Messages } from "@mcore-effect/protocol"
 * import { Result } from "effect"
 *
 * const frames = Result.getOrThrow(Messages.Client.encode({ _tag: "AbortRequest", requestId: 7 }))
 * Messages.Client.decode(frames) // Result.succeed({ _tag: "AbortRequest", requestId: 7 })
 * ```
 *
 * @since 0.1.0
 */
export const codec = <const Specs extends ReadonlyArray<MessageSpec.Any>>(specs: Specs): Codec<Specs> => {
  const byHeader = new Map<number, Compiled>()
  const byTag = new Map<string, Compiled>()
  for (const spec of specs) {
    if (byHeader.has(spec.header)) throw new globalThis.Error(`two messages with header ${spec.header}`)
    const compiled = compile(spec)
    byHeader.set(spec.header, compiled)
    byTag.set(spec.tag, compiled)
  }

  const encode = (message: { readonly _tag: string }): Result.Result<Array<Uint8Array>, ProtocolError> => {
    const compiled = byTag.get(message._tag)
    if (compiled === undefined) {
      return Result.fail(protocolError(new NotEncodable({ what: "message", path: "_tag", why: `no declaration for ${message._tag}` })))
    }
    const { spec } = compiled
    const values = message as unknown as Record<string, unknown>
    let field = "metadata"
    try {
      const head: Array<unknown> = [spec.header]
      for (const key of spec.metadataKeys) head.push(values[key])
      const frames = [Msgpack.encode(head)]
      for (const key of spec.bodyKeys) {
        field = key
        if (key === spec.variadic?.body) {
          for (const element of values[key] as ReadonlyArray<unknown>) frames.push(Msgpack.encode(element))
        } else {
          frames.push(Msgpack.encode(values[key]))
        }
      }
      return Result.succeed(frames)
    } catch (cause) {
      if (cause instanceof Msgpack.NotEncodableException) {
        return Result.fail(protocolError(new NotEncodable({ what: `${spec.tag} ${field}`, path: cause.path, why: cause.reason })))
      }
      throw cause
    }
  }

  const decodeHead = (
    frames: Frames
  ): Result.Result<{ compiled: Compiled; metadata: Record<string, unknown>; raw: ReadonlyArray<unknown> }, ProtocolError> => {
    if (!Array.isArray(frames) || frames.length === 0) return malformed(null, 0, "a message has at least one frame")
    const head = unpack(frames[0])
    if (Result.isFailure(head)) return malformed(null, 0, head.failure)
    const values = head.success
    if (!Array.isArray(values) || values.length === 0) {
      return malformed(null, 0, "the metadata frame is not an array starting with a header")
    }
    const header = Headers.decode(values[0])
    if (Result.isFailure(header)) return Result.fail(header.failure)
    const compiled = byHeader.get(header.success)
    if (compiled === undefined) {
      const name = Headers.nameOf(header.success)
      return malformed(null, 0, `${name} (${header.success}) is not sent in this direction`)
    }
    const { spec } = compiled
    const arity = MessageSpec.fixedArity(spec)
    if (arity !== undefined && frames.length !== arity) {
      return Result.fail(protocolError(new ArityMismatch({ messageTag: spec.tag, expected: arity, actual: frames.length })))
    }
    if (values.length !== 1 + compiled.metadata.length) {
      return malformed(spec.tag, 0, `expected ${compiled.metadata.length} metadata value(s) after the header, got ${values.length - 1}`)
    }
    const metadata: Record<string, unknown> = {}
    for (let i = 0; i < compiled.metadata.length; i++) {
      const [key, decode] = compiled.metadata[i]!
      const value = decode(values[i + 1])
      if (Result.isFailure(value)) return malformed(spec.tag, 0, `${key}: ${value.failure}`)
      metadata[key] = value.success
    }
    if (spec.variadic !== undefined) {
      const count = (metadata[spec.variadic.countedBy] as ReadonlyArray<unknown>).length
      const expected = 1 + spec.bodyKeys.length - 1 + count
      if (frames.length !== expected) {
        return Result.fail(protocolError(new ArityMismatch({ messageTag: spec.tag, expected, actual: frames.length })))
      }
    }
    return Result.succeed({ compiled, metadata, raw: values })
  }

  const decodeFrame = (tag: string, frames: Frames, index: number, key: string, decode: FieldDecoder) => {
    const raw = unpack(frames[index])
    if (Result.isFailure(raw)) return malformed(tag, index, raw.failure)
    const value = decode(raw.success)
    return Result.isFailure(value)
      ? malformed(tag, index, `${key}: ${value.failure}`)
      : Result.succeed<unknown>(value.success)
  }

  const decodeBodies = (compiled: Compiled, metadata: Record<string, unknown>, frames: Frames) => {
    const { spec } = compiled
    const message: Record<string, unknown> = { _tag: spec.tag, ...metadata }
    let index = 1
    for (const [key, decode] of compiled.bodies) {
      const value = decodeFrame(spec.tag, frames, index++, key, decode)
      if (Result.isFailure(value)) return value
      message[key] = value.success
    }
    if (spec.variadic !== undefined) {
      const elements: Array<unknown> = []
      for (; index < frames.length; index++) {
        const value = decodeFrame(spec.tag, frames, index, spec.variadic.body, compiled.variadicElement!)
        if (Result.isFailure(value)) return value
        elements.push(value.success)
      }
      message[spec.variadic.body] = elements
    }
    return Result.succeed(message)
  }

  const guard = <A>(f: () => Result.Result<A, ProtocolError>): Result.Result<A, ProtocolError> => {
    try {
      return f()
    } catch (cause) {
      // Not expected; but a decoder must never throw at a listener, whatever the bytes.
      return malformed(null, 0, `unexpected: ${cause instanceof globalThis.Error ? cause.message : String(cause)}`)
    }
  }

  return {
    specs,
    encode: encode as Codec<Specs>["encode"],
    decode: ((frames: Frames) =>
      guard(() => {
        const head = decodeHead(frames)
        return Result.isFailure(head)
          ? Result.fail(head.failure)
          : decodeBodies(head.success.compiled, head.success.metadata, frames)
      })) as Codec<Specs>["decode"],
    decodeEnvelope: ((frames: Frames) =>
      guard(() => {
        const head = decodeHead(frames)
        return Result.isFailure(head)
          ? Result.fail(head.failure)
          : Result.succeed({ spec: head.success.compiled.spec, metadata: head.success.metadata, raw: head.success.raw, frames })
      })) as Codec<Specs>["decodeEnvelope"],
    decodeBody: (envelope, body) =>
      guard(() => {
        const compiled = byTag.get(envelope.spec.tag)!
        const index = compiled.bodies.findIndex(([key]) => key === body)
        if (index < 0) return malformed(envelope.spec.tag, 0, `no body named ${body}`)
        return decodeFrame(envelope.spec.tag, envelope.frames, index + 1, body, compiled.bodies[index]![1])
      })
  }
}
