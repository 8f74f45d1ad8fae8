/**
 * One ZMTP 3.1 connection over a `node:net` socket, either side of it: what a DEALER of ours
 * (the client's `Transport.zmtp`) and a ROUTER of ours ({@link ZmtpRouter}) both do on each of
 * their connections, written once.
 *
 * - **Handshake** in libzmq's order: our greeting, the peer's, our READY (our `Socket-Type`, and
 *   `Identity` when given), the peer's READY, whose `Socket-Type` must be one ours may talk to
 *   (RFC 28). A peer that has not finished it within `handshakeMillis` is dropped. libzmq reset,
 *   now and then, a connection whose READY and first message came before its own greeting went
 *   out (in two loopback runs meant to do 200 handshakes each, at the 9th and at the 23rd); in
 *   this order 200 of 200 held.
 * - **Writes gathered**: what is written in one turn of the event loop is copied into one buffer
 *   (messages encoded straight into it) that goes out in one `socket.write` at the next tick: no
 *   buffer and no stream bookkeeping per message. The buffer is sized by the last turn's bytes,
 *   so a lone request takes a small one from Node's pool; a burst goes out in chunks of at most
 *   {@link CHUNK_LIMIT} bytes, each written as it fills.
 * - **PINGs answered** with the PING's context; when anything last arrived is kept, for a side
 *   that sends heartbeats of its own to tell a silent peer.
 * - **Bad input** (the codec's refusals, a peer of the wrong type, a message before the handshake
 *   ended): told once to `refused`, and the socket destroyed. Never a throw.
 *
 * @since 0.2.0
 */
import type * as Net from "node:net"
import * as Zmtp from "./Zmtp.ts"

const EMPTY = Buffer.alloc(0)
/**
 * The most one buffer of a turn holds: a fuller turn hands each full one to the socket and goes
 * on in a fresh one. One buffer for a whole burst grew to tens of MiB by doubling: copying it
 * and faulting in its fresh pages took 7 µs of a 1.3 KB message's ~30 µs (`--cpu-prof`, 40,000
 * `submit`s in flight against the Python echo coordinator).
 */
const CHUNK_LIMIT = 256 * 1024

/**
 * Settles once libuv has released the handles closed before it was called. A socket's or a
 * server's `close` event comes before that: libuv frees a closed handle in the close phase of
 * its loop turn, and until then `process.getActiveResourcesInfo()` still lists it (seen: a
 * router's listener and three connections listed right after their `close` events). The next
 * turn's timers phase comes after that close phase.
 *
 * @since 0.2.0
 */
export const released = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0))

/**
 * Why a connection was closed for bad input: the codec's refusals (`Zmtp.RefusalReason`), a peer
 * of a socket type ours may not talk to, a message before the handshake ended, a handshake
 * that did not end in time; or, by a router with an allowlist, a peer address outside it
 * (`not-allowed`: closed before anything was read or sent).
 *
 * @since 0.2.0
 */
export type RefusalReason = Zmtp.RefusalReason | "peer-type" | "early-message" | "handshake-timeout" | "not-allowed"

/**
 * What a connection is told and tells.
 *
 * @since 0.2.0
 */
export interface Options {
  /** Which side of the connection we are (the greeting's `as-server`). */
  readonly asServer: boolean
  /** Our `Socket-Type`. */
  readonly socketType: string
  /** Our `Identity`, if we give one. */
  readonly identity?: string | Uint8Array | undefined
  /** The peer socket types ours may talk to. */
  readonly peers: ReadonlySet<string>
  /** The largest frame taken from the peer. */
  readonly maxFrameBytes: number
  /** A peer that has not finished the handshake by then is dropped. */
  readonly handshakeMillis: number
  /** The handshake ended: the peer's READY properties. */
  readonly ready: (properties: ReadonlyMap<string, Uint8Array>) => void
  /** A message from the peer (only once ready). */
  readonly message: (frames: Array<Buffer>) => void
  /** The connection is closed for bad input (said once). */
  readonly refused: (why: string, reason: RefusalReason) => void
}

/**
 * A connection (see the module's documentation). Starts its handshake with {@link start} (a
 * dialed socket once it is connected; an accepted one at once).
 *
 * @since 0.2.0
 */
export class Connection {
  /** This turn's bytes, `outLength` of them written; sent at the next tick. */
  private out: Buffer = EMPTY
  private outLength = 0
  /** The bytes the last turn sent, to size the next turn's buffer. */
  private lastTurn = 0
  private flushing = false
  private isReady = false
  private handshakeTimer: ReturnType<typeof setTimeout> | undefined = undefined
  /** `performance.now()` when anything last arrived from the peer. */
  lastReceived = performance.now()

  constructor(readonly socket: Net.Socket, private readonly options: Options) {
    const parser = new Zmtp.Parser({
      maxFrameBytes: options.maxFrameBytes,
      greeting: () => {
        socket.write(
          Zmtp.ready(
            options.identity === undefined
              ? { "Socket-Type": options.socketType }
              : { "Socket-Type": options.socketType, Identity: options.identity }
          )
        )
      },
      command: (command) => {
        if (command.name === "READY" && !this.isReady) {
          const properties = Zmtp.readyProperties(command.data)
          const type = Zmtp.socketTypeOf(command.data)
          if (properties === undefined || type === undefined || !options.peers.has(type)) {
            return this.refuse("peer-type", `a ${type ?? "socket without a type"} cannot talk to a ${options.socketType}`)
          }
          this.isReady = true
          if (this.handshakeTimer !== undefined) clearTimeout(this.handshakeTimer)
          this.handshakeTimer = undefined
          options.ready(properties)
        } else if (command.name === "PING") {
          this.write(Zmtp.pongFor(command.data))
        }
      },
      message: (frames) => {
        if (!this.isReady) return this.refuse("early-message", "a message before the handshake ended")
        options.message(frames)
      },
      refused: (refusal) => this.refuse(refusal.reason, `ZMTP: ${refusal.reason}: ${refusal.detail}`)
    })
    socket.setNoDelay(true)
    socket.on("data", (chunk: Buffer) => {
      this.lastReceived = performance.now()
      parser.push(chunk)
    })
    socket.on("close", () => {
      if (this.handshakeTimer !== undefined) clearTimeout(this.handshakeTimer)
      this.handshakeTimer = undefined
    })
  }

  /** Sends our greeting and starts the handshake's clock. */
  start(): void {
    this.socket.write(Zmtp.greeting(this.options.asServer))
    this.handshakeTimer = setTimeout(() => this.refuse("handshake-timeout", "the handshake did not end in time"), this.options.handshakeMillis)
  }

  /** Whether the handshake ended. */
  get ready(): boolean {
    return this.isReady
  }

  /** Writes `bytes` with what else is written this turn (one write at the next tick). */
  write(bytes: Uint8Array): void {
    this.reserve(bytes.length)
    this.out.set(bytes, this.outLength)
    this.outLength += bytes.length
  }

  /**
   * Sends a message, encoded into this turn's write (see {@link write}): `frames` from `from` on
   * (a router's message after its identity); `size` if known (`Zmtp.messageSize`).
   */
  send(frames: ReadonlyArray<Uint8Array>, size: number = Zmtp.messageSize(frames), from = 0): void {
    this.reserve(size)
    this.outLength = Zmtp.writeMessage(frames, this.out, this.outLength, from)
  }

  /** Room for `bytes` more in this turn's buffer, and its write at the next tick. */
  private reserve(bytes: number): void {
    if (this.outLength + bytes > this.out.length) {
      // A full chunk goes to the socket now (which may write it at once); the turn goes on in a
      // fresh buffer, so nothing written is copied twice.
      if (this.outLength > 0 && this.outLength + bytes > CHUNK_LIMIT) this.writeOut()
      const needed = this.outLength + bytes
      if (needed > this.out.length) {
        // As large as the last turn's bytes, doubling as it fills, up to a chunk (a larger
        // message takes a buffer of its own size).
        const next = Buffer.allocUnsafe(Math.max(needed, Math.min(Math.max(this.lastTurn, 2 * this.out.length), CHUNK_LIMIT)))
        if (this.outLength > 0) this.out.copy(next, 0, 0, this.outLength)
        this.out = next
      }
    }
    if (!this.flushing) {
      this.flushing = true
      process.nextTick(this.flush)
    }
  }

  /** Bytes written and not yet taken by the kernel: this turn's, and what the socket holds. */
  get unsent(): number {
    return this.outLength + this.socket.writableLength
  }

  /**
   * Hands this turn's bytes to the socket now (before a close, say), which keeps them until
   * written: the next turn takes a new buffer.
   */
  readonly flush = (): void => {
    this.flushing = false
    this.writeOut()
  }

  /** Hands the bytes in the buffer to the socket; the next ones take a new buffer. */
  private writeOut(): void {
    const length = this.outLength
    if (length === 0) return
    const bytes = this.out.subarray(0, length)
    this.out = EMPTY
    this.outLength = 0
    this.lastTurn = length
    if (!this.socket.destroyed) this.socket.write(bytes)
  }

  private refuse(reason: RefusalReason, why: string): void {
    this.options.refused(why, reason)
    this.socket.destroy()
  }
}
