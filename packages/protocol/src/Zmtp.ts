/**
 * ZMTP 3.1, ZeroMQ's wire protocol (RFC 23 for 3.0, RFC 37 for 3.1), as bytes: the greeting, the
 * commands of the NULL mechanism's handshake (`READY`, `ERROR`) and of heartbeats (`PING`,
 * `PONG`), and messages as frames. What a transport of our own (issue 41: ZeroMQ over
 * `node:net`, beside the zeromq.js one) writes to a TCP or Unix socket and reads back from it,
 * with libzmq (and so pyzmq, and Megatron-LM's peers) on the other side.
 *
 * The {@link Parser} takes the byte stream in whatever chunks it arrives and hands out the peer's
 * greeting, its commands and its messages, each whole. It never throws: bad input (a wrong
 * signature, a ZMTP 2.x peer, a mechanism other than NULL, a reserved flag, a frame over the
 * limit, a malformed command) is one {@link Refusal} with
 * its reason, after which the parser takes nothing more: the connection is to be closed, and
 * nothing else is affected.
 *
 * The handshake belongs in libzmq's own order: send the greeting, wait for the peer's, then send
 * READY (and only then messages); `ZmtpConnection` does it so, and says why.
 *
 * @example
 * ```ts
 * import { Zmtp } from "@mcore-effect/protocol"
 *
 * const parser = new Zmtp.Parser({
 *   maxFrameBytes: 1 << 20,
 *   greeting: (peer) => console.log(`ZMTP ${peer.major}.${peer.minor}`),
 *   command: (command) => console.log(command.name),
 *   message: (frames) => console.log(frames.length),
 *   refused: (refusal) => console.log(refusal.reason)
 * })
 * parser.push(Zmtp.greeting(false))
 * parser.push(Zmtp.ready({ "Socket-Type": "ROUTER" }))
 * parser.push(Zmtp.message([new TextEncoder().encode("hello")]))
 * ```
 *
 * @since 0.2.0
 */

/** The greeting's length (RFC 23 §2.3). */
export const GREETING_BYTES = 64

/** Flags of a frame's first byte. */
const MORE = 0x01
const LONG = 0x02
const COMMAND = 0x04

/**
 * Our greeting: signature, version 3.1, the NULL mechanism, `as-server` (which for NULL only
 * says who the peer is; both sides send READY).
 *
 * @since 0.2.0
 */
export const greeting = (asServer: boolean): Uint8Array => {
  const bytes = new Uint8Array(GREETING_BYTES)
  bytes[0] = 0xff
  // Padding: libzmq writes the length of a ZMTP 1.0 identity + 1 here; any value is valid.
  bytes[8] = 0x01
  bytes[9] = 0x7f
  bytes[10] = 3
  bytes[11] = 1
  bytes.set(new TextEncoder().encode("NULL"), 12)
  bytes[32] = asServer ? 1 : 0
  return bytes
}

/**
 * What a peer's greeting says.
 *
 * @since 0.2.0
 */
export interface PeerGreeting {
  readonly major: number
  readonly minor: number
  readonly mechanism: string
  readonly asServer: boolean
}

/**
 * A command from the peer: its name and its data (the bytes after the name).
 *
 * @since 0.2.0
 */
export interface Command {
  readonly name: string
  readonly data: Uint8Array
}

/**
 * Why the parser refused the stream (the connection is to be closed).
 *
 * @since 0.2.0
 */
export type RefusalReason =
  | "signature"
  | "version"
  | "mechanism"
  | "reserved-flags"
  | "frame-too-large"
  | "malformed-command"

/**
 * A refusal: its reason and what was seen.
 *
 * @since 0.2.0
 */
export interface Refusal {
  readonly reason: RefusalReason
  readonly detail: string
}

/** The frame header's bytes at most: flags and an 8-byte size. */
const MAX_HEADER = 9

/** A frame of `length` bytes with `flags`: its header. */
const header = (flags: number, length: number): Uint8Array => {
  if (length <= 0xff) return Uint8Array.of(flags, length)
  const bytes = new Uint8Array(MAX_HEADER)
  bytes[0] = flags | LONG
  new DataView(bytes.buffer).setBigUint64(1, BigInt(length))
  return bytes
}

/**
 * A message as bytes: each frame's header and body, `MORE` on all but the last. An empty list is
 * one empty frame (ZeroMQ has no message of no frames).
 *
 * @since 0.2.0
 */
export const message = (frames: ReadonlyArray<Uint8Array>): Uint8Array => {
  // Every byte is written; a small message comes from Node's pool (no zeroing, no ArrayBuffer
  // of its own).
  const bytes = Buffer.allocUnsafe(messageSize(frames))
  writeMessage(frames, bytes, 0)
  return bytes
}

/**
 * The bytes {@link message} makes of `frames` (of those from `from` on: a router's message
 * without its identity, with no array made for the rest).
 *
 * @since 0.2.0
 */
export const messageSize = (frames: ReadonlyArray<Uint8Array>, from = 0): number => {
  if (frames.length <= from) return 2
  let total = 0
  for (let i = from; i < frames.length; i++) total += (frames[i]!.length <= 0xff ? 2 : MAX_HEADER) + frames[i]!.length
  return total
}

/**
 * Writes {@link message}'s bytes of `frames` (from `from` on) into `target` at `at` (which has
 * {@link messageSize} bytes there), the headers in place (no array per frame); returns where
 * they end.
 *
 * @since 0.2.0
 */
export const writeMessage = (frames: ReadonlyArray<Uint8Array>, target: Buffer, at: number, from = 0): number => {
  if (frames.length <= from) {
    target[at] = 0
    target[at + 1] = 0
    return at + 2
  }
  for (let i = from; i < frames.length; i++) {
    const frame = frames[i]!
    const flags = i < frames.length - 1 ? MORE : 0
    const length = frame.length
    if (length <= 0xff) {
      target[at] = flags
      target[at + 1] = length
      at += 2
    } else {
      target[at] = flags | LONG
      // The 64-bit length as two 32-bit halves: no BigInt per long frame (a prompt's frame is one).
      target.writeUInt32BE(Math.floor(length / 0x1_0000_0000), at + 1)
      target.writeUInt32BE(length >>> 0, at + 5)
      at += MAX_HEADER
    }
    target.set(frame, at)
    at += length
  }
  return at
}

/**
 * A command as bytes: `name` (at most 255 bytes) and its data.
 *
 * @since 0.2.0
 */
export const command = (name: string, data: Uint8Array = new Uint8Array(0)): Uint8Array => {
  const nameBytes = new TextEncoder().encode(name)
  const body = new Uint8Array(1 + nameBytes.length + data.length)
  body[0] = nameBytes.length
  body.set(nameBytes, 1)
  body.set(data, 1 + nameBytes.length)
  const head = header(COMMAND, body.length)
  const bytes = new Uint8Array(head.length + body.length)
  bytes.set(head, 0)
  bytes.set(body, head.length)
  return bytes
}

/**
 * `READY` with `properties` (`Socket-Type`, `Identity`, ...): each a name of at most 255 bytes
 * and a value (text as UTF-8).
 *
 * @since 0.2.0
 */
export const ready = (properties: Readonly<Record<string, string | Uint8Array>>): Uint8Array => {
  const encoder = new TextEncoder()
  const parts: Array<Uint8Array> = []
  for (const [name, value] of Object.entries(properties)) {
    const nameBytes = encoder.encode(name)
    const valueBytes = typeof value === "string" ? encoder.encode(value) : value
    const head = new Uint8Array(1 + nameBytes.length + 4)
    head[0] = nameBytes.length
    head.set(nameBytes, 1)
    new DataView(head.buffer).setUint32(1 + nameBytes.length, valueBytes.length)
    parts.push(head, valueBytes)
  }
  let length = 0
  for (const part of parts) length += part.length
  const data = new Uint8Array(length)
  let at = 0
  for (const part of parts) {
    data.set(part, at)
    at += part.length
  }
  return command("READY", data)
}

/**
 * The properties of a `READY` command's data, by name; `undefined` when the data is malformed.
 * Names are compared as ZMTP says, without regard to case: they are given here as sent.
 *
 * @since 0.2.0
 */
export const readyProperties = (data: Uint8Array): Map<string, Uint8Array> | undefined => {
  const properties = new Map<string, Uint8Array>()
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  const decoder = new TextDecoder()
  let at = 0
  while (at < data.length) {
    const nameLength = data[at]!
    if (nameLength === 0 || at + 1 + nameLength + 4 > data.length) return undefined
    const name = decoder.decode(data.subarray(at + 1, at + 1 + nameLength))
    const valueLength = view.getUint32(at + 1 + nameLength)
    const start = at + 1 + nameLength + 4
    if (start + valueLength > data.length) return undefined
    properties.set(name, data.subarray(start, start + valueLength))
    at = start + valueLength
  }
  return properties
}

/**
 * What the parser hands out.
 *
 * @since 0.2.0
 */
export interface ParserOptions {
  /** The largest frame taken (a longer one is refused before its body is read). */
  readonly maxFrameBytes: number
  readonly greeting: (peer: PeerGreeting) => void
  readonly command: (command: Command) => void
  /** A whole message: its frames, each a copy the receiver owns. */
  readonly message: (frames: Array<Buffer>) => void
  readonly refused: (refusal: Refusal) => void
}

/**
 * The peer's side of a connection, parsed from its bytes as they come: first the greeting, then
 * frames. Each chunk is taken as it is; only a frame split across chunks is gathered (a header
 * waits in a small buffer, a body in one of its own size). No promise and no closure per message.
 *
 * @since 0.2.0
 */
export class Parser {
  private greeted = false
  private stopped = false
  /** Bytes of a greeting or a header that came without the rest of it. */
  private head: Buffer = Buffer.alloc(0)
  /** The frame whose body is being read: its flags, its body and how much of it came. */
  private flags = 0
  private body: Buffer | undefined = undefined
  private filled = 0
  /** The frames of the message being read. */
  private frames: Array<Buffer> = []

  constructor(private readonly options: ParserOptions) {}

  /** True once the stream was refused: nothing more is read. */
  get refused(): boolean {
    return this.stopped
  }

  /** Takes the next bytes of the stream. Never throws. */
  push(chunk: Uint8Array): void {
    if (this.stopped) return
    let bytes: Buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    let at = 0
    while (at < bytes.length && !this.stopped) {
      if (this.body !== undefined) {
        const take = Math.min(this.body.length - this.filled, bytes.length - at)
        bytes.copy(this.body, this.filled, at, at + take)
        this.filled += take
        at += take
        if (this.filled === this.body.length) this.frameDone(this.body)
        continue
      }
      if (this.head.length > 0) {
        // A greeting or header begun in an earlier chunk: gathered, then read from the start.
        bytes = Buffer.concat([this.head, bytes.subarray(at)])
        this.head = Buffer.alloc(0)
        at = 0
      }
      const used = this.greeted ? this.readHeader(bytes, at) : this.readGreeting(bytes, at)
      if (used === 0) {
        this.head = Buffer.from(bytes.subarray(at))
        return
      }
      at += used
    }
  }

  private refuse(reason: RefusalReason, detail: string): number {
    this.stopped = true
    this.frames = []
    this.body = undefined
    this.options.refused({ reason, detail })
    return 1
  }

  /** The greeting at `at`, if all of it is there: its length, or 0 to wait for more. */
  private readGreeting(bytes: Buffer, at: number): number {
    const available = bytes.length - at
    // The signature is judged as soon as its bytes are in: a peer that is not ZMTP is refused
    // without waiting for 64 bytes it may never send.
    if (available >= 1 && bytes[at] !== 0xff) return this.refuse("signature", `the first byte is ${bytes[at]}, not 0xff`)
    if (available >= 10 && (bytes[at + 9]! & 0x01) !== 0x01) {
      return this.refuse("signature", "byte 10 of the signature does not end in 1 (not ZMTP 2.0 or later)")
    }
    if (available >= 11 && bytes[at + 10]! < 3) {
      return this.refuse("version", `the peer speaks ZMTP ${bytes[at + 10]}.x; 3.0 or later is needed`)
    }
    if (available < GREETING_BYTES) return 0
    const mechanismBytes = bytes.subarray(at + 12, at + 32)
    const end = mechanismBytes.indexOf(0)
    const mechanism = mechanismBytes.subarray(0, end < 0 ? 20 : end).toString("latin1")
    if (mechanism !== "NULL") return this.refuse("mechanism", `the peer asks for ${JSON.stringify(mechanism)}; only NULL is spoken`)
    this.greeted = true
    this.options.greeting({ major: bytes[at + 10]!, minor: bytes[at + 11]!, mechanism, asServer: bytes[at + 32] === 1 })
    return GREETING_BYTES
  }

  /** A frame header at `at`, and its body if it is there too: what was used, or 0 to wait. */
  private readHeader(bytes: Buffer, at: number): number {
    const flags = bytes[at]!
    if ((flags & ~(MORE | LONG | COMMAND)) !== 0) return this.refuse("reserved-flags", `flags 0x${flags.toString(16)}`)
    const long = (flags & LONG) !== 0
    const headerLength = long ? MAX_HEADER : 2
    if (bytes.length - at < headerLength) return 0
    let length: number
    if (long) {
      // Two 32-bit halves (no BigInt per long frame); from 2^53 on, past any limit by its high half.
      const high = bytes.readUInt32BE(at + 1)
      if (high >= 0x20_0000) return this.refuse("frame-too-large", `a frame of ${bytes.readBigUInt64BE(at + 1)} bytes`)
      length = high * 0x1_0000_0000 + bytes.readUInt32BE(at + 5)
    } else length = bytes[at + 1]!
    if (length > this.options.maxFrameBytes) {
      return this.refuse("frame-too-large", `a frame of ${length} bytes (the limit is ${this.options.maxFrameBytes})`)
    }
    // A command between the frames of a message is taken as a command, and the message goes on:
    // RFC 23's grammar has none there, but libzmq sends one (a PONG, under load: seen between
    // the frames of a reply during a burst of 100,000 requests while we sent PINGs) and its own
    // decoder takes them anywhere.
    if ((flags & COMMAND) !== 0 && (flags & MORE) !== 0) return this.refuse("malformed-command", "a command frame with MORE set")
    this.flags = flags
    const start = at + headerLength
    if (bytes.length - start >= length) {
      // The whole body is here: copied out, so the chunk is not kept alive by a frame of it.
      const body = Buffer.allocUnsafe(length)
      bytes.copy(body, 0, start, start + length)
      this.frameDone(body)
      return headerLength + length
    }
    this.body = Buffer.allocUnsafe(length)
    this.filled = bytes.length - start
    bytes.copy(this.body, 0, start)
    return bytes.length - at
  }

  private frameDone(body: Buffer): void {
    this.body = undefined
    this.filled = 0
    const flags = this.flags
    if ((flags & COMMAND) !== 0) {
      const nameLength = body[0]
      if (nameLength === undefined || nameLength === 0 || 1 + nameLength > body.length) {
        this.refuse("malformed-command", `a command of ${body.length} bytes with a name of ${nameLength ?? "no"} bytes`)
        return
      }
      this.options.command({ name: body.subarray(1, 1 + nameLength).toString("latin1"), data: body.subarray(1 + nameLength) })
      return
    }
    this.frames.push(body)
    if ((flags & MORE) !== 0) return
    const frames = this.frames
    this.frames = []
    this.options.message(frames)
  }
}

/**
 * Where a ZeroMQ address is, for `node:net`: `tcp://host:port` (a bracketed IPv6 host unwrapped)
 * or `ipc://path` (a Unix socket, as libzmq maps it; `ipc://@name` the abstract namespace).
 * `undefined` for any other form.
 *
 * @since 0.2.0
 */
export const endpointOf = (
  address: string
): { readonly path: string } | { readonly host: string; readonly port: number } | undefined => {
  if (address.startsWith("ipc://")) {
    const path = address.slice("ipc://".length)
    return { path: path.startsWith("@") ? `\0${path.slice(1)}` : path }
  }
  if (!address.startsWith("tcp://")) return undefined
  const rest = address.slice("tcp://".length)
  const colon = rest.lastIndexOf(":")
  if (colon < 0) return undefined
  const host = rest.slice(0, colon)
  return { host: host.startsWith("[") ? host.slice(1, -1) : host, port: Number(rest.slice(colon + 1)) }
}

/**
 * The `Socket-Type` a READY command's data names, or `undefined` when it names none (or is
 * malformed).
 *
 * @since 0.2.0
 */
export const socketTypeOf = (data: Uint8Array): string | undefined => {
  const type = readyProperties(data)?.get("Socket-Type")
  return type === undefined ? undefined : Buffer.from(type.buffer, type.byteOffset, type.byteLength).toString("latin1")
}

/**
 * The PONG that answers a PING command's data (its context, after the 2-byte TTL).
 *
 * @since 0.2.0
 */
export const pongFor = (pingData: Uint8Array): Uint8Array => command("PONG", pingData.subarray(2))
