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
import * as Headers from "./Headers.ts"
import { type Compiled, compile, type FieldDecoder } from "./internal/compiledSpec.ts"
import * as DirectArray from "./internal/directArray.ts"
import { isFloatByte, withFloats } from "./internal/wireNumbers.ts"
import * as MessageSpec from "./MessageSpec.ts"
import * as Msgpack from "./Msgpack.ts"
import * as MsgpackScan from "./MsgpackScan.ts"
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
 * @category models
 * @since 0.1.0
 */
export type Frames = ReadonlyArray<Uint8Array>

/**
 * The frame of a nil body, one for every message: a SUBMIT_REQUEST from a client that does not
 * hash, with no media and no offload params, has three, and a view of the encoder's pool per
 * frame cost more than the byte (ZeroMQ copies a frame this small as it is sent). Shared, so
 * never written to: nor is any frame {@link Codec.encode} returns.
 */
const NIL_FRAME: Uint8Array = Uint8Array.of(0xc0)

/**
 * A message's metadata frame, read without touching its bodies: what a coordinator needs to
 * route a message whose bodies it forwards verbatim.
 *
 * @category models
 * @since 0.1.0
 */
export interface Envelope<S extends MessageSpec.Any = MessageSpec.Any> {
  readonly spec: S
  /** The metadata values, by field name. */
  readonly metadata: Record<string, unknown>
  /** Frame 0 as msgpack decoded it (header first), before the declarations' decoding. */
  readonly raw: ReadonlyArray<unknown>
  /**
   * The message's frames, bodies by frame index. With the single-frame framing, frame 0 is the
   * whole message and each body's frame is a view of its bytes inside it (not a copy), so a body
   * is read, forwarded or measured the same way in either framing. Optional bodies a single
   * frame left out ({@link MessageSpec.MessageSpec.optionalTail}) have none: the frames end with
   * the last body present.
   */
  readonly frames: Frames
}

/**
 * How a message's values travel: `multipart`, the header and metadata in frame 0 and one frame
 * per body (the reference protocol, Megatron-LM PR 6497); `single`, the header, metadata and
 * bodies as one msgpack array in one frame (Megatron-LM's releases and main).
 *
 * @category models
 * @since 0.2.0
 */
export type Framing = "multipart" | "single"

/**
 * What a codec is derived with besides its declarations.
 *
 * @category models
 * @since 0.2.0
 */
export interface CodecOptions {
  /** Default `multipart`. */
  readonly framing?: Framing | undefined
  /** The header table the codec reads headers with (default: the reference table). */
  readonly headers?: Headers.Table | undefined
}

/**
 * Encoding and decoding for one direction of traffic.
 *
 * @category models
 * @since 0.1.0
 */
export interface Codec<Specs extends ReadonlyArray<MessageSpec.Any>> {
  readonly specs: Specs
  readonly framing: Framing
  readonly headers: Headers.Table
  /**
   * Builds the frames of a message. Fails only for values with no msgpack form. The frames are
   * read-only: they may share storage (every nil body is the same one-byte frame).
   */
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

/** Frame 0's array: its element count and where its first element starts. */
const arrayOf = (frame0: Uint8Array): { readonly count: number; readonly start: number } | undefined =>
  MsgpackScan.arrayHeader(frame0, 0)

/**
 * Derives the codec of one direction from its message declarations, in a framing and with a
 * header table (by default the reference protocol's: multipart, the IntEnum table).
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
 * @category constructors
 * @since 0.1.0
 */
export const codec = <const Specs extends ReadonlyArray<MessageSpec.Any>>(
  specs: Specs,
  options?: CodecOptions
): Codec<Specs> => {
  const framing: Framing = options?.framing ?? "multipart"
  const table = options?.headers ?? Headers.reference
  const single = framing === "single"
  const byHeader = new Map<number, Compiled>()
  const byTag = new Map<string, Compiled & { readonly wireHeader: number }>()
  for (const spec of specs) {
    const wireHeader = table.values[spec.headerName]
    if (wireHeader === undefined) throw new globalThis.Error(`${spec.tag}: ${spec.headerName} is not in the header table`)
    if (byHeader.has(wireHeader)) throw new globalThis.Error(`two messages with header ${wireHeader}`)
    if (single && spec.variadic !== undefined) throw new globalThis.Error(`${spec.tag}: a single frame has no variadic body`)
    const compiled = compile(spec)
    byHeader.set(wireHeader, compiled)
    byTag.set(spec.tag, { ...compiled, wireHeader })
  }

  /** A value as it is written: remembered bytes as they are, float fields marked. */
  const wireValue = (value: unknown, floats: ReadonlySet<string> | undefined): unknown => {
    // Validated sampling parameters reused request after request are encoded once.
    const bytes = Msgpack.rememberedBytes(value)
    return bytes !== undefined ? new Msgpack.Raw(bytes) : floats === undefined ? value : withFloats(value, floats)
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
      // Arrays made at their final length: one grown by `push` from a literal of one element
      // gets room for 17 (152 bytes), twice per SUBMIT_REQUEST.
      const metadataKeys = spec.metadataKeys
      const bodyKeys = spec.bodyKeys
      // One frame ends before the optional bodies that are absent (after the last present one).
      let bodyCount = bodyKeys.length
      if (single) {
        const required = bodyCount - spec.optionalTail
        while (bodyCount > required && values[bodyKeys[bodyCount - 1]!] === undefined) bodyCount--
      }
      const head: Array<unknown> = new Array(1 + metadataKeys.length + (single ? bodyCount : 0))
      head[0] = compiled.wireHeader
      for (let i = 0; i < metadataKeys.length; i++) {
        head[i + 1] = wireValue(values[metadataKeys[i]!], compiled.floatKeys[i])
      }
      if (single) {
        // One array: the bodies follow the metadata in it, a nil body as nil.
        field = "bodies"
        for (let i = 0; i < bodyCount; i++) {
          const value = values[bodyKeys[i]!]
          head[1 + metadataKeys.length + i] = value === undefined ? null : wireValue(value, compiled.bodyFloatKeys[i])
        }
        return Result.succeed([DirectArray.encode(head) ?? Msgpack.encode(head)])
      }
      const variadic = spec.variadic?.body
      const frames: Array<Uint8Array> = variadic === undefined ? new Array(1 + bodyKeys.length) : []
      frames[0] = DirectArray.encode(head) ?? Msgpack.encode(head)
      for (let i = 0; i < bodyKeys.length; i++) {
        const key = bodyKeys[i]!
        field = key
        if (key === variadic) {
          for (const element of values[key] as ReadonlyArray<unknown>) frames.push(Msgpack.encode(element))
        } else {
          const value = values[key]
          const frame = value === null || value === undefined ? NIL_FRAME : Msgpack.encode(value)
          if (variadic === undefined) frames[i + 1] = frame
          else frames.push(frame)
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

  /** The declaration of a header value read off the wire (first element of frame 0). */
  const compiledFor = (frame0: Uint8Array, first: number, value: unknown): Result.Result<Compiled, ProtocolError> => {
    // 21.0 decodes to 21: a header is an integer on the wire, and a float one is not a header.
    if (isFloatByte(frame0[first])) return malformed(null, 0, "the header should be a msgpack integer, got a float")
    const name = Headers.decodeName(table, value)
    if (Result.isFailure(name)) return Result.fail(name.failure)
    const compiled = byHeader.get(value as number)
    return compiled === undefined
      ? malformed(null, 0, `${name.success} (${value}) is not sent in this direction`)
      : Result.succeed(compiled)
  }

  /** The metadata values decoded and checked, given their raw values and where frame 0's first one starts. */
  const decodeMetadata = (
    compiled: Compiled,
    frame0: Uint8Array,
    values: ReadonlyArray<unknown>,
    start: number
  ): Result.Result<Record<string, unknown>, ProtocolError> => {
    const { spec } = compiled
    const metadata: Record<string, unknown> = {}
    let p = start
    for (let i = 0; i < compiled.metadata.length; i++) {
      const [key, decode] = compiled.metadata[i]!
      const value = decode(values[i + 1])
      if (Result.isFailure(value)) return malformed(spec.tag, 0, `${key}: ${value.failure}`)
      const wireInt = compiled.wireInts[i]
      if (wireInt !== undefined && !wireInt(frame0, p)) {
        return malformed(spec.tag, 0, `${key}: integers on the wire are msgpack integers, got a float`)
      }
      metadata[key] = value.success
      if (i < compiled.lastWireInt) p = MsgpackScan.skip(frame0, p)
    }
    return Result.succeed(metadata)
  }

  interface Head {
    readonly compiled: Compiled
    readonly metadata: Record<string, unknown>
    readonly raw: ReadonlyArray<unknown>
    readonly frames: Frames
  }

  const decodeHeadMultipart = (frames: Frames): Result.Result<Head, ProtocolError> => {
    const head = unpack(frames[0])
    if (Result.isFailure(head)) return malformed(null, 0, head.failure)
    const values = head.success
    if (!Array.isArray(values) || values.length === 0) {
      return malformed(null, 0, "the metadata frame is not an array starting with a header")
    }
    const frame0 = frames[0]!
    // Frame 0 decoded to an array: fixarray, array16 or array32.
    const first = arrayOf(frame0)!.start
    const found = compiledFor(frame0, first, values[0])
    if (Result.isFailure(found)) return Result.fail(found.failure)
    const compiled = found.success
    const { spec } = compiled
    const arity = MessageSpec.fixedArity(spec)
    if (arity !== undefined && frames.length !== arity) {
      return Result.fail(protocolError(new ArityMismatch({ messageTag: spec.tag, expected: arity, actual: frames.length })))
    }
    if (values.length !== 1 + compiled.metadata.length) {
      return malformed(spec.tag, 0, `expected ${compiled.metadata.length} metadata value(s) after the header, got ${values.length - 1}`)
    }
    const metadata = decodeMetadata(compiled, frame0, values, compiled.lastWireInt < 0 ? 0 : MsgpackScan.skip(frame0, first))
    if (Result.isFailure(metadata)) return Result.fail(metadata.failure)
    if (spec.variadic !== undefined) {
      const count = (metadata.success[spec.variadic.countedBy] as ReadonlyArray<unknown>).length
      const expected = 1 + spec.bodyKeys.length - 1 + count
      if (frames.length !== expected) {
        return Result.fail(protocolError(new ArityMismatch({ messageTag: spec.tag, expected, actual: frames.length })))
      }
    }
    return Result.succeed({ compiled, metadata: metadata.success, raw: values, frames })
  }

  /**
   * One frame holding one array: the header and metadata are decoded element by element, and the
   * bodies are only located (views of their bytes), as a multipart message's body frames are.
   */
  const decodeHeadSingle = (frames: Frames): Result.Result<Head, ProtocolError> => {
    const frame0 = frames[0]
    if (!(frame0 instanceof Uint8Array)) return malformed(null, 0, "not a byte frame")
    const array = arrayOf(frame0)
    if (array === undefined || array.count === 0) return malformed(null, 0, "the frame is not an array starting with a header")
    const headerEnd = MsgpackScan.skip(frame0, array.start)
    const header = unpack(frame0.subarray(array.start, headerEnd))
    if (Result.isFailure(header)) return malformed(null, 0, header.failure)
    const found = compiledFor(frame0, array.start, header.success)
    if (Result.isFailure(found)) return Result.fail(found.failure)
    const compiled = found.success
    const { spec } = compiled
    if (frames.length !== 1) {
      return Result.fail(protocolError(new ArityMismatch({ messageTag: spec.tag, expected: 1, actual: frames.length })))
    }
    const metadataCount = compiled.metadata.length
    const most = metadataCount + spec.bodyKeys.length
    const least = most - spec.optionalTail
    if (array.count - 1 < least || array.count - 1 > most) {
      return malformed(
        spec.tag,
        0,
        `expected ${least === most ? most : `${least} to ${most}`} value(s) after the header, got ${array.count - 1}`
      )
    }
    const raw: Array<unknown> = new Array(1 + metadataCount)
    raw[0] = header.success
    // Absent optional bodies have no frame: the envelope's frames end with the last one present.
    const bodyFrames: Array<Uint8Array> = new Array(array.count - metadataCount)
    bodyFrames[0] = frame0
    let p = headerEnd
    for (let i = 0; i < array.count - 1; i++) {
      const end = MsgpackScan.skip(frame0, p)
      if (i < metadataCount) {
        const value = unpack(frame0.subarray(p, end))
        if (Result.isFailure(value)) return malformed(spec.tag, 0, value.failure)
        raw[i + 1] = value.success
      } else {
        bodyFrames[1 + i - metadataCount] = frame0.subarray(p, end)
      }
      p = end
    }
    if (p !== frame0.length) return malformed(spec.tag, 0, `${frame0.length - p} byte(s) after the array`)
    const metadata = decodeMetadata(compiled, frame0, raw, headerEnd)
    if (Result.isFailure(metadata)) return Result.fail(metadata.failure)
    return Result.succeed({ compiled, metadata: metadata.success, raw, frames: bodyFrames })
  }

  const decodeHead = (frames: Frames): Result.Result<Head, ProtocolError> => {
    if (!Array.isArray(frames) || frames.length === 0) return malformed(null, 0, "a message has at least one frame")
    return single ? decodeHeadSingle(frames) : decodeHeadMultipart(frames)
  }

  const decodeFrame = (tag: string, frames: Frames, index: number, key: string, decode: FieldDecoder) => {
    const raw = unpack(frames[index])
    // A single frame's bodies are all in frame 0.
    const at = single ? 0 : index
    if (Result.isFailure(raw)) return malformed(tag, at, raw.failure)
    const value = decode(raw.success)
    return Result.isFailure(value)
      ? malformed(tag, at, `${key}: ${value.failure}`)
      : Result.succeed<unknown>(value.success)
  }

  const decodeBodies = (compiled: Compiled, metadata: Record<string, unknown>, frames: Frames) => {
    const { spec } = compiled
    const message: Record<string, unknown> = { _tag: spec.tag, ...metadata }
    let index = 1
    for (const [key, decode] of compiled.bodies) {
      // An optional body a single frame left out: absent from the message too.
      if (single && index >= frames.length) break
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
      // Not expected (but a scan of bytes that are not msgpack throws); a decoder must never
      // throw at a listener, whatever the bytes.
      if (cause instanceof MsgpackScan.ScanError) return malformed(null, 0, cause.message)
      return malformed(null, 0, `unexpected: ${cause instanceof globalThis.Error ? cause.message : String(cause)}`)
    }
  }

  return {
    specs,
    framing,
    headers: table,
    encode: encode as Codec<Specs>["encode"],
    decode: ((frames: Frames) =>
      guard(() => {
        const head = decodeHead(frames)
        return Result.isFailure(head)
          ? Result.fail(head.failure)
          : decodeBodies(head.success.compiled, head.success.metadata, head.success.frames)
      })) as Codec<Specs>["decode"],
    decodeEnvelope: ((frames: Frames) =>
      guard(() => {
        const head = decodeHead(frames)
        return Result.isFailure(head)
          ? Result.fail(head.failure)
          : Result.succeed({
            spec: head.success.compiled.spec,
            metadata: head.success.metadata,
            raw: head.success.raw,
            frames: head.success.frames
          })
      })) as Codec<Specs>["decodeEnvelope"],
    decodeBody: (envelope, body) =>
      guard(() => {
        const compiled = byTag.get(envelope.spec.tag)!
        const index = compiled.bodies.findIndex(([key]) => key === body)
        if (index < 0) return malformed(envelope.spec.tag, 0, `no body named ${body}`)
        // An optional body the frame left out.
        if (single && index + 1 >= envelope.frames.length) return Result.succeed(undefined)
        return decodeFrame(envelope.spec.tag, envelope.frames, index + 1, body, compiled.bodies[index]![1])
      })
  }
}
